/*
 * bo_shim: what the modules of libbackoff.so share with each other (never
 * exported: the objects are built with -fvisibility=hidden and the version
 * script exports only the hooks).
 *
 *   shim_state.c   configuration, clock, per-thread PRNG, re-entry flag,
 *                  a destination block's state, the shared wait/complete
 *                  loop, stats, trace, verbose lines, fork handlers;
 *   shim_table.c   the destination table: sharded hash, references, LRU
 *                  eviction of idle blocks;
 *   shim_share.c   the table's host-wide backend (BACKOFF_SHARE=host): a
 *                  shared-memory file of destination slots (shim_share.h);
 *   shim_curl.c    the libcurl easy hooks, the per-handle records and one
 *                  transfer's call state machine (bo_curl_xfer_*);
 *   shim_multi.c   the libcurl multi hooks, driving that machine from the
 *                  program's own loop;
 *   shim_connect.c the connect() hook;
 *   shim_dl.c      the dlopen/dlmopen/dlsym/dlvsym hooks and the registry
 *                  of the libcurl copies loaded in the process;
 *   shim_fork.c    the one set of fork handlers, calling each module's
 *                  below in a stated order.
 *
 * Policy decisions are never made here: they come from policies/.
 */
#ifndef BO_SHIM_H
#define BO_SHIM_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "bo_classify.h"
#include "bo_config.h"
#include "bo_engine.h"

#define BO_EXPORT __attribute__((visibility("default")))

/*
 * connect(): the bound of one call, retries and waits included, when
 * BACKOFF_MAX_TIME_MS is unset (0); the socket's own SO_SNDTIMEO,
 * TCP_USER_TIMEOUT and TCP_SYNCNT bound it further (shim_connect.c).
 */
#define BO_CONNECT_MAX_TIME_MS 30000

#define BO_DEST_KEY_LEN 300

/*
 * One destination's state block.  It lives while someone holds a reference
 * (bo_shim_dest_get/_ref, released by bo_shim_dest_put): a handle record
 * pointing at it, a connect() in progress.  An unreferenced block stays in
 * the table until it is evicted (least recently used first) and freed.
 */
typedef struct bo_shim_dest {
    char key[BO_DEST_KEY_LEN];  /* "http://host:port", "tcp://addr:port", "unix:path" */
    /* the table's (shim_table.c), guarded by the block's shard lock; refs
     * is atomic, and changes to or from 0 happen under that lock */
    struct bo_shim_dest *hnext;              /* hash chain */
    struct bo_shim_dest *lru_prev, *lru_next; /* idle list, only while refs == 0 */
    uint64_t hash;
    unsigned refs;
    pthread_mutex_t mu;
    pthread_cond_t cv;          /* CLOCK_MONOTONIC; broadcast on every completion */
    bo_dest d;                  /* guarded by mu */
    double cwnd_max;            /* largest cwnd seen (stats), guarded by mu */
    /* BACKOFF_STATS counters, guarded by mu (no shared atomics on the hot path) */
    uint64_t calls, attempts, retries, throttled, failed, gave_up;
    /* connect() hook: set (atomically, never cleared) once a connect to this
     * destination succeeded in this process: a refusal then means
     * "restarting", not "nothing here" (bo_connect_errno_retryable). */
    int alive;
    /* BACKOFF_SHARE=host: the host-wide slot the block is attached to
     * (shim_share.c), whose bo_dest and lock then stand in for d and mu
     * while the block is referenced (the counters above stay this
     * process's); NULL: the state is this process's own.  It stays attached
     * while idle (its entry idle in the slot) and is checked again on the
     * move of refs from zero (bo_share_reuse), where the table sets it; it
     * is cleared only while refs is zero (the block freed, exit, a fork
     * child), so a holder sees it stable. */
    struct bo_share_slot *shared;
    unsigned share_idx;         /* this process's entry in the slot */
    uint32_t share_gen;         /* the slot's generation when attached */
} bo_shim_dest;

