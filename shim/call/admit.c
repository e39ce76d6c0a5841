/*
 * admit.c: admission through the destination's lock, and the waits on the
 * program's behalf (call.h).  Every admission is one step under the
 * destination's lock (admit_locked); the blocking forms loop on it, the
 * multi hooks call it once per pass of the program's loop.  With a fleet
 * (BACKOFF_SHARE=redis) a host-wide GO is then asked of the fleet, with no
 * lock held.
 */
#include "call/call.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "bo_time.h"
#include "call/report.h"
#include "core/core.h"
#include "dest/metrics_file.h"

/* Longest single condition wait: admission is asked again at least this often. */
#define ADMIT_RECHECK_NS (200 * BO_NS_PER_MS)
/* Waits up to this long yield the CPU instead of sleeping (timer slack is 50 us). */
#define SPIN_WAIT_NS (100 * 1000LL)
#define SPIN_PURE_NS (5 * 1000LL)
#define SPIN_MAX_YIELDS 10000
/* Longest single wait of bo_run_admit_intr: how late it may notice a completion. */
#define ADMIT_POLL_NS (10 * BO_NS_PER_MS)

static struct timespec to_timespec(int64_t ns)
{
    struct timespec ts;
    ts.tv_sec = (time_t)(ns / BO_NS_PER_S);
    ts.tv_nsec = (long)(ns % BO_NS_PER_S);
    return ts;
}

/* ---- the fleet's word after a host-wide GO ------------------------------- */

/* With no lock held: give back a host-wide admission that will not run now. */
static void fleet_undo(bo_block *b, bo_call *call)
{
    bo_dest *d = bo_block_lock(b);
    bo_block_release(b, d, call);
    bo_block_unlock(b);
}

/* The call's attempt is no longer held back by the fleet: its place in the
 * fleet's queue, if any, is left, and its wait's start forgotten. */
static void fleet_leave(bo_block *b, bo_call *call)
{
    call->fleet_from_ns = 0;
    bo_block_fleet_leave(b, call);
}

/*
 * One ask of the fleet at now: true when the fleet says wait until
 * *until_ns, within the bound of a wait the program did not ask for
 * (bo_call_wait_limit from the fleet's first word: BACKOFF_CAP_MS, the
 * call's deadline) and deadline_ns, the call keeping its place in the
 * fleet's queue; false when the attempt goes now, with the fleet's lease
 * (GO) or without one (no answer from Redis; or a wait, or waits in a row,
 * that would end past the bound, or one that ends no later than now: keys
 * written by anyone with access to them never hold a host longer, whatever
 * they say), the place left.
 */
static bool fleet_ask(bo_block *b, bo_call *call, int64_t now, int64_t deadline_ns,
                      int64_t *until_ns)
{
    *until_ns = now;
    if (bo_block_fleet_admit(b, call, now, until_ns) == BO_FLEET_WAIT) {
        if (call->fleet_from_ns == 0)
            call->fleet_from_ns = now;
        int64_t limit = bo_call_wait_limit(bo_core_config(), call, call->fleet_from_ns);
        if (deadline_ns < limit)
            limit = deadline_ns;
        if (now < *until_ns && *until_ns < limit)
            return true; /* a time not ahead is no wait: a value that wrapped */
    }
    fleet_leave(b, call); /* none held after a GO */
    return false;
}

/*
 * After a host-wide GO, with no lock held (BACKOFF_SHARE=redis, aimd): the
 * fleet's admission.  The host-wide slot stays taken while the fleet says
 * wait (the attempt is this host's next); a fleet wait that would pass the
 * call's deadline or BACKOFF_CAP_MS, or no answer from Redis, lets the
 * attempt go without a fleet lease: never worse than alone.  Returns 0, or
 * the wait's EINTR or BO_WAIT_ABORTED once the admission is undone.
 */
static int fleet_admit(bo_block *b, bo_call *call, const bo_waiter *w, int64_t deadline_ns)
{
    static const bo_waiter plain = {.tick = NULL, .ud = NULL, .interruptible = false};
    int64_t until;

    if (!bo_block_fleet_on())
        return 0;
    while (fleet_ask(b, call, bo_core_now_ns(), deadline_ns, &until)) {
        int rc = bo_run_wait(b, until, w != NULL ? w : &plain);
        if (rc != 0) {
            fleet_leave(b, call);
            fleet_undo(b, call);
            return rc;
        }
    }
    return 0;
}

/* The non-blocking form (the multi interface): 1 and *until_ns when the
 * fleet says wait, the host-wide admission undone.  The call's waits in a
 * row are bounded as one (fleet_from_ns), however many passes of the
 * program's loop ask. */
