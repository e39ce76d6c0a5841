/*
 * shim_state: the process-wide side of libbackoff.so.  Configuration parsed
 * once at load, the destination block (one mutex + condition variable +
 * bo_dest per destination; the table is shim_table.c), the admission
 * step and the completion every hook's call state machine uses (easy,
 * multi, connect), the blocking waits around them, stats (JSON at exit),
 * trace (CSV per attempt), verbose lines and the fork handlers.
 */
#include "bo_shim.h"
#include "bo_time.h"
#include "shim_redis.h"
#include "shim_share.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sched.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

BO_TLS int bo_shim_busy;

static bo_config g_cfg;
static bool g_cfg_ok;
static pthread_once_t g_cfg_once = PTHREAD_ONCE_INIT;
static uint64_t g_seed;
static uint64_t g_thread_counter;
static uint64_t g_forks; /* forks so far, counted under the fork handlers' locks */

static BO_TLS bo_rng tl_rng;
static BO_TLS bool tl_rng_ready;

/* Counters of evicted destinations (the table is in shim_table.c). */
static uint64_t st_retired[6]; /* calls, attempts, retries, throttled, failed, gave_up */
static double st_retired_window_max;

/* Waiting time for BACKOFF_STATS (an atomic, touched only after a wait) and
 * the trace's call numbers; the other counters live in each destination. */
static uint64_t st_wait_ns, st_call_ids;

/* The program's own retries: logical requests that failed retryably.
 * g_lineage_used is read without the lock to skip them while none is pending. */
static bo_lineages g_lineages;
static unsigned g_lineage_used; /* g_lineages.used, published atomically */
static pthread_mutex_t g_lineage_lock = PTHREAD_MUTEX_INITIALIZER;

/* Trace file: opened on the first row. */
static int g_trace_opened;

/* Guards every lazy initialization (bo_shim_once); held across fork(). */
static pthread_mutex_t g_init_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

void bo_shim_once(int *done, void (*fn)(void))
{
    if (__atomic_load_n(done, __ATOMIC_ACQUIRE))
        return;
    pthread_mutex_lock(&g_init_lock);
    if (!__atomic_load_n(done, __ATOMIC_RELAXED)) {
        fn();
        __atomic_store_n(done, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&g_init_lock);
}
static int g_trace_fd = -1;

/* Longest single condition wait: admission is asked again at least this often. */
#define ADMIT_RECHECK_NS (200 * BO_NS_PER_MS)
/* Waits up to this long yield the CPU instead of sleeping (timer slack is 50 us). */
#define SPIN_WAIT_NS (100 * 1000LL)
#define SPIN_PURE_NS (5 * 1000LL)
#define SPIN_MAX_YIELDS 10000

static void add(uint64_t *c, uint64_t v)
{
    __atomic_add_fetch(c, v, __ATOMIC_RELAXED);
}

static uint64_t load(const uint64_t *c)
{
    return __atomic_load_n(c, __ATOMIC_RELAXED);
}

static const char *env_get(void *ctx, const char *name)
{
    (void)ctx;
    return getenv(name);
}

/* A mutex as at its first initialization (recursive or adaptive). */
static void init_mutex(pthread_mutex_t *mu, int type)
{
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_settype(&ma, type);
    pthread_mutex_init(mu, &ma);
    pthread_mutexattr_destroy(&ma);
}

static void init_cond(pthread_cond_t *cv)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &ca);
    pthread_condattr_destroy(&ca);
}

int64_t bo_shim_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * BO_NS_PER_S + ts.tv_nsec;
}

static struct timespec to_timespec(int64_t ns)
{
    struct timespec ts;
    ts.tv_sec = (time_t)(ns / BO_NS_PER_S);
    ts.tv_nsec = (long)(ns % BO_NS_PER_S);
    return ts;
}

/* Write the whole buffer to fd, retrying short writes and EINTR. */
static void write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        buf += n;
        len -= (size_t)n;
    }
}

/*
 * Parse BACKOFF_* once.  A bad value prints its one line and leaves the
 * library as pure pass-through (or exits 2 under BACKOFF_STRICT=1): the host
 * program must never break because of the shim.
 */