/* What one finished attempt tells the shared loop. */
typedef struct bo_shim_result {
    bo_outcome outcome;
    int64_t retry_after_ns;     /* < 0: none */
    int status;                 /* HTTP status or 0 */
    int code;                   /* CURLcode, or errno for connect() */
    const bo_rl_headers *ratelimit; /* the answer's rate-limit headers, NULL: none */
} bo_shim_result;

/* The configuration, loaded once; NULL while pass-through (bad config). */
const bo_config *bo_shim_config(void);

/* Monotonic clock in ns. */
int64_t bo_shim_now_ns(void);

/* The calling thread's generator, seeded on first use. */
bo_rng *bo_shim_rng(void);

/*
 * The shim's thread-locals on its hot paths use the initial-exec model: an
 * access is one %fs-relative load instead of a call to __tls_get_addr
 * (the general- and local-dynamic models of -fPIC code).  The library is
 * loaded at start-up (LD_PRELOAD, the wrapper), so its thread-locals are
 * in the static TLS block; the whole block is some 350 bytes, within the
 * 512 bytes glibc keeps for such a library loaded later by dlopen.  The
 * declaration every file sees must carry the model: a file that sees a
 * plain `extern __thread` still calls __tls_get_addr.
 */
#define BO_TLS __thread __attribute__((tls_model("initial-exec")))

/* Thread-local re-entry flag: true while the shim is inside itself. */
extern BO_TLS int bo_shim_busy;

/*
 * A fork-safe once: fn runs at most once, under the shim's init lock, which
 * the fork handlers hold across fork() so that a child never inherits an
 * initialization half done.  (pthread_once is not enough: ThreadSanitizer's
 * replaces glibc's and does not notice a fork, so a child forked while
 * another thread was inside one waited forever.)  *done is set when fn
 * returns; fn must not call pthread_atfork (glibc holds its atfork lock
 * while the prepare handlers run).
 */
void bo_shim_once(int *done, void (*fn)(void));

/*
 * The destination block for `key`, created on first use, with a reference
 * the caller releases with bo_shim_dest_put; NULL when the key is too long
 * or allocation fails (the caller then passes through).  Every destination
 * is managed: the table has no fixed size, only idle blocks are evicted.
 */
bo_shim_dest *bo_shim_dest_get(const char *key);

/* Another reference to a block the caller already holds one on (NULL: NULL). */
bo_shim_dest *bo_shim_dest_ref(bo_shim_dest *sd);

/* Release a reference (NULL: nothing). */
void bo_shim_dest_put(bo_shim_dest *sd);

/* Calls fn on every block in the table, each under its shard lock. */
void bo_shim_table_foreach(void (*fn)(bo_shim_dest *sd, void *ctx), void *ctx);

/* At exit: the idle blocks let their host-wide entries go, each slot's
 * lock waited for until until_ns (CLOCK_MONOTONIC) at most (shim_table.c). */
void bo_shim_table_exit(int64_t until_ns);

/*
 * The table's side of fork (shim_table.c): prepare holds every shard lock
 * and then every block's mutex; the child re-initialises them, calling
 * child_block on each block first.
 */
void bo_shim_table_prepare_fork(void);
void bo_shim_table_parent_fork(void);
void bo_shim_table_child_fork(void (*child_block)(bo_shim_dest *sd));

/*
 * A new block's state (shim_state.c): mutex, condvar, bo_dest.  retire
 * folds an evicted block's counters into the process totals, under its
 * mutex, just before it is freed.
 */
void bo_shim_dest_init_block(bo_shim_dest *sd, const bo_config *cfg);
void bo_shim_dest_retire(bo_shim_dest *sd);

/* Next call number of the process (trace column `call`; 0 when not tracing). */
uint64_t bo_shim_next_call_id(void);

/*
 * Wait until the destination admits an attempt of `call` (now_ns: the
 * current time, 0 to read the clock).  Returns 0 to go
 * (the attempt is counted in flight; *inflight gets the count including
 * it), or -1 when the call's time budget ran out (return the last result).
 */