static int fleet_try_admit(bo_block *b, bo_call *call, int64_t now, int64_t *until_ns)
{
    int64_t until;

    if (!bo_block_fleet_on() || !fleet_ask(b, call, now, INT64_MAX, &until))
        return 0;
    fleet_undo(b, call);
    if (until > now + BO_POLL_ADMIT_NS)
        until = now + BO_POLL_ADMIT_NS;
    *until_ns = until;
    return 1;
}

/*
 * With the program's signals held back by the shim (`program_mask`: the
 * mask the program itself had): is one of those now pending, and not
 * blocked by the program, handled with a handler installed without
 * SA_RESTART (so that it would have interrupted the program's own blocking
 * call)?
 */
static bool held_signal_interrupts(const sigset_t *program_mask)
{
    sigset_t pending;
    sigpending(&pending);
    for (int sig = 1; sig < NSIG; sig++) {
        struct sigaction sa;
        if (sigismember(&pending, sig) != 1 || sigismember(program_mask, sig) == 1 ||
            sigaction(sig, NULL, &sa) != 0)
            continue;
        if (sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN && !(sa.sa_flags & SA_RESTART))
            return true;
    }
    return false;
}

/* Ask the waiter's program whether to go on: BO_WAIT_ABORTED when not. */
static int tick(const bo_waiter *w)
{
    if (w != NULL && w->tick != NULL && w->tick(w->ud) != 0)
        return BO_WAIT_ABORTED;
    return 0;
}

/* Under the lock: the call gave up waiting (its time budget or deadline ran out). */
static void count_gave_up(bo_block *b, const bo_call *call, int64_t now)
{
    bo_tally gave_up = {.what = BO_TALLY_END | BO_TALLY_FAILED | BO_TALLY_GAVE_UP,
                        .cause = BO_CAUSE_NONE};
    if (call->budget_delayed)
        gave_up.what |= BO_TALLY_BUDGET;
    bo_block_count(b, gave_up, now);
}

/*
 * The admission step, under the destination's lock: ask the engine once at
 * now, then take the attempt's lease (GO), count the call as given up
 * (GIVE_UP), or hand back dead processes' leases (WAIT: *until is the
 * engine's time to ask again, <= now when it names none).  Every admission
 * is this step: bo_run_admit_step takes the lock around it, and the
 * blocking wait of bo_run_admit_wait keeps the lock between the step and
 * its condition wait, so that no completion is missed in between.
 */
static inline __attribute__((always_inline)) bo_step
admit_locked(bo_block *b, bo_dest *d, bo_call *call, int64_t now, unsigned *inflight,
             int64_t *until)
{
    bo_admit a = bo_dest_admit(d, bo_core_config(), call, now, until);
    if (a == BO_ADMIT_GO) {
        bo_block_admitted(b);
        *inflight = d->window.inflight;
        return BO_STEP_GO;
    }
    if (a == BO_ADMIT_GIVE_UP) {
        count_gave_up(b, call, now);
        return BO_STEP_GIVE_UP;
    }
    bo_block_waiting(b, now);
    return BO_STEP_WAIT;
}

/*
 * The destination's host-wide slot has no entry for this process yet
 * (bo_block_share_waits): no attempt may start, since none would count in
 * the window all the processes share.  The call waits as for a slot of the
 * window and gives up as admission would: at the program's deadline, or,
 * once it has made attempts, at the end of its time budget.
 */
static bool share_wait_expired(bo_block *b, bo_call *call, int64_t now)
{
    if (now < call->deadline_ns &&
        (call->attempts == 0 || bo_call_remaining_ns(bo_core_config(), call, now) > 0))
        return false;
    bo_call_give_up(call);
    bo_block_lock(b);
    count_gave_up(b, call, now);
    bo_block_unlock(b);
    return true;
}

/* The step with the lock taken around it: this host's admission only. */
static bo_step host_admit_step(bo_block *b, bo_call *call, int64_t now_ns, unsigned *inflight,
                               int64_t max_wait_ns, int64_t *until_ns)
{
    int64_t until = 0;

    if (bo_block_share_waits(b, now_ns)) {
        if (share_wait_expired(b, call, now_ns))
            return BO_STEP_GIVE_UP;
        if (max_wait_ns > BO_BLOCK_SHARE_RETRY_NS)
            max_wait_ns = BO_BLOCK_SHARE_RETRY_NS;
        *until_ns = now_ns + max_wait_ns;
        return BO_STEP_WAIT;
    }
    bo_dest *d = bo_block_lock(b);
    bo_step s = admit_locked(b, d, call, now_ns, inflight, &until);
    bo_block_unlock(b);
    if (s == BO_STEP_GIVE_UP)
        bo_metrics_tick(now_ns);
    if (s == BO_STEP_WAIT) {
        if (until <= now_ns)
            until = now_ns + BO_NS_PER_MS / 10;
        if (until > now_ns + max_wait_ns)
            until = now_ns + max_wait_ns;
        *until_ns = until;
    }
    return s;
}

