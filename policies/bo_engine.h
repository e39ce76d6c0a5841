/*
 * bo_engine: the one decision loop that the shim (real clock) and the
 * simulator (virtual clock) both drive.  It ties the schedules, responsive
 * pacing and the AIMD window to one destination's state and one call's
 * state.  Pure: the caller passes the time and the generator, and does the
 * waiting itself; the shim guards a bo_dest with its mutex.
 *
 * A call goes (blocking; a non-blocking driver, the multi hooks or the
 * simulator, does the same from its own loop, following call.phase):
 *     bo_call_begin(&call, now);
 *     for (;;) {
 *         while (bo_dest_admit(&dest, cfg, &call, now, &until) != BO_ADMIT_GO)
 *             wait until `until` (or a completion on dest wakes you);
 *         ... perform one attempt, classify it into `outcome` ...
 *         if (bo_dest_complete(&dest, cfg, &call, outcome, retry_after_ns,
 *                              now, rng, &until) == BO_NEXT_DONE)
 *             break;                       // return this attempt's result
 *         sleep until `until`;
 *     }
 *
 * BO_ADMIT_GIVE_UP comes for a retry when the call's time budget ran out
 * while it waited (return the last result), and for a first attempt only
 * when the program's own deadline (bo_call_set_deadline) passed before it
 * was admitted (return the program's timeout error).
 */
#ifndef BO_ENGINE_H
#define BO_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "bo_adaptive.h"
#include "bo_budget.h"
#include "bo_classify.h"
#include "bo_config.h"
#include "bo_ratelimit.h"
#include "bo_responsive.h"
#include "bo_rng.h"
#include "bo_schedule.h"
#include "bo_time.h"
#include "bo_window.h"

/* One destination's shared state (one per scheme/host/port: per process, or per user on
 * the host with BACKOFF_SHARE=host, where it lives in a shared file: no pointers). */
typedef struct bo_dest {
    bo_window window;        /* aimd window; in-flight count for every policy */
    bo_responsive pacing;    /* responsive policy */
    int64_t next_send_ns;    /* earliest next admission (pacing, Retry-After, probes) */
    unsigned probe_failures; /* loss signals in a row while probing */
    bo_quota quota;          /* the server's advertised quota (rate-limit headers) */
    bo_budget budget;        /* retries against first attempts (BACKOFF_RETRY_BUDGET) */
    bo_adaptive adaptive;    /* aws-adaptive: the SDKs' client rate limiter */
} bo_dest;

/*
 * Where a call stands: the call state machine that every hook (a libcurl
 * transfer, easy or multi, and connect()) and the simulator drive.  The
 * engine makes every transition; the driver only asks for the phase and
 * does what it says (seek admission, run the attempt, wait until until_ns):
 *
 *   ADMIT --bo_dest_admit GO--> ATTEMPT --bo_dest_complete RETRY--> WAIT
 *     ^  \--WAIT (until_ns)       |  \--bo_dest_cancel--> ADMIT       |
 *     |   \--GIVE_UP--> DONE      \--bo_dest_complete DONE--> DONE     |
 *     \------------------------- bo_call_due (now >= until_ns) -------/
 *
 * A driver that stops before DONE (the program cancelled, a signal, its
 * deadline while it waited) drops the call where it stands: the last
 * result, if any, is the one that stands.
 */
typedef enum bo_phase {
    BO_PHASE_ADMIT = 0, /* seeking admission; ask again at until_ns */
    BO_PHASE_ATTEMPT,   /* an admitted attempt runs */
    BO_PHASE_WAIT,      /* the last attempt is to be retried no sooner than until_ns */
    BO_PHASE_DONE       /* the result that stands is the last attempt's (none: gave up first) */
} bo_phase;