int bo_shim_admit(bo_shim_dest *sd, bo_call *call, int64_t now_ns, unsigned *inflight);

/*
 * What a wait on behalf of a program's call honours (issue 20), checked at
 * least every BO_WAIT_SLICE_NS:
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
typedef struct bo_shim_waiter {
    int (*tick)(void *ud);
    void *ud;
    bool interruptible;
} bo_shim_waiter;

#define BO_WAIT_SLICE_NS (100 * 1000000LL) /* 100 ms */
#define BO_WAIT_ABORTED (-2)

/*
 * bo_shim_admit with a waiter (NULL: as bo_shim_admit).  Returns 0 (go),
 * -1 (time budget spent), EINTR or BO_WAIT_ABORTED (the wait for admission
 * was interrupted or cancelled: nothing is in flight, return at once).
 */
int bo_shim_admit_wait(bo_shim_dest *sd, bo_call *call, int64_t now_ns, unsigned *inflight,
                       const bo_shim_waiter *w);

/*
 * Wait until the monotonic until_ns as the waiter says; counts wait_ms.
 * Returns 0 when the time came, EINTR or BO_WAIT_ABORTED.
 */
int bo_shim_wait(int64_t until_ns, const bo_shim_waiter *w);

/*
 * Report the admitted attempt's result.  Returns true when the caller must
 * retry, after waiting until *until_ns (the caller waits with
 * bo_shim_wait_until after cleaning up).  Writes the trace row, the
 * verbose line and the counters.
 */
bool bo_shim_complete(bo_shim_dest *sd, bo_call *call, const bo_shim_result *r,
                      uint64_t call_id, const char *what, unsigned inflight,
                      int64_t *until_ns);

/*
 * The call ends without another attempt although the engine allowed one
 * (the upload could not be rewound, no clean socket): count it as failed.
 */
void bo_shim_call_abandoned(bo_shim_dest *sd);

/*
 * Wait until the monotonic deadline until_ns on behalf of the program's
 * call; counts wait_ms.  Returns 0 when the deadline came, or EINTR when a
 * signal whose handler was installed without SA_RESTART interrupted the wait,
 * as it would have interrupted the program's own blocking call.  A handler
 * installed with SA_RESTART does not end the wait: it resumes with the time
 * that is left.  (The wait is a blocking read() of a timerfd, which the
 * kernel restarts or interrupts by exactly those rules.)
 */
int bo_shim_wait_until(int64_t until_ns);

/*
 * bo_shim_admit for a call that a signal may interrupt (the connect() hook):
 * the waits are bo_shim_wait_until's, so a signal whose handler lacks
 * SA_RESTART ends them, and none runs past deadline_ns (the call's own
 * bound, first attempt included; INT64_MAX for none).  Completions on the
 * destination are noticed within ADMIT_POLL_NS (the timerfd wait cannot
 * also wait on the condition variable).  Returns 0 to go (as
 * bo_shim_admit); -1 when the budget or deadline_ns ran out: for a retry
 * the call is counted as given up and the last result stands, for a first
 * attempt nothing is counted and the caller makes its one attempt outside
 * the window; or EINTR (nothing admitted, nothing counted).
 */
int bo_shim_admit_intr(bo_shim_dest *sd, bo_call *call, int64_t deadline_ns,
                       unsigned *inflight);

/*
 * The program's own retries (bo_budget.h's logical requests), one table per
 * process.  bo_shim_lineage_begin: when `key` (method and URL, or a
 * connect() destination) failed retryably within BO_LINEAGE_WINDOW_NS,
 * the call continues that logical request (bo_call_continue) and true is
 * returned.  bo_shim_lineage_end: the call ended; failed_retryable records
 * it for the program's next try, anything else forgets the key.  Both cost
 * one atomic load while no logical request is pending.
 */
bool bo_shim_lineage_begin(uint64_t key, bo_call *call);
/* Some logical request is remembered (a call needs its key at begin only then). */
bool bo_shim_lineage_active(void);
void bo_shim_lineage_end(uint64_t key, const bo_call *call, bool failed_retryable);