bo_step bo_run_admit_step(bo_block *b, bo_call *call, int64_t now_ns, unsigned *inflight,
                          int64_t max_wait_ns, int64_t *until_ns)
{
    bo_step s = host_admit_step(b, call, now_ns, inflight, max_wait_ns, until_ns);
    if (s == BO_STEP_GO && fleet_try_admit(b, call, now_ns, until_ns) == 1)
        s = BO_STEP_WAIT;
    return s;
}

bool bo_run_admit_now(bo_block *b, bo_call *call, int64_t now_ns, unsigned *inflight)
{
    if (bo_block_share_waits(b, now_ns))
        return false; /* no entry in the shared slot: nothing may go outside its window */
    bo_dest *d = bo_block_lock(b);
    bool go = bo_dest_admit_now(d, bo_core_config(), call, now_ns);
    if (go) {
        bo_block_admitted(b);
        *inflight = d->window.inflight;
    }
    bo_block_unlock(b);
    return go;
}

int64_t bo_run_pace_ns(bo_block *b, int64_t now_ns)
{
    bo_dest *d = bo_block_lock(b);
    int64_t t = bo_dest_pace_ns(d, bo_core_config(), now_ns);
    bo_block_unlock(b);
    return t;
}

/* The blocking wait for an entry in the slot (bo_block_share_waits), with
 * no lock held: 0 once the block has one (or its own state), -1 when the
 * call gave up, else the wait's EINTR or BO_WAIT_ABORTED. */
static int share_wait(bo_block *b, bo_call *call, int64_t now, const bo_waiter *w)
{
    static const bo_waiter plain = {.tick = NULL, .ud = NULL, .interruptible = false};

    for (; bo_block_share_waits(b, now); now = bo_core_now_ns()) {
        if (share_wait_expired(b, call, now))
            return -1;
        int64_t next = now + BO_BLOCK_SHARE_RETRY_NS;
        if (next > call->deadline_ns)
            next = call->deadline_ns;
        int rc = bo_run_wait(b, next, w != NULL ? w : &plain);
        if (rc != 0)
            return rc;
    }
    return 0;
}

int bo_run_admit_wait(bo_block *b, bo_call *call, int64_t now_ns, unsigned *inflight,
                      const bo_waiter *w)
{
    int64_t waited_from = 0, until = 0;
    int rc = 0;

    if (bo_block_share_pending(b)) {
        rc = share_wait(b, call, now_ns != 0 ? now_ns : bo_core_now_ns(), w);
        if (rc != 0)
            return rc;
        now_ns = 0;
    }
    bo_dest *d = bo_block_lock(b);
    for (;;) {
        int64_t now = now_ns != 0 ? now_ns : bo_core_now_ns();
        now_ns = 0; /* read the clock again after any wait */
        bo_step s = admit_locked(b, d, call, now, inflight, &until);
        if (s != BO_STEP_WAIT) {
            rc = s == BO_STEP_GO ? 0 : -1;
            break;
        }
        if (waited_from == 0)
            waited_from = now;
        if (until > now && until - now <= SPIN_WAIT_NS) {
            /* A pacing gap shorter than the timer slack: a timed sleep would
             * oversleep it many times over.  A gap of a few microseconds is
             * spun (a yield could give the CPU away for a whole time slice);
             * a longer one yields until it has passed. */
            bool spin = until - now <= SPIN_PURE_NS;
            bo_block_unlock(b);
            for (int i = 0; i < SPIN_MAX_YIELDS && bo_core_now_ns() < until; i++) {
                if (!spin)
                    sched_yield();
            }
            bo_block_lock(b);
            continue;
        }
        /* Ask again at the engine's time, a completion, or the recheck bound. */
        if (until > now + ADMIT_RECHECK_NS || until <= now)
            until = now + (until <= now ? BO_NS_PER_MS : ADMIT_RECHECK_NS);
        if (w == NULL) {
            bo_block_wait(b, until);
            continue;
        }
        /* On behalf of a program that may cancel: a slice of at most
         * BO_WAIT_SLICE_NS with the program's signals held back (a handler
         * must never run, nor longjmp, inside the condition wait), then,
         * with the lock released, its pending signals are delivered and its
         * progress callback asked. */
        if (until > now + BO_WAIT_SLICE_NS)
            until = now + BO_WAIT_SLICE_NS;
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        bo_block_wait(b, until);
        bo_block_unlock(b);
        bool intr = w->interruptible && held_signal_interrupts(&old);
        pthread_sigmask(SIG_SETMASK, &old, NULL); /* handlers run here */
        rc = intr ? EINTR : tick(w);
        if (rc != 0)
            goto out;
        bo_block_lock(b);
    }
    bo_block_unlock(b);
    if (rc == 0)
        rc = fleet_admit(b, call, w, INT64_MAX);
out:
    if (waited_from != 0 || rc == -1) {
        int64_t now = bo_core_now_ns();
        if (waited_from != 0)
            bo_report_waited(b, now - waited_from);
        if (rc == -1) /* gave up: counted */
            bo_metrics_tick(now);
    }
    return rc;
}