static void load_config(void)
{
    char err[BO_ERR_LEN];
    int saved = errno;

    if (bo_config_load(&g_cfg, env_get, NULL, err, sizeof err) != 0) {
        const char *strict = getenv("BACKOFF_STRICT");
        size_t n = strlen(err);
        if (n + 1 < sizeof err) {
            err[n++] = '\n';
            err[n] = '\0';
        }
        write_all(2, err, n);
        if (strict != NULL && strcmp(strict, "1") == 0)
            _exit(2);
        g_cfg_ok = false;
        errno = saved;
        return;
    }
    if (g_cfg.seed_set) {
        g_seed = g_cfg.seed;
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        g_seed = ((uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec) ^
                 ((uint64_t)getpid() << 32);
    }
    g_cfg_ok = true;
    bo_redis_configure(&g_cfg); /* issue 14: the fleet (connects on first use) */
    errno = saved;
}

static int g_cfg_loaded; /* set once load_config has run: skips pthread_once */

static void load_config_once(void)
{
    load_config();
    __atomic_store_n(&g_cfg_loaded, 1, __ATOMIC_RELEASE);
}

const bo_config *bo_shim_config(void)
{
    if (!__atomic_load_n(&g_cfg_loaded, __ATOMIC_ACQUIRE))
        pthread_once(&g_cfg_once, load_config_once);
    return g_cfg_ok ? &g_cfg : NULL;
}

__attribute__((constructor)) static void shim_init(void)
{
    (void)bo_shim_config();
}

bo_rng *bo_shim_rng(void)
{
    if (!tl_rng_ready) {
        uint64_t n = __atomic_add_fetch(&g_thread_counter, 1, __ATOMIC_RELAXED);
        bo_rng_seed(&tl_rng, g_seed + n * 0x9e3779b97f4a7c15ULL);
        tl_rng_ready = true;
    }
    return &tl_rng;
}

uint64_t bo_shim_next_call_id(void)
{
    if (g_cfg.trace_path[0] == '\0')
        return 0;
    return __atomic_add_fetch(&st_call_ids, 1, __ATOMIC_RELAXED);
}

/* A new block: its locks and the policy's state for a fresh destination. */
void bo_shim_dest_init_block(bo_shim_dest *sd, const bo_config *cfg)
{
    /* Adaptive: the critical sections are a few counter updates, so a
     * short spin beats a futex sleep when threads collide. */
    init_mutex(&sd->mu, PTHREAD_MUTEX_ADAPTIVE_NP);
    init_cond(&sd->cv);
    bo_dest_init(&sd->d, cfg, bo_shim_now_ns());
    sd->cwnd_max = sd->d.window.cwnd;
}

/* An evicted block's counters still count in the stats at exit. */
void bo_shim_dest_retire(bo_shim_dest *sd)
{
    add(&st_retired[0], sd->calls);
    add(&st_retired[1], sd->attempts);
    add(&st_retired[2], sd->retries);
    add(&st_retired[3], sd->throttled);
    add(&st_retired[4], sd->failed);
    add(&st_retired[5], sd->gave_up);
    /* Shards evict concurrently: the largest value wins by compare-and-swap. */
    double seen;
    __atomic_load(&st_retired_window_max, &seen, __ATOMIC_RELAXED);
    while (sd->cwnd_max > seen &&
           !__atomic_compare_exchange(&st_retired_window_max, &seen, &sd->cwnd_max, false,
                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

/*
 * A destination's state and its lock: the host-wide slot's while the block
 * is attached to one (BACKOFF_SHARE=host), else the block's own.  The
 * block's counters are guarded by whichever lock this is.
 */
static bo_dest *dest_lock(bo_shim_dest *sd)
{
    if (sd->shared != NULL) {
        bo_share_lock(sd->shared);
        return &sd->shared->d;
    }
    pthread_mutex_lock(&sd->mu);
    return &sd->d;
}

static void dest_unlock(bo_shim_dest *sd)
{
    if (sd->shared != NULL)
        bo_share_unlock(sd->shared);
    else
        pthread_mutex_unlock(&sd->mu);
}

/* Under the lock: wait for a completion on the destination, or until_ns. */
static void dest_wait(bo_shim_dest *sd, int64_t until_ns)
{
    if (sd->shared != NULL) {
        bo_share_wait(sd->shared, sd->share_idx, until_ns);
        return;
    }
    struct timespec ts = to_timespec(until_ns);
    pthread_cond_timedwait(&sd->cv, &sd->mu, &ts);
}

/* Under the lock: an attempt was admitted (a lease of this process). */
static void dest_admitted(bo_shim_dest *sd)
{
    if (sd->shared != NULL)
        bo_share_lease_take(sd->shared, sd->share_idx);
}

/* Under the lock: waiting for admission; leases of dead processes go back. */
static void dest_waiting(bo_shim_dest *sd, int64_t now)
{
    if (sd->shared != NULL)
        bo_share_reap(sd->shared, now, false);
}

/* --- issue 14: the fleet's word after a host-wide GO (shim_redis.c) ---------- */

/* Under the destination's lock: give back an admitted attempt that will not
 * run (its slot, its host-wide lease) and wake the calls waiting for one. */
static void release_admission(bo_shim_dest *sd, bo_dest *d, bo_call *call)
{
    bool held = call->phase == BO_PHASE_ATTEMPT;
    bo_dest_cancel(d, call);
    if (sd->shared != NULL) {
        if (held)
            bo_share_lease_drop(sd->shared, sd->share_idx);
        bo_share_wake(sd->shared);
    } else {
        pthread_cond_broadcast(&sd->cv);
    }
}

/* With no lock held: give back a host-wide admission that will not run now. */
static void fleet_undo(bo_shim_dest *sd, bo_call *call)
{
    bo_dest *d = dest_lock(sd);
    release_admission(sd, d, call);
    dest_unlock(sd);
}

/* The latest time the fleet may hold an attempt back that asked at from_ns:
 * the call's own deadline, and BACKOFF_CAP_MS (keys written by anyone with
 * access to them never hold a host longer). */
static int64_t fleet_limit(bo_call *call, int64_t from_ns, int64_t now, int64_t deadline_ns)
{
    int64_t left = bo_call_remaining_ns(&g_cfg, call, now);
    int64_t limit = left >= INT64_MAX - now ? INT64_MAX : now + left;
    int64_t cap = from_ns + g_cfg.cap_ms * BO_NS_PER_MS;
    if (cap < limit)
        limit = cap;
    return deadline_ns < limit ? deadline_ns : limit;
}

/*
 * One ask of the fleet at now for a call that has waited since from_ns: true
 * when the fleet says wait until *until_ns, within the call's deadline and
 * BACKOFF_CAP_MS (fleet_limit), the call keeping its place in the fleet's
 * queue; false when the attempt goes now, with the fleet's lease (GO) or
 * without one (no answer from Redis, or a wait past the limit), the place
 * left.
 */
static bool fleet_ask(bo_shim_dest *sd, bo_call *call, int64_t from_ns, int64_t now,
                      int64_t deadline_ns, int64_t *until_ns)
{
    *until_ns = now;
    if (bo_redis_admit(sd->key, now, &call->fleet_lease, &call->fleet_ticket, until_ns) ==
            BO_REDIS_WAIT &&
        *until_ns < fleet_limit(call, from_ns, now, deadline_ns))
        return true;
    bo_redis_leave_queue(sd->key, &call->fleet_ticket); /* none held after a GO */
    return false;
}

/*
 * After a host-wide GO, with no lock held (BACKOFF_SHARE=redis, aimd): the
 * fleet's admission.  The host-wide slot stays taken while the fleet says
 * wait (the attempt is this host's next); a fleet wait that would pass the
 * call's deadline or BACKOFF_CAP_MS, or no answer from Redis, lets the
 * attempt go without a fleet lease: never worse than alone.  Returns 0, or the wait's EINTR or
 * BO_WAIT_ABORTED once the admission is undone.
 */
static int fleet_admit(bo_shim_dest *sd, bo_call *call, const bo_shim_waiter *w,
                       int64_t deadline_ns)
{
    static const bo_shim_waiter plain = {.tick = NULL, .ud = NULL, .interruptible = false};
    int64_t until;

    if (!bo_redis_active())
        return 0;
    int64_t from = bo_shim_now_ns();
    while (fleet_ask(sd, call, from, bo_shim_now_ns(), deadline_ns, &until)) {
        int rc = bo_shim_wait(until, w != NULL ? w : &plain);
        if (rc != 0) {
            bo_redis_leave_queue(sd->key, &call->fleet_ticket);
            fleet_undo(sd, call);
            return rc;
        }
    }
    return 0;
}

/* The non-blocking form (the multi interface): 1 and *until_ns when the
 * fleet says wait, the host-wide admission undone. */
static int fleet_try_admit(bo_shim_dest *sd, bo_call *call, int64_t now, int64_t *until_ns)
{
    int64_t until;

    if (!bo_redis_active() || !fleet_ask(sd, call, now, now, INT64_MAX, &until))
        return 0;
    fleet_undo(sd, call);
    if (until > now + BO_POLL_ADMIT_NS)
        until = now + BO_POLL_ADMIT_NS;
    *until_ns = until;
    return 1;
}
/* --- end of issue 14's hooks -------------------------------------------------- */

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
static int tick(const bo_shim_waiter *w)
{
    if (w != NULL && w->tick != NULL && w->tick(w->ud) != 0)
        return BO_WAIT_ABORTED;
    return 0;
}

/* Under the lock: the call gave up waiting (its time budget or deadline ran out). */
static void count_gave_up(bo_shim_dest *sd)
{
    sd->calls++;
    sd->failed++;
    sd->gave_up++;
}

/*
 * The admission step, under the destination's lock: ask the engine once at
 * now, then take the attempt's lease (GO), count the call as given up
 * (GIVE_UP), or hand back dead processes' leases (WAIT: *until is the
 * engine's time to ask again, <= now when it names none).  Every admission
 * is this step: bo_shim_admit_step takes the lock around it, and the
 * blocking wait of bo_shim_admit_wait keeps the lock between the step and
 * its condition wait, so that no completion is missed in between.
 */
static bo_shim_step admit_locked(bo_shim_dest *sd, bo_dest *d, bo_call *call, int64_t now,
                                 unsigned *inflight, int64_t *until)
{
    bo_admit a = bo_dest_admit(d, &g_cfg, call, now, until);
    if (a == BO_ADMIT_GO) {
        dest_admitted(sd);
        *inflight = d->window.inflight;
        return BO_STEP_GO;
    }
    if (a == BO_ADMIT_GIVE_UP) {
        count_gave_up(sd);
        return BO_STEP_GIVE_UP;
    }
    dest_waiting(sd, now);
    return BO_STEP_WAIT;
}

/* The step with the lock taken around it: this host's admission only. */
static bo_shim_step host_admit_step(bo_shim_dest *sd, bo_call *call, int64_t now_ns,
                                    unsigned *inflight, int64_t max_wait_ns, int64_t *until_ns)
{
    int64_t until = 0;

    bo_dest *d = dest_lock(sd);
    bo_shim_step s = admit_locked(sd, d, call, now_ns, inflight, &until);
    dest_unlock(sd);
    if (s == BO_STEP_WAIT) {
        if (until <= now_ns)
            until = now_ns + BO_NS_PER_MS / 10;
        if (until > now_ns + max_wait_ns)
            until = now_ns + max_wait_ns;
        *until_ns = until;
    }
    return s;
}

bo_shim_step bo_shim_admit_step(bo_shim_dest *sd, bo_call *call, int64_t now_ns,
                                unsigned *inflight, int64_t max_wait_ns, int64_t *until_ns)
{
    bo_shim_step s = host_admit_step(sd, call, now_ns, inflight, max_wait_ns, until_ns);
    if (s == BO_STEP_GO && fleet_try_admit(sd, call, now_ns, until_ns) == 1) /* issue 14 */
        s = BO_STEP_WAIT;
    return s;
}

int bo_shim_admit(bo_shim_dest *sd, bo_call *call, int64_t now_ns, unsigned *inflight)
{
    return bo_shim_admit_wait(sd, call, now_ns, inflight, NULL);
}

int bo_shim_admit_wait(bo_shim_dest *sd, bo_call *call, int64_t now_ns, unsigned *inflight,
                       const bo_shim_waiter *w)
{
    int64_t waited_from = 0, until = 0;
    int rc = 0;

    bo_dest *d = dest_lock(sd);
    for (;;) {
        int64_t now = now_ns != 0 ? now_ns : bo_shim_now_ns();
        now_ns = 0; /* read the clock again after any wait */
        bo_shim_step s = admit_locked(sd, d, call, now, inflight, &until);
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
            dest_unlock(sd);
            for (int i = 0; i < SPIN_MAX_YIELDS && bo_shim_now_ns() < until; i++) {
                if (!spin)
                    sched_yield();
            }
            dest_lock(sd);
            continue;
        }
        /* Ask again at the engine's time, a completion, or the recheck bound. */
        if (until > now + ADMIT_RECHECK_NS || until <= now)
            until = now + (until <= now ? BO_NS_PER_MS : ADMIT_RECHECK_NS);
        if (w == NULL) {
            dest_wait(sd, until);
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
        dest_wait(sd, until);
        dest_unlock(sd);
        bool intr = w->interruptible && held_signal_interrupts(&old);
        pthread_sigmask(SIG_SETMASK, &old, NULL); /* handlers run here */
        rc = intr ? EINTR : tick(w);
        if (rc != 0)
            goto out;
        dest_lock(sd);
    }
    dest_unlock(sd);
    if (rc == 0)
        rc = fleet_admit(sd, call, w, INT64_MAX); /* issue 14 */
out:
    if (waited_from != 0)
        add(&st_wait_ns, (uint64_t)(bo_shim_now_ns() - waited_from));
    return rc;
}

void bo_shim_call_cancel(bo_shim_dest *sd, bo_call *call)
{
    bo_redis_cancel(sd->key, &call->fleet_lease); /* issue 14 */
    bo_redis_leave_queue(sd->key, &call->fleet_ticket);
    bo_dest *d = dest_lock(sd);
    release_admission(sd, d, call);
    sd->calls++;
    sd->failed++;
    dest_unlock(sd);
}

void bo_shim_call_abandoned(bo_shim_dest *sd)
{
    dest_lock(sd);
    sd->calls++;
    sd->failed++;
    dest_unlock(sd);
}

int bo_shim_wait_until(int64_t until_ns)
{
    static const bo_shim_waiter resume = {.tick = NULL, .ud = NULL, .interruptible = true};
    return bo_shim_wait(until_ns, &resume);
}

/*
 * One slice of a wait: a blocking read() of a timerfd armed for until_ns.
 * 0 when the time came, EINTR when a signal without SA_RESTART interrupted it.
 */
static int wait_slice(int fd, int64_t until_ns)
{
    struct itimerspec its = {.it_value = to_timespec(until_ns)};
    uint64_t expirations;

    if (fd >= 0 && timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL) == 0) {
        if (read(fd, &expirations, sizeof expirations) < 0 && errno == EINTR)
            return EINTR;
        return 0;
    }
    /* No descriptor to spare: sleep, resuming after any signal. */
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &its.it_value, NULL) == EINTR) {
    }
    return 0;
}

int bo_shim_wait(int64_t until_ns, const bo_shim_waiter *w)
{
    int64_t from = bo_shim_now_ns(), now = from;
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
        now = bo_shim_now_ns();
        if (rc == 0 && now < until_ns)
            rc = tick(w);
    }
    if (fd >= 0)
        close(fd);
    add(&st_wait_ns, (uint64_t)(bo_shim_now_ns() - from));
    errno = saved;
    return rc;
}