/*
 * The admission step, the one place a hook asks for admission: take the
 * destination's lock (the host-wide slot's under BACKOFF_SHARE=host), ask
 * the engine once at now_ns, take the attempt's lease or reap dead
 * processes' leases, unlock.  Returns
 *   BO_STEP_GO       the attempt is counted in flight (*inflight as
 *                    bo_shim_admit);
 *   BO_STEP_WAIT     ask again at *until_ns: the engine's time, but no more
 *                    than max_wait_ns ahead (a completion on the
 *                    destination may free a slot sooner, and nothing here
 *                    wakes the caller for it) and 0.1 ms ahead when the
 *                    engine names no time;
 *   BO_STEP_GIVE_UP  the call's time budget ran out (counted as given up,
 *                    as bo_shim_admit).
 * With BACKOFF_SHARE=redis a host-wide GO also asks the fleet, without
 * waiting: WAIT (the host-wide admission undone) while the fleet holds the
 * attempt back.
 * The multi hooks call it once per pass of the program's loop
 * (BO_POLL_ADMIT_NS); bo_shim_admit_intr loops on its host-wide part and
 * bo_shim_admit_wait on its body under a lock that it keeps for its
 * condition wait, and both then wait for the fleet as a blocking call may.
 */
typedef enum bo_shim_step { BO_STEP_GIVE_UP = -1, BO_STEP_GO = 0, BO_STEP_WAIT = 1 } bo_shim_step;
#define BO_POLL_ADMIT_NS (20 * 1000000LL)
bo_shim_step bo_shim_admit_step(bo_shim_dest *sd, bo_call *call, int64_t now_ns,
                                unsigned *inflight, int64_t max_wait_ns, int64_t *until_ns);

/*
 * The program ended a call whose attempt was admitted but will never
 * complete (a transfer removed from its multi handle mid-flight): its slot
 * is freed and the call counted as failed.
 */
void bo_shim_call_cancel(bo_shim_dest *sd, bo_call *call);

/*
 * One libcurl transfer's call, as a state machine driven step by step:
 * curl_easy_perform (shim_curl.c) drives it in blocking mode, the multi
 * hooks (shim_multi.c) from the program's own loop.
 *
 *     bo_curl_xfer_begin          once, before the first admission;
 *     bo_shim_admit_wait or bo_shim_admit_step  until admitted;
 *     bo_curl_xfer_attempt        just before the attempt starts;
 *     ... the attempt runs (perform, or the multi handle's loop) ...
 *     bo_curl_xfer_done           classifies and completes: retry at
 *                                 *until_ns (upload rewound), or done;
 *     bo_curl_xfer_end            once: commits the held bytes of the
 *                                 attempt that stands, returns its code.
 */
struct handle_rec;
typedef struct bo_curl_xfer {
    struct handle_rec *rec;
    bo_shim_dest *sd;
    bo_call call;
    uint64_t id;
    unsigned inflight;
    int64_t deadline;        /* the program's CURLOPT_TIMEOUT, absolute; INT64_MAX none */
    long start_pos;          /* of a FILE * upload, -1: none */
    bool rewindable;
    uint64_t key;            /* the logical request (method and URL), 0: none */
} bo_curl_xfer;

/* The record of `h` made by slot's libcurl when its calls are managed, else NULL. */
struct handle_rec *bo_curl_managed_rec(int slot, void *h);
void bo_curl_xfer_begin(bo_curl_xfer *x, struct handle_rec *rec);
void bo_curl_xfer_attempt(bo_curl_xfer *x);
bool bo_curl_xfer_done(bo_curl_xfer *x, int code, int64_t *until_ns);
int bo_curl_xfer_end(bo_curl_xfer *x, int code);
/* The call ends without its result (cancelled): nothing held reaches the program. */
void bo_curl_xfer_drop(bo_curl_xfer *x);
/* The program's progress callback, asked while the call waits: non-zero cancels. */
int bo_curl_xfer_tick(bo_curl_xfer *x);