/* One call's state (one curl_easy_perform, one multi transfer, one connect()). */
typedef struct bo_call {
    bo_phase phase;
    int64_t until_ns;        /* ADMIT and WAIT: when to act next */
    bool have_result;        /* an attempt has completed: its result can stand */
    bool retryable;          /* that result is a failure the engine would retry
                                (what the program's own retry continues) */
    int64_t start_ns;
    unsigned attempts;       /* attempts started */
    unsigned throttles;      /* attempts answered with a throttle signal (aimd's RTO doubles) */
    bo_schedule schedule;
    bo_ticket ticket;        /* of the attempt in flight */
    int64_t deadline_ns;     /* the program's own deadline (INT64_MAX: none) */
    int64_t attempt_ns;      /* when the last admitted attempt started */
    unsigned inherited;      /* attempts the program's earlier calls of the same
                                logical request spent (bo_call_continue) */
    uint64_t fleet_lease;    /* the caller's: the fleet lease (BACKOFF_SHARE=redis) of the
                                attempt in flight; 0: none.  The engine never reads it. */
    uint64_t fleet_ticket;   /* the caller's: its place in the fleet's queue while the
                                fleet says wait; 0: none.  The engine never reads it. */
    int64_t fleet_from_ns;   /* the caller's: when the fleet began to hold the attempt
                                back (the start of its bo_call_wait_limit); 0: it does
                                not.  The engine never reads it. */
    bool quota_noted;        /* the attempt's answer went through bo_dest_note_quota */
    int64_t quota_hold_ns;   /* set by a bo_dest_admit that said WAIT: the instant the
                                server's quota holds the attempt until (0: it does not),
                                for a caller that learns the program's deadline only
                                then (a poll's): a hold past it is not waited for */
    bool past_bounds;        /* the same for a DONE because the server asked for a wait
                                past the bounds (a Retry-After past the cap, a quota's
                                reset past bo_call_wait_limit): its answer stands */
    bool budget_retry;       /* the retry to come draws on the destination's retry budget
                                (its failure was not a 429): bo_dest_admit holds it until
                                the budget allows one */
    bool budget_waiting;     /* the last BO_ADMIT_WAIT was the retry budget's alone (others
                                may go meanwhile: the simulator's queue serves them) */
    bool budget_delayed;     /* the retry budget held a retry of the call back: it waited,
                                or (budget_ended) the call ended (the counters' budget
                                delays); false until then (bo_call_begin) */
    bool budget_ended;       /* a lone call's retry the budget did not fund: its failure
                                was handed back (bo_budget_lone) */
} bo_call;

typedef enum bo_admit {
    BO_ADMIT_GO = 0,         /* start the attempt now (in-flight counted) */
    BO_ADMIT_WAIT,           /* ask again at *until_ns, or when woken */
    BO_ADMIT_GIVE_UP         /* time budget spent: return the last result */
} bo_admit;

typedef enum bo_next {
    BO_NEXT_DONE = 0,        /* return this attempt's result */
    BO_NEXT_RETRY            /* wait until *until_ns, then seek admission again */
} bo_next;

void bo_dest_init(bo_dest *d, const bo_config *cfg, int64_t now_ns);

/*
 * The state holds what the engine itself can leave there at now_ns: its
 * window (bo_window_sane), the destination's next admission at most
 * BACKOFF_CAP_MS ahead (every hold is bounded by it), responsive's gap
 * within the cap, aws-adaptive's bucket finite.  A state read from the
 * host-wide file, which every process of the user can write, is checked
 * before it is obeyed, and starts fresh when it fails (shim/dest/share.c).
 */
bool bo_dest_sane(const bo_dest *d, const bo_config *cfg, int64_t now_ns);
void bo_call_begin(bo_call *c, int64_t now_ns);

/*
 * WAIT whose time has come (now_ns >= until_ns) becomes ADMIT: true.
 * False in any other case (still waiting, or not waiting at all).
 */
bool bo_call_due(bo_call *c, int64_t now_ns);

/* The call's driver gives it up where it stands, before an admission (its
 * bound came while it waited): DONE, the last result, if any, stands. */
void bo_call_give_up(bo_call *c);

/* The call ended on a failure the engine would have retried: the program's
 * own next try continues it (bo_budget.h's logical request). */
bool bo_call_failed_retryable(const bo_call *c);

/*
 * The program's own deadline for the whole call (CURLOPT_TIMEOUT, a
 * socket's send timeout), absolute on the caller's clock; INT64_MAX: none.
 * It combines with max_time_ms (the sooner wins) and, unlike max_time_ms,
 * bounds the first attempt's admission too: the program's result is never
 * later than its deadline.  A retry is granted only when its wait ends
 * before the deadline with room left for an attempt (the last attempt's
 * duration, at least BO_MIN_ATTEMPT_MS).
 */
#define BO_MIN_ATTEMPT_MS 10
void bo_call_set_deadline(bo_call *c, int64_t deadline_ns);

/*
 * The call is the program's own retry of logical request l (bo_budget.h):
 * it continues l's attempts, throttles and start time, so max_attempts and
 * max_time_ms bound the whole logical request.  Its first attempt is still
 * admitted as a first attempt is (the program's own attempt goes out); the
 * shim adds a retry only while the logical request has attempts and time
 * left.  Call after bo_call_begin.
 */
void bo_call_continue(bo_call *c, const bo_lineage *l);

/* What the logical request of call c, keyed `key`, has spent (for bo_lineage_failed). */
void bo_call_lineage(const bo_call *c, uint64_t key, bo_lineage *out);