/* Longest single wait of bo_shim_admit_intr: how late it may notice a completion. */
#define ADMIT_POLL_NS (10 * BO_NS_PER_MS)

int bo_shim_admit_intr(bo_shim_dest *sd, bo_call *call, int64_t deadline_ns,
                       unsigned *inflight)
{
    static const bo_shim_waiter held = {.tick = NULL, .ud = NULL, .interruptible = false};
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
        int64_t now = bo_shim_now_ns(), until;
        if (now >= deadline_ns) {
            if (call->attempts > 0) { /* else the caller runs its one attempt outside the window */
                dest_lock(sd);
                count_gave_up(sd);
                dest_unlock(sd);
            }
            rc = -1;
            break;
        }
        bo_shim_step s = host_admit_step(sd, call, now, inflight, ADMIT_POLL_NS, &until);
        if (s != BO_STEP_WAIT) {
            rc = s == BO_STEP_GO ? 0 : -1;
            break;
        }
        if (until > deadline_ns)
            until = deadline_ns;
        bo_shim_wait(until, &held);
        bool intr = held_signal_interrupts(&old);
        pthread_sigmask(SIG_SETMASK, &old, NULL); /* handlers run here */
        if (intr)
            return EINTR;
        pthread_sigmask(SIG_BLOCK, &all, NULL);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc == 0) {
        static const bo_shim_waiter intr = {.tick = NULL, .ud = NULL, .interruptible = true};
        return fleet_admit(sd, call, &intr, deadline_ns); /* issue 14 */
    }
    return rc;
}