/* The slot of the libcurl an exported hook's caller (return address) means. */
int bo_curl_caller_slot(const void *ret);
/* The slot every caller means when the global scope has a libcurl, or -1. */
int bo_curl_global_caller_slot(void);

void bo_shim_multi_prepare_fork(void);
void bo_shim_multi_parent_fork(void);
void bo_shim_multi_child_fork(void);

/* Fork handlers of each module, called by shim_fork.c in its stated order. */
void bo_shim_state_prepare_fork(void);
void bo_shim_state_parent_fork(void);
void bo_shim_state_child_fork(void);
void bo_shim_curl_prepare_fork(void);
void bo_shim_curl_parent_fork(void);
void bo_shim_curl_child_fork(void);
void bo_shim_dl_prepare_fork(void);
void bo_shim_dl_parent_fork(void);
void bo_shim_dl_child_fork(void);

/* ---- libcurl copies (registry: shim_dl.c; wrappers: shim_curl.c) ---- */

/* The libcurl functions each copy is bound for; the hooked ones first. */
enum {
    BO_CURL_PERFORM,
    BO_CURL_SETOPT,
    BO_CURL_RESET,
    BO_CURL_DUPHANDLE,
    BO_CURL_CLEANUP,
    /* the multi interface (shim_multi.c) */
    BO_CURL_M_ADD,
    BO_CURL_M_REMOVE,
    BO_CURL_M_PERFORM,
    BO_CURL_M_INFO_READ,
    BO_CURL_M_WAIT,
    BO_CURL_M_POLL,
    BO_CURL_M_TIMEOUT,
    BO_CURL_M_SOCKET_ACTION,
    BO_CURL_M_SETOPT,
    BO_CURL_M_CLEANUP,
    BO_CURL_NHOOKED,
    BO_CURL_M_FIRST = BO_CURL_M_ADD,
    BO_CURL_GETINFO = BO_CURL_NHOOKED,
    BO_CURL_URL,
    BO_CURL_URL_SET,
    BO_CURL_URL_GET,
    BO_CURL_URL_CLEANUP,
    BO_CURL_FREE,
    BO_CURL_NFNS
};
extern const char *const bo_curl_fn_names[BO_CURL_NFNS];

/* libcurl copies per process; beyond this, calls into others pass through. */
#define BO_MAX_CURLS 8

/* The slot of the libcurl the global scope binds after the shim, or -1. */
int bo_curl_slot_global(void);

/*
 * The slot of the libcurl a caller (a return address) of the exported hooks
 * means when the global scope has none: its own object's dependency, else
 * the first libcurl loaded; -1 when none is loaded.
 */
int bo_curl_slot_for_caller(const void *ret);

/*
 * dl_iterate_phdr for the library's own walks (shim_dl.c): every one is
 * made under a lock the fork handlers hold across fork().  glibc (2.36)
 * re-initialises the dynamic loader's dl_load_lock in a fork child but not
 * dl_load_write_lock, which dl_iterate_phdr holds during its walk: a child
 * forked while one of our threads walked inherited it held and hung at its
 * first walk, ours or the program's own (C++ exceptions unwind through
 * dl_iterate_phdr).  Callbacks may walk again (the lock is recursive) and
 * may take g_slot_lock, nothing else of ours.
 */
struct dl_phdr_info;
int bo_dl_iterate(int (*cb)(struct dl_phdr_info *info, size_t size, void *data), void *data);

/* shim_curl.c: bind slot's real functions (under the registry's lock, once). */
void bo_curl_bind(int slot, void *const fn[BO_CURL_NFNS]);

/* shim_curl.c: the wrapper of hooked function fn bound to slot's libcurl. */
void *bo_curl_wrapper(int slot, int fn);

/* shim_multi.c: bind slot's real multi functions; its wrappers. */
void bo_multi_bind(int slot, void *const fn[BO_CURL_NFNS]);
void *bo_multi_wrapper(int slot, int fn);
/* curl_easy_cleanup(h) is about to free h: forget it in every multi record. */
void bo_multi_easy_gone(void *h);

#endif