/* Time the call may still spend from now_ns (INT64_MAX: unbounded, 0: none). */
int64_t bo_call_remaining_ns(const bo_config *cfg, const bo_call *c, int64_t now_ns);

/*
 * The bound of a wait the program did not ask for (a quota's reset, a
 * Retry-After, the fleet's word, an instant read from state others wrote)
 * that begins at from_ns: it may end no later than BACKOFF_CAP_MS after
 * from_ns, nor past the call's deadline (the program's own, max_time_ms from
 * the call's start).  One that would end later is not waited for at all
 * (not waited for up to the bound, then again): a prediction lets the
 * request go now, a refusal stands.
 */
int64_t bo_call_wait_limit(const bo_config *cfg, const bo_call *c, int64_t from_ns);

/*
 * May the call start an attempt now?  On BO_ADMIT_WAIT, *until_ns is the
 * time to ask again (a completion on the destination may free a slot
 * sooner; the shim waits on a condition variable with that deadline).
 * When only a window slot is missing, *until_ns is now + 1 s: completions
 * are what frees slots, the deadline only bounds a missed wake-up.  For a
 * retry *until_ns never lies past the call's max_time_ms deadline.  An
 * instant of the destination's state past BACKOFF_CAP_MS holds nothing
 * back, nor does a quota's reset past bo_call_wait_limit: a first attempt
 * goes as the program sent it, a retry gives up at once (BO_ADMIT_GIVE_UP).
 * A retry the destination's retry budget does not allow waits until it does
 * (or a completion adds credit), or goes as the destination's one probe
 * when nothing is in flight (bo_budget.h); the call's bounds end the wait
 * (BO_ADMIT_GIVE_UP), never the budget.
 */
bo_admit bo_dest_admit(bo_dest *d, const bo_config *cfg, bo_call *c,
                       int64_t now_ns, int64_t *until_ns);

/*
 * A first attempt that may not wait (the program's call is non-blocking:
 * an event loop's request never waits inside the call that sends it)
 * starts now, counted in flight like any other, whatever the window, the
 * pace or the quota would have said: true.  False for a retry or a call
 * not seeking admission (those wait their turn outside the program's
 * call).  Its answer teaches the destination as any other does.
 */
bool bo_dest_admit_now(bo_dest *d, const bo_config *cfg, bo_call *c, int64_t now_ns);

/*
 * The time the destination's pace alone (the learnt rate, a hold, the
 * adaptive token; not the window's room, not the quota) lets its next
 * attempt go: now_ns when it does now.  An event loop's write is held back
 * until then (no window holds a loop's concurrent requests back).
 */
int64_t bo_dest_pace_ns(bo_dest *d, const bo_config *cfg, int64_t now_ns);

/*
 * The attempt admitted last ended with `outcome`.  Updates the destination
 * (window, pacing, budget) and decides: done, or retry no sooner than
 * *until_ns.  retry_after_ns is the server's Retry-After (< 0: none); it is
 * the least wait.  One past BACKOFF_CAP_MS or the call's deadline, or a
 * quota whose reset lies past bo_call_wait_limit, is not waited for: DONE,
 * the server's answer stands.  Enforces max_attempts and max_time_ms: the
 * last attempt's result is returned as is.  The retry budget never ends a
 * call here: it says when the retry is admitted.
 */
bo_next bo_dest_complete(bo_dest *d, const bo_config *cfg, bo_call *c,
                         bo_outcome outcome, int64_t retry_after_ns,
                         int64_t now_ns, bo_rng *rng, int64_t *until_ns);

/*
 * The attempt admitted last was answered with rate-limit headers giving
 * `rl` (call before bo_dest_complete).  With BACKOFF_RATELIMIT_HEADERS on
 * and no Retry-After on the same answer (Retry-After wins), later
 * admissions are paced from the quota: spent at the program's pace while
 * requests remain, then held until the reset; spread evenly until the
 * reset while others are known to share it (bo_ratelimit.h).  `outcome`:
 * the answer's; one answered 429 spent no quota, and a throttle is judged
 * (bo_quota_note_throttle) before its own headers are noted.
 */
void bo_dest_note_quota(bo_dest *d, const bo_config *cfg, bo_call *c,
                        const bo_rl_quota *rl, bo_outcome outcome, int64_t retry_after_ns,
                        int64_t now_ns, bo_rng *rng);

/*
 * Forget an admitted attempt that never ran (the caller failed before
 * sending): frees its slot, changes nothing else.
 */
void bo_dest_cancel(bo_dest *d, bo_call *c);

#endif
