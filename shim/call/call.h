/*
 * call: the call room.  A hook's call (a libcurl transfer, a connect())
 * runs as the engine's state machine (bo_call, policies/bo_engine.h); this
 * room does for every hook family what surrounds the engine:
 *
 *   admit.c     admission through the destination's lock, and the waits
 *               on the program's behalf (its deadline, its cancel, its
 *               signals), the fleet's word included;
 *   complete.c  an attempt's completion (the engine's next step, the
 *               counts, the trace row, the verbose line), a cancel;
 *   lineage.c   the program's own retries, recognised as one logical
 *               request (policies/bo_budget.h);
 *   report.c    the trace file, the verbose lines, the stats at exit.
 *
 * It depends on the destination room (dest/) and core/ only.
 */
#ifndef BO_CALL_H
#define BO_CALL_H

#include <stdbool.h>
#include <stdint.h>

#include "bo_classify.h"
#include "bo_engine.h"
#include "bo_ratelimit.h"
#include "dest/dest.h"

/* What one finished attempt tells the completion. */
typedef struct bo_run_result {
    bo_outcome outcome;
    int64_t retry_after_ns;     /* < 0: none */
    int status;                 /* HTTP status or 0 */
    int code;                   /* CURLcode, or errno for connect() */
    const bo_rl_headers *ratelimit; /* the answer's rate-limit headers, NULL: none */
} bo_run_result;

/*
 * What a wait on behalf of a program's call honours, checked at least every
 * BO_WAIT_SLICE_NS:
 *   tick           the program's cancel: called with ud while no lock is
 *                  held; non-zero ends the wait with BO_WAIT_ABORTED (NULL:
 *                  nothing to ask);
 *   interruptible  a signal whose handler was installed without SA_RESTART
 *                  ends the wait with EINTR (as it would have interrupted the
 *                  program's own blocking call); with SA_RESTART, or when
 *                  false, the wait resumes with the time that is left.
 * A handler that longjmps out of a wait leaves no shim lock held: signals
 * are held back while a condition variable is waited on, and delivered with
 * the lock released.
 */
typedef struct bo_waiter {
    int (*tick)(void *ud);
    void *ud;
    bool interruptible;
} bo_waiter;

#define BO_WAIT_SLICE_NS (100 * 1000000LL) /* 100 ms */
#define BO_WAIT_ABORTED (-2)

/*
 * The admission step, the one place a hook asks for admission: take the
 * destination's lock (the host-wide slot's under BACKOFF_SHARE=host), ask
 * the engine once at now_ns, take the attempt's lease or reap dead
 * processes' leases, unlock.  Returns
 *   BO_STEP_GO       the attempt is counted in flight (*inflight: the count
 *                    including it);
 *   BO_STEP_WAIT     ask again at *until_ns: the engine's time, but no more
 *                    than max_wait_ns ahead (a completion on the
 *                    destination may free a slot sooner, and nothing here
 *                    wakes the caller for it) and 0.1 ms ahead when the
 *                    engine names no time;
 *   BO_STEP_GIVE_UP  the call's time budget ran out (counted as given up).
 * With a fleet (BACKOFF_SHARE=redis) a host-wide GO also asks the fleet,
 * without waiting: WAIT (the host-wide admission undone) while the fleet
 * holds the attempt back.  The multi hooks call it once per pass of the
 * program's loop (BO_POLL_ADMIT_NS); the blocking admissions below loop on
 * its host-wide part and then wait for the fleet as a blocking call may.
 */
typedef enum bo_step { BO_STEP_GIVE_UP = -1, BO_STEP_GO = 0, BO_STEP_WAIT = 1 } bo_step;
#define BO_POLL_ADMIT_NS (20 * 1000000LL)
bo_step bo_run_admit_step(bo_block *b, bo_call *call, int64_t now_ns, unsigned *inflight,
                          int64_t max_wait_ns, int64_t *until_ns);

/*
 * A first attempt that may not wait (bo_dest_admit_now: the program's call
 * is non-blocking) starts now, its lease taken: true.  False when it cannot
 * be counted (a retry; the host-wide slot has no entry for this process):
 * the caller then sends it as the program wrote it, outside any call.  The
 * fleet is not asked (its queue is a wait).  _pace_ns: bo_dest_pace_ns.
 */
bool bo_run_admit_now(bo_block *b, bo_call *call, int64_t now_ns, unsigned *inflight);
int64_t bo_run_pace_ns(bo_block *b, int64_t now_ns);

/*
 * Wait until the destination admits an attempt of `call` (now_ns: the
 * current time, 0 to read the clock), on behalf of a program that may
 * cancel (w; NULL: nothing to honour).  Returns 0 (go: the attempt is in
 * flight, *inflight the count including it), -1 (the call's time budget
 * ran out: return the last result), EINTR or BO_WAIT_ABORTED (the wait
 * was interrupted or cancelled: nothing is in flight, return at once).
 */
int bo_run_admit_wait(bo_block *b, bo_call *call, int64_t now_ns, unsigned *inflight,
                      const bo_waiter *w);