bool bo_shim_lineage_active(void)
{
    return __atomic_load_n(&g_lineage_used, __ATOMIC_RELAXED) != 0;
}

bool bo_shim_lineage_begin(uint64_t key, bo_call *call)
{
    bo_lineage l;
    bool found;

    if (key == 0 || __atomic_load_n(&g_lineage_used, __ATOMIC_RELAXED) == 0)
        return false;
    pthread_mutex_lock(&g_lineage_lock);
    found = bo_lineage_find(&g_lineages, key, call->start_ns, &l);
    __atomic_store_n(&g_lineage_used, g_lineages.used, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&g_lineage_lock);
    if (found)
        bo_call_continue(call, &l);
    return found;
}

void bo_shim_lineage_end(uint64_t key, const bo_call *call, bool failed_retryable)
{
    bo_lineage l;

    if (key == 0)
        return;
    if (!failed_retryable && __atomic_load_n(&g_lineage_used, __ATOMIC_RELAXED) == 0)
        return;
    bo_call_lineage(call, key, &l);
    pthread_mutex_lock(&g_lineage_lock);
    if (failed_retryable)
        bo_lineage_failed(&g_lineages, &l, bo_shim_now_ns());
    else
        bo_lineage_forget(&g_lineages, key);
    __atomic_store_n(&g_lineage_used, g_lineages.used, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&g_lineage_lock);
}