int bo_run_wait_until(bo_block *b, int64_t until_ns)
{
    static const bo_waiter resume = {.tick = NULL, .ud = NULL, .interruptible = true};
    return bo_run_wait(b, until_ns, &resume);
}

/*
 * One slice of a wait: a blocking read of a timerfd armed for until_ns.
 * 0 when the time came, EINTR when a signal without SA_RESTART interrupted it.
 */
static int wait_slice(int fd, int64_t until_ns)
{
    struct itimerspec its = {.it_value = to_timespec(until_ns)};
    uint64_t expirations;

    if (fd >= 0 && timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL) == 0) {
        if (bo_core_sys_read(fd, &expirations, sizeof expirations) < 0 && errno == EINTR)
            return EINTR;
        return 0;
    }
    /* No descriptor to spare: sleep, resuming after any signal. */
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &its.it_value, NULL) == EINTR) {
    }
    return 0;
}

int bo_run_wait(bo_block *b, int64_t until_ns, const bo_waiter *w)
{
    int64_t from = bo_core_now_ns(), now = from;
    int rc = 0, saved = errno, fd;

    if (until_ns <= from)
        return 0;
    fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
    while (rc == 0 && now < until_ns) {
        int64_t slice = until_ns;
        if (w->tick != NULL && slice > now + BO_WAIT_SLICE_NS)
            slice = now + BO_WAIT_SLICE_NS;
        rc = wait_slice(fd, slice);
        if (rc == EINTR && !w->interruptible)
            rc = 0;
        now = bo_core_now_ns();
        if (rc == 0 && now < until_ns)
            rc = tick(w);
    }
    if (fd >= 0)
        bo_core_sys_close(fd);
    bo_report_waited(b, bo_core_now_ns() - from);
    errno = saved;
    return rc;
}

int bo_run_admit_intr(bo_block *b, bo_call *call, int64_t deadline_ns, unsigned *inflight)
{
    static const bo_waiter held = {.tick = NULL, .ud = NULL, .interruptible = false};
    sigset_t all, old;
    int rc;

    /* The program's signals are held back but for a moment after each wait,
     * when the pending ones are delivered: a signal that came while the
     * step ran is then seen as well as one that came during the wait (with
     * the signals open, a handler that ran between two waits went unseen
     * and the call did not end with EINTR). */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    for (;;) {
        int64_t now = bo_core_now_ns(), until;
        if (now >= deadline_ns) {
            if (call->attempts > 0) { /* else the caller runs its one attempt outside the window */
                bo_block_lock(b);
                count_gave_up(b, call, now);
                bo_block_unlock(b);
                bo_metrics_tick(now);
            }
            rc = -1;
            break;
        }
        bo_step s = host_admit_step(b, call, now, inflight, ADMIT_POLL_NS, &until);
        if (s != BO_STEP_WAIT) {
            rc = s == BO_STEP_GO ? 0 : -1;
            break;
        }
        if (until > deadline_ns)
            until = deadline_ns;
        bo_run_wait(b, until, &held);
        bool intr = held_signal_interrupts(&old);
        pthread_sigmask(SIG_SETMASK, &old, NULL); /* handlers run here */
        if (intr)
            return EINTR;
        pthread_sigmask(SIG_BLOCK, &all, NULL);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc == 0) {
        static const bo_waiter intr = {.tick = NULL, .ud = NULL, .interruptible = true};
        return fleet_admit(b, call, &intr, deadline_ns);
    }
    return rc;
}