/*
 * The admission of a call that a signal may interrupt (connect()): its
 * waits are timerfd slices, so a signal whose handler lacks SA_RESTART
 * ends them, and none runs past deadline_ns (the call's own bound, first
 * attempt included; INT64_MAX for none).  Completions on the destination
 * are noticed within 10 ms.  Returns 0 to go; -1 when the budget or
 * deadline_ns ran out: for a retry the call is counted as given up and the
 * last result stands, for a first attempt nothing is counted and the
 * caller makes its one attempt outside the window; or EINTR (nothing
 * admitted, nothing counted).
 */
int bo_run_admit_intr(bo_block *b, bo_call *call, int64_t deadline_ns, unsigned *inflight);

/* Wait until the monotonic until_ns as the waiter says, for a call to b;
 * counts wait_ms (the process's, and b's host-wide).  Returns 0 when the
 * time came, EINTR or BO_WAIT_ABORTED. */
int bo_run_wait(bo_block *b, int64_t until_ns, const bo_waiter *w);

/* Wait until the monotonic until_ns on behalf of the program's blocking
 * call: a signal whose handler was installed without SA_RESTART ends it
 * with EINTR, as it would have interrupted the program's own call; with
 * SA_RESTART the wait resumes with the time that is left. */
int bo_run_wait_until(bo_block *b, int64_t until_ns);

/* Report the admitted attempt's result.  Returns true when the caller must
 * retry, after waiting until *until_ns (the caller waits after cleaning
 * up).  Writes the trace row, the verbose line and the counts. */
bool bo_run_complete(bo_block *b, bo_call *call, const bo_run_result *r, uint64_t call_id,
                     const char *what, unsigned inflight, int64_t *until_ns);

/* The call ends without another attempt although the engine allowed one
 * (the upload could not be rewound, no clean socket): count it as failed. */
void bo_run_abandoned(bo_block *b);

/* The program ended a call whose attempt was admitted but will never
 * complete (a transfer removed from its multi handle mid-flight): its slot
 * is freed and the call counted as failed. */
void bo_run_cancel(bo_block *b, bo_call *call);

/* Next call number of the process (trace column `call`; 0 when not tracing). */
uint64_t bo_run_call_id(void);

/*
 * The program's own retries (bo_budget.h's logical requests), one table per
 * process.  bo_lineage_call_begin: when `key` (method and URL, or a
 * connect() destination) failed retryably within BO_LINEAGE_WINDOW_NS,
 * the call continues that logical request (bo_call_continue) and true is
 * returned, and the request's record copied to *found (NULL: not wanted).
 * bo_lineage_call_end: the call ended; failed_retryable records it for the
 * program's next try, with the Idempotency-Key it was sent with (idem, ""
 * or NULL: none) and its body's fingerprint, anything else forgets the
 * key.  Both cost one atomic load while no logical request is pending
 * (bo_lineage_pending: a call needs its key at begin only then).
 */
bool bo_lineage_call_begin(uint64_t key, bo_call *call, bo_lineage *found);
void bo_lineage_call_end(uint64_t key, const bo_call *call, bool failed_retryable,
                         const char *idem, uint64_t idem_body);
bool bo_lineage_pending(void);

/*
 * The start and the end of a hook family's call (a libcurl transfer, a
 * connect(), an HTTP request), the same for every family.
 * bo_run_call_start begins the engine's call at now and, while the process
 * remembers some logical request (bo_lineage_pending), makes this call's
 * key (key_of(ctx): method and URL, a connect's destination; 0 when there
 * is none) and continues the logical request it names: true, and *prev
 * filled when not NULL.  bo_run_call_finish remembers a call that ended on
 * a failure the engine would retry for the program's next try (its key
 * made then if it was not), with the Idempotency-Key it was sent with, and
 * forgets the logical request of one that did not.
 */
typedef uint64_t (*bo_run_key_fn)(const void *ctx);
static inline bool bo_run_call_start(bo_call *call, int64_t now, uint64_t *key,
                                     bo_run_key_fn key_of, const void *ctx, bo_lineage *prev)
{
    bo_call_begin(call, now);
    *key = bo_lineage_pending() ? key_of(ctx) : 0;
    return bo_lineage_call_begin(*key, call, prev);
}
static inline void bo_run_call_finish(const bo_call *call, uint64_t *key, bo_run_key_fn key_of,
                                      const void *ctx, bool failed_retryable, const char *idem,
                                      uint64_t idem_body)
{
    if (*key == 0 && failed_retryable)
        *key = key_of(ctx);
    bo_lineage_call_end(*key, call, failed_retryable, idem, idem_body);
}

/* Fork (the one list in fork/fork.c): the lineage table's lock (a leaf); in
 * the child the process's waiting time starts from zero. */
void bo_lineage_prepare_fork(void);
void bo_lineage_parent_fork(void);
void bo_lineage_child_fork(void);
void bo_report_child_fork(void);

#endif