/* Open the trace file once; write the header when the file is empty. */
static void open_trace(void)
{
    static const char header[] =
        "t_ms,pid,tid,dest,call,attempt,outcome,status,curl_code,delay_ms,cwnd,ssthresh,"
        "inflight\n";
    struct stat st;
    int fd = open(g_cfg.trace_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);

    if (fd < 0)
        return;
    /* Several processes may share the file: only one writes the header. */
    flock(fd, LOCK_EX);
    if (fstat(fd, &st) == 0 && st.st_size == 0)
        write_all(fd, header, sizeof header - 1);
    flock(fd, LOCK_UN);
    g_trace_fd = fd;
}

/*
 * One trace row per attempt, written when it ends:
 *   t_ms       wall clock (ms since the epoch), so that processes sharing a
 *              file interleave correctly;
 *   dest       the destination key; call: the process's call number;
 *   attempt    1 for the first attempt of the call;
 *   outcome    success | retry | final (not retryable) | gave_up (retryable,
 *              but the attempt or time budget is spent);
 *   status     HTTP status or 0; curl_code: the CURLcode, or for connect()
 *              the errno of the attempt (0 when it connected);
 *   delay_ms   the wait before the next attempt (0 unless retry);
 *   cwnd, ssthresh  the window after this attempt's completion;
 *   inflight   attempts in flight to the destination when this one was
 *              admitted, itself included (what "one probe at a time" means).
 */
typedef struct trace_row {
    const char *key;
    uint64_t call_id;
    unsigned attempt;
    const char *outcome;
    int status, code;
    int64_t delay_ns;
    double cwnd, ssthresh;
    unsigned inflight;
} trace_row;

static void write_trace(const trace_row *r)
{
    char line[512];
    struct timespec ts;
    int n;

    bo_shim_once(&g_trace_opened, open_trace);
    if (g_trace_fd < 0)
        return;
    clock_gettime(CLOCK_REALTIME, &ts);
    n = snprintf(line, sizeof line,
                 "%" PRId64 ",%d,%ld,%s,%" PRIu64 ",%u,%s,%d,%d,%" PRId64 ",%.2f,%.2f,%u\n",
                 (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, (int)getpid(),
                 (long)syscall(SYS_gettid), r->key, r->call_id, r->attempt, r->outcome,
                 r->status, r->code, (int64_t)(r->delay_ns / BO_NS_PER_MS), r->cwnd, r->ssthresh,
                 r->inflight);
    if (n > 0 && (size_t)n < sizeof line)
        write_all(g_trace_fd, line, (size_t)n);
}

/*
 * Complete the attempt under the destination lock, wake the waiters, then
 * (outside the lock) count, trace and explain.  Returns true to retry.
 */
bool bo_shim_complete(bo_shim_dest *sd, bo_call *call, const bo_shim_result *r,
                      uint64_t call_id, const char *what, unsigned inflight,
                      int64_t *until_ns)
{
    const bo_config *cfg = &g_cfg;
    bo_rng *rng = bo_shim_rng();
    int64_t now = bo_shim_now_ns(), until = now;
    double cwnd, ssthresh;
    bo_next next;

    /* The server's quota, unless the answer came from a cache (Age > 0, or
     * 304 Not Modified: a cache revalidated, the quota is the cache's); and
     * the wait a failed answer's own header lines ask for, which wins over
     * libcurl's whole seconds (milliseconds, a date against the answer's
     * Date) when they carry one (issue 33). */
    bo_rl_quota quota;
    bool have_quota = false;
    int64_t retry_after = r->retry_after_ns;
    bool want_quota = cfg->ratelimit_headers && r->ratelimit != NULL && r->ratelimit->seen &&
                      r->status != 304;
    bool want_hint = r->ratelimit != NULL && r->outcome.verdict != BO_VERDICT_SUCCESS;
    if (want_quota || want_hint) {
        struct timespec wall;
        clock_gettime(CLOCK_REALTIME, &wall);
        int64_t wall_ns = (int64_t)wall.tv_sec * 1000000000LL + wall.tv_nsec;
        if (want_quota)
            have_quota = bo_rl_headers_quota(r->ratelimit, wall_ns, &quota);
        if (want_hint) {
            int64_t hint = bo_rl_headers_retry_after(r->ratelimit, wall_ns);
            if (hint >= 0)
                retry_after = hint;
        }
    }

    bo_dest *d = dest_lock(sd);
    if (have_quota)
        bo_dest_note_quota(d, cfg, call, &quota, r->outcome, retry_after, now, rng);
    next = bo_dest_complete(d, cfg, call, r->outcome, retry_after, now, rng, &until);
    bool retry = next == BO_NEXT_RETRY;
    bool success = r->outcome.verdict == BO_VERDICT_SUCCESS;
    bool gave_up = !retry && r->outcome.verdict == BO_VERDICT_RETRY;
    cwnd = d->window.cwnd;
    ssthresh = d->window.ssthresh;
    if (cwnd > sd->cwnd_max)
        sd->cwnd_max = cwnd;
    sd->attempts++;
    sd->retries += retry;
    sd->throttled += r->outcome.signal == BO_SIGNAL_THROTTLE;
    if (!retry) {
        sd->calls++;
        sd->failed += !success;
        sd->gave_up += gave_up;
    }
    if (sd->shared != NULL) {
        bo_share_lease_drop(sd->shared, sd->share_idx);
        bo_share_note(sd->shared, success, r->outcome.signal == BO_SIGNAL_THROTTLE, now);
        bo_share_wake(sd->shared);
    } else {
        pthread_cond_broadcast(&sd->cv);
    }
    dest_unlock(sd);

    *until_ns = retry ? until : now;
    bo_redis_complete(sd->key, &call->fleet_lease, &r->outcome); /* issue 14 */

    if (cfg->trace_path[0] != '\0') {
        trace_row row = {sd->key, call_id, call->inherited + call->attempts,
                         retry ? "retry" : success ? "success" : gave_up ? "gave_up" : "final",
                         r->status, r->code, retry ? until - now : 0, cwnd, ssthresh,
                         inflight};
        write_trace(&row);
    }
    if (cfg->verbose && (retry || gave_up)) {
        char line[512];
        int n;
        if (retry)
            n = snprintf(line, sizeof line,
                         "backoff: %s %s: attempt %u got status %d, code %d; retrying in %"
                         PRId64 " ms (cwnd %.1f)\n",
                         what, sd->key, call->attempts, r->status, r->code,
                         (int64_t)((until - now) / BO_NS_PER_MS), cwnd);
        else
            n = snprintf(line, sizeof line,
                         "backoff: %s %s: attempt %u got status %d, code %d; giving up "
                         "(attempt or time budget spent)\n",
                         what, sd->key, call->attempts, r->status, r->code);
        if (n > 0)
            write_all(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    }
    return retry;
}

/*
 * At exit: one JSON object, appended with a single write() so that many
 * processes can share the file.  `window` is the current cwnd of the
 * destination with the most attempts; `window_max` the largest cwnd any
 * destination reached.
 */
typedef struct stats_sum {
    double window, window_max;
    uint64_t best, calls, attempts, retries, throttled, failed, gave_up;
    int64_t until_ns;           /* the exit's bound on slots' locks */
} stats_sum;

/*
 * Under the block's shard lock.  A block no call uses (refs 0, which the
 * shard lock keeps so) may still be attached to a slot whose lock another
 * process holds, stopped: that lock is waited for until t->until_ns only,
 * and without it the block's own counters (this process's, stable) count
 * but its window does not.
 */
static void sum_dest(bo_shim_dest *sd, void *ctx)
{
    stats_sum *t = ctx;
    bo_dest *d;

    if (sd->shared != NULL && __atomic_load_n(&sd->refs, __ATOMIC_ACQUIRE) == 0)
        d = bo_share_lock_until(sd->shared, t->until_ns) ? &sd->shared->d : NULL;
    else
        d = dest_lock(sd);
    if (sd->attempts >= t->best && d != NULL) {
        t->best = sd->attempts;
        t->window = d->window.cwnd;
    }
    if (sd->cwnd_max > t->window_max)
        t->window_max = sd->cwnd_max;
    t->calls += sd->calls;
    t->attempts += sd->attempts;
    t->retries += sd->retries;
    t->throttled += sd->throttled;
    t->failed += sd->failed;
    t->gave_up += sd->gave_up;
    if (d != NULL)
        dest_unlock(sd);
}

static void write_stats(int64_t until_ns)
{
    char buf[512];
    stats_sum t = {.until_ns = until_ns};
    int fd, n;
    int saved = errno;

    if (!g_cfg_ok || g_cfg.stats_path[0] == '\0')
        return;
    bo_shim_table_foreach(sum_dest, &t);
    double window = t.window;
    double window_max;
    __atomic_load(&st_retired_window_max, &window_max, __ATOMIC_RELAXED);
    if (t.window_max > window_max)
        window_max = t.window_max;
    uint64_t calls = t.calls + load(&st_retired[0]), attempts = t.attempts + load(&st_retired[1]),
             retries = t.retries + load(&st_retired[2]),
             throttled = t.throttled + load(&st_retired[3]),
             failed = t.failed + load(&st_retired[4]), gave_up = t.gave_up + load(&st_retired[5]);
    n = snprintf(buf, sizeof buf,
                 "{\"pid\":%d,\"calls\":%" PRIu64 ",\"attempts\":%" PRIu64
                 ",\"retries\":%" PRIu64 ",\"throttled\":%" PRIu64 ",\"failed\":%" PRIu64
                 ",\"gave_up\":%" PRIu64 ",\"wait_ms\":%" PRIu64
                 ",\"window\":%.2f,\"window_max\":%.2f}\n",
                 (int)getpid(), calls, attempts, retries, throttled, failed, gave_up,
                 load(&st_wait_ns) / (uint64_t)BO_NS_PER_MS, window, window_max);
    if (n <= 0 || (size_t)n >= sizeof buf)
        goto out;
    if (strcmp(g_cfg.stats_path, "stderr") == 0) {
        write_all(2, buf, (size_t)n);
        goto out;
    }
    fd = open(g_cfg.stats_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        goto out;
    write_all(fd, buf, (size_t)n);
    close(fd);
out:
    errno = saved;
}

/*
 * At exit (exit() or a return from main; not _exit, a crash or a kill,
 * whose entries are reaped): the stats, then the host-wide entries of the
 * destinations this process no longer uses are let go.
 */
__attribute__((destructor)) static void at_exit(void)
{
    int saved = errno;
    /* A slot's lock held by a process stopped in it is waited for 100 ms
     * at most, all slots together: the exit never hangs on another process. */
    int64_t until = bo_shim_now_ns() + 100 * BO_NS_PER_MS;

    write_stats(until);
    if (g_cfg_ok && g_cfg.share != BO_SHARE_PROCESS)
        bo_shim_table_exit(until);
    errno = saved;
}

/*
 * Fork (called by shim_fork.c, the library's one set of atfork handlers):
 * hold every lock of this module across fork() so that the child never
 * inherits one held by a thread that does not exist there.  Order: the init
 * lock, then the table (shim_table.c: its shards, then each destination;
 * nobody holds two destinations otherwise, and no code takes the init lock
 * or a shard while holding a destination).
 */
void bo_shim_state_prepare_fork(void)
{
    pthread_mutex_lock(&g_init_lock);
    bo_shim_table_prepare_fork();
    pthread_mutex_lock(&g_lineage_lock);
    bo_redis_prepare_fork(); /* a leaf lock: innermost */
    g_forks++;
}

void bo_shim_state_parent_fork(void)
{
    bo_redis_parent_fork();
    pthread_mutex_unlock(&g_lineage_lock);
    bo_shim_table_parent_fork();
    pthread_mutex_unlock(&g_init_lock);
}

static void child_block(bo_shim_dest *sd)
{
    sd->d.window.inflight = 0;
    sd->calls = sd->attempts = sd->retries = 0;
    sd->throttled = sd->failed = sd->gave_up = 0;
    init_cond(&sd->cv);
    init_mutex(&sd->mu, PTHREAD_MUTEX_ADAPTIVE_NP);
}

/*
 * In the child only the forking thread exists.  Every lock held across
 * fork() is initialised anew rather than unlocked: a recursive mutex records
 * its owner's thread id, the child's thread has another one, and an unlock
 * there fails with EPERM and leaves the lock held for good (the child's own
 * next fork then waited forever).  The attempts the parent's other threads
 * had in flight will never complete here, so the in-flight counts start
 * again from zero; the condition variables, whose waiters are gone, are made
 * anew; the stats count the child's own calls; and the child's generators
 * are seeded apart from the parent's, so that parent and child never draw
 * the same jitter.
 */
void bo_shim_state_child_fork(void)
{
    bo_share_child_fork();
    bo_redis_child_fork();
    bo_shim_table_child_fork(child_block);
    pthread_mutex_init(&g_lineage_lock, NULL);
    init_mutex(&g_init_lock, PTHREAD_MUTEX_RECURSIVE);
    st_wait_ns = 0;
    memset(st_retired, 0, sizeof st_retired);
    st_retired_window_max = 0;
    bo_rng mix;
    bo_rng_seed(&mix, g_seed ^ (g_forks * 0x9e3779b97f4a7c15ULL));
    g_seed = bo_rng_next(&mix);
    tl_rng_ready = false;
    /* The trace fd is shared with the parent (O_APPEND): rows stay whole. */
}
