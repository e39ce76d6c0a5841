/*
 * block.c: a destination block's state and its lock, whichever backend
 * holds it (dest.h), and the counts: the process's, and the same
 * host-wide in the slot (the metrics').  The two backends are a table,
 * chosen when the block's home is settled (bo_block_set_slot):
 *
 *   own        the block's own mutex, condition variable and bo_dest
 *              (BACKOFF_SHARE=process, or a destination this process keeps
 *              to itself: no file, every slot in use, a block waiting for
 *              an entry);
 *   host-wide  the slot of the shared file it is attached to (share.c):
 *              the slot's robust lock and bo_dest, a lease per attempt in
 *              flight, a futex to wait on, the slot's counts beside the
 *              process's.
 *
 * The fleet's word through Redis (redis.c) comes on top of either.
 */
#include "dest/block.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "bo_time.h"
#include "core/core.h"
#include "dest/redis.h"
#include "dest/share.h"

/* What a backend does for each step of a call that depends on where the
 * destination's state lives; the bo_block_* functions of dest.h ask it. */
struct bo_block_backend {
    bo_dest *(*lock)(bo_block *b);
    /* the stats' read of a block (under its shard lock): one no call uses
     * may be attached to a slot whose lock a stopped process holds */
    bo_dest *(*lock_idle)(bo_block *b, int64_t until_ns);
    void (*unlock)(bo_block *b);
    void (*wait)(bo_block *b, int64_t until_ns);
    void (*admitted)(bo_block *b);
    void (*waiting)(bo_block *b, int64_t now_ns);
    /* an admitted attempt that will not run (held: it had its lease) */
    void (*released)(bo_block *b, bool held);
    void (*completed)(bo_block *b, bo_tally t, bool success, int64_t now_ns);
    void (*count)(bo_block *b, bo_tally t, int64_t now_ns);
    void (*waited)(bo_block *b, int64_t ns);
};

/* Counts of evicted destinations (the table frees their blocks). */
static bo_block_counts g_retired;
static double g_retired_window_max;

static void init_cond(pthread_cond_t *cv)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &ca);
    pthread_condattr_destroy(&ca);
}

static const bo_block_backend k_own, k_host;

void bo_block_init(bo_block *b, const bo_config *cfg)
{
    /* Adaptive: the critical sections are a few counter updates, so a
     * short spin beats a futex sleep when threads collide. */
    bo_core_mutex_init(&b->mu, PTHREAD_MUTEX_ADAPTIVE_NP);
    init_cond(&b->cv);
    bo_dest_init(&b->d, cfg, bo_core_now_ns());
    b->cwnd_max = b->d.window.cwnd;
    b->backend = &k_own;
}

/*
 * The one place a block's home changes: attached to slot s as entry idx of
 * generation gen, or (s NULL) its own.  The slot is published before the
 * backend that reads it, and the backend changes before the slot goes, so
 * a thread that reads the host-wide backend finds its slot (the table
 * detaches only blocks no call uses; share_retry attaches under mu, which
 * lock_own looks at again).
 */
void bo_block_set_slot(bo_block *b, bo_share_slot *s, unsigned idx, uint32_t gen)
{
    if (s == NULL)
        __atomic_store_n(&b->backend, &k_own, __ATOMIC_RELEASE);
    b->share_idx = idx;
    b->share_gen = gen;
    __atomic_store_n(&b->shared, s, __ATOMIC_RELEASE);
    if (s != NULL)
        __atomic_store_n(&b->backend, &k_host, __ATOMIC_RELEASE);
}

static void add(uint64_t *c, uint64_t v)
{
    __atomic_add_fetch(c, v, __ATOMIC_RELAXED);
}

void bo_block_retire(bo_block *b)
{
    add(&g_retired.calls, b->counts.calls);
    add(&g_retired.attempts, b->counts.attempts);
    add(&g_retired.retries, b->counts.retries);
    add(&g_retired.throttled, b->counts.throttled);
    add(&g_retired.failed, b->counts.failed);
    add(&g_retired.gave_up, b->counts.gave_up);
    add(&g_retired.budget_delayed, b->counts.budget_delayed);
    /* Shards evict concurrently: the largest value wins by compare-and-swap. */
    double seen;
    __atomic_load(&g_retired_window_max, &seen, __ATOMIC_RELAXED);
    while (b->cwnd_max > seen &&
           !__atomic_compare_exchange(&g_retired_window_max, &seen, &b->cwnd_max, false,
                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

void bo_block_child(bo_block *b)
{
    b->d.window.inflight = 0;
    memset(&b->counts, 0, sizeof b->counts);
    init_cond(&b->cv);
    bo_core_mutex_init(&b->mu, PTHREAD_MUTEX_ADAPTIVE_NP);
}

void bo_block_child_retired(void)
{
    memset(&g_retired, 0, sizeof g_retired);
    g_retired_window_max = 0;
}

/* ---- the calls' steps, through the block's backend ---------------------- */

/* The block's backend (an atomic load: bo_block_set_slot may change it). */
static inline const bo_block_backend *backend(const bo_block *b)
{
    return __atomic_load_n(&b->backend, __ATOMIC_ACQUIRE);
}

bo_dest *bo_block_lock(bo_block *b)
{
    return backend(b)->lock(b);
}

void bo_block_unlock(bo_block *b)
{
    backend(b)->unlock(b);
}

void bo_block_wait(bo_block *b, int64_t until_ns)
{
    backend(b)->wait(b, until_ns);
}

void bo_block_admitted(bo_block *b)
{
    backend(b)->admitted(b);
}

void bo_block_waiting(bo_block *b, int64_t now_ns)
{
    backend(b)->waiting(b, now_ns);
}

void bo_block_release(bo_block *b, bo_dest *d, bo_call *call)
{
    bool held = call->phase == BO_PHASE_ATTEMPT;
    bo_dest_cancel(d, call);
    backend(b)->released(b, held);
}

void bo_block_completed(bo_block *b, bo_tally t, bool success, int64_t now_ns)
{
    backend(b)->completed(b, t, success, now_ns);
}

void bo_block_count(bo_block *b, bo_tally t, int64_t now_ns)
{
    backend(b)->count(b, t, now_ns);
}

void bo_block_waited(bo_block *b, int64_t ns)
{
    if (b != NULL && ns > 0)
        backend(b)->waited(b, ns);
}

/*
 * One attach of a block waiting for an entry (bo_block_share_waits), by
 * one thread at a time and at most every BO_BLOCK_SHARE_RETRY_NS: under
 * mu, which every thread that took it as the block's lock holds
 * (bo_block_lock looks again once it has it), so the lock changes to the
 * slot's with nobody inside the block's.  True while the block still waits.
 */
bool bo_block_share_retry(bo_block *b, int64_t now_ns)
{
    const bo_config *cfg = bo_core_config();
    bool waits = true;

    if (cfg == NULL || pthread_mutex_trylock(&b->mu) != 0)
        return true; /* another thread attaches or reads the block: ask later */
    if (!__atomic_load_n(&b->share_wait, __ATOMIC_RELAXED)) {
        waits = false;
    } else if (now_ns >= b->share_retry_ns) {
        unsigned idx = 0;
        uint32_t gen = 0;
        bool wait;
        bo_share_slot *s = bo_share_attach(b->key, strlen(b->key), b->hash, cfg, &idx, &gen,
                                           &wait);
        if (s != NULL || !wait) { /* attached, or the file is gone: its own state */
            bo_block_set_slot(b, s, idx, gen);
            __atomic_store_n(&b->share_wait, 0, __ATOMIC_RELEASE);
            waits = false;
        } else {
            b->share_retry_ns = now_ns + BO_BLOCK_SHARE_RETRY_NS;
        }
    }
    pthread_mutex_unlock(&b->mu);
    return waits;
}

/* ---- the counts ---------------------------------------------------------- */

/*
 * Under the lock: the process's counts of one step (bo_tally), the common
 * case of a call that ended with one attempt and no failure the short way.
 */
static inline void tally_own(bo_block *b, bo_tally t)
{
    bo_block_counts *c = &b->counts;
    unsigned w = t.what;
    if (w == (BO_TALLY_ATTEMPT | BO_TALLY_END) && t.cause == BO_CAUSE_NONE) {
        c->attempts++;
        c->calls++;
        return;
    }
    c->attempts += (w & BO_TALLY_ATTEMPT) != 0;
    c->retries += (w & BO_TALLY_RETRY) != 0;
    c->throttled += (w & BO_TALLY_THROTTLE) != 0;
    c->calls += (w & BO_TALLY_END) != 0;
    c->failed += (w & BO_TALLY_FAILED) != 0;
    c->gave_up += (w & BO_TALLY_GAVE_UP) != 0;
    c->budget_delayed += (w & BO_TALLY_BUDGET) != 0;
}

/*
 * Under the slot's lock: the same increments host-wide (plain stores: the
 * slot's lock guards them, but wait_ns), with the attempt's kind of
 * throttle and the last throttle's time.
 */
static inline void tally_slot(bo_share_counts *h, bo_tally t, int64_t now_ns)
{
    unsigned w = t.what;
    if (w == (BO_TALLY_ATTEMPT | BO_TALLY_END) && t.cause == BO_CAUSE_NONE) {
        h->attempts++;
        h->calls++;
        return;
    }
    h->attempts += (w & BO_TALLY_ATTEMPT) != 0;
    h->retries += (w & BO_TALLY_RETRY) != 0;
    h->calls += (w & BO_TALLY_END) != 0;
    h->failed += (w & BO_TALLY_FAILED) != 0;
    h->gave_up += (w & BO_TALLY_GAVE_UP) != 0;
    h->budget_delayed += (w & BO_TALLY_BUDGET) != 0;
    if ((w & BO_TALLY_ATTEMPT) && t.cause > BO_CAUSE_NONE && t.cause < BO_CAUSE_COUNT)
        h->throttled[t.cause]++;
    if (w & BO_TALLY_THROTTLE)
        h->last_throttle_ns = now_ns;
}

/* ---- the block's own state ---------------------------------------------- */

/* The block's own lock, unless the block was attached while this thread
 * waited for it: a block waiting for an entry is attached under mu
 * (bo_block_share_retry), and from then on the slot's lock is the block's. */
static bo_dest *own_lock(bo_block *b)
{
    pthread_mutex_lock(&b->mu);
    const bo_block_backend *be = backend(b);
    if (be == &k_own)
        return &b->d;
    pthread_mutex_unlock(&b->mu);
    return be->lock(b);
}

static bo_dest *own_lock_idle(bo_block *b, int64_t until_ns)
{
    (void)until_ns;
    return own_lock(b);
}

static void own_unlock(bo_block *b)
{
    pthread_mutex_unlock(&b->mu);
}

static void own_wait(bo_block *b, int64_t until_ns)
{
    struct timespec ts = {.tv_sec = (time_t)(until_ns / BO_NS_PER_S),
                          .tv_nsec = (long)(until_ns % BO_NS_PER_S)};
    pthread_cond_timedwait(&b->cv, &b->mu, &ts);
}

static void own_nothing(bo_block *b)
{
    (void)b;
}

static void own_waiting(bo_block *b, int64_t now_ns)
{
    (void)b;
    (void)now_ns;
}

/* A slot of the window came free: every waiting call wakes. */
static void own_released(bo_block *b, bool held)
{
    (void)held;
    pthread_cond_broadcast(&b->cv);
}

static void own_completed(bo_block *b, bo_tally t, bool success, int64_t now_ns)
{
    (void)success;
    (void)now_ns;
    tally_own(b, t);
    pthread_cond_broadcast(&b->cv);
}

static void own_count(bo_block *b, bo_tally t, int64_t now_ns)
{
    (void)now_ns;
    tally_own(b, t);
}

/* The process's own total of the time waited is the call room's. */
static void own_waited(bo_block *b, int64_t ns)
{
    (void)b;
    (void)ns;
}

static const bo_block_backend k_own = {
    .lock = own_lock,
    .lock_idle = own_lock_idle,
    .unlock = own_unlock,
    .wait = own_wait,
    .admitted = own_nothing,
    .waiting = own_waiting,
    .released = own_released,
    .completed = own_completed,
    .count = own_count,
    .waited = own_waited,
};

/* ---- the host-wide slot ------------------------------------------------- */

static bo_dest *host_lock(bo_block *b)
{
    bo_share_slot *s = b->shared;
    bo_share_lock(s);
    return &s->d;
}

/* A block no call uses (refs 0, which the shard lock keeps so) waits for
 * its slot's lock until until_ns only: NULL when it was not taken. */
static bo_dest *host_lock_idle(bo_block *b, int64_t until_ns)
{
    if (__atomic_load_n(&b->refs, __ATOMIC_ACQUIRE) != 0)
        return host_lock(b);
    return bo_share_lock_until(b->shared, until_ns) ? &b->shared->d : NULL;
}

static void host_unlock(bo_block *b)
{
    bo_share_unlock(b->shared);
}

static void host_wait(bo_block *b, int64_t until_ns)
{
    bo_share_wait(b->shared, b->share_idx, until_ns);
}

/* The admitted attempt's lease, named after this process. */
static void host_admitted(bo_block *b)
{
    bo_share_lease_take(b->shared, b->share_idx);
}

/* Dead processes' leases go back; `backoff --status` sees the call wait. */
static void host_waiting(bo_block *b, int64_t now_ns)
{
    bo_share_waiting(b->shared, b->share_idx, now_ns);
}

/* The calls waiting for room wake, of every process (not those waiting for
 * a time: bo_share_wake). */
static void host_released(bo_block *b, bool held)
{
    if (held)
        bo_share_lease_drop(b->shared, b->share_idx);
    bo_share_wake(b->shared);
}

static void host_completed(bo_block *b, bo_tally t, bool success, int64_t now_ns)
{
    bo_share_slot *s = b->shared;
    tally_own(b, t);
    tally_slot(&s->counts, t, now_ns);
    bo_share_lease_drop(s, b->share_idx);
    bo_share_note(s, success, (t.what & BO_TALLY_THROTTLE) != 0, now_ns);
    bo_share_wake(s);
}

static void host_count(bo_block *b, bo_tally t, int64_t now_ns)
{
    tally_own(b, t);
    tally_slot(&b->shared->counts, t, now_ns);
}

/* One atomic add, no lock: a call learns its wait after it, unlocked. */
static void host_waited(bo_block *b, int64_t ns)
{
    __atomic_add_fetch(&b->shared->counts.wait_ns, (uint64_t)ns, __ATOMIC_RELAXED);
}

static const bo_block_backend k_host = {
    .lock = host_lock,
    .lock_idle = host_lock_idle,
    .unlock = host_unlock,
    .wait = host_wait,
    .admitted = host_admitted,
    .waiting = host_waiting,
    .released = host_released,
    .completed = host_completed,
    .count = host_count,
    .waited = host_waited,
};

/* ---- the fleet ---------------------------------------------------------- */

bool bo_block_fleet_on(void)
{
    return bo_redis_active();
}

bo_fleet_answer bo_block_fleet_admit(bo_block *b, bo_call *call, int64_t now_ns,
                                     int64_t *until_ns)
{
    return bo_redis_admit(b->key, now_ns, &call->fleet_lease, &call->fleet_ticket, until_ns);
}

void bo_block_fleet_complete(bo_block *b, bo_call *call, const bo_outcome *o)
{
    bo_redis_complete(b->key, &call->fleet_lease, o);
}

void bo_block_fleet_cancel(bo_block *b, bo_call *call)
{
    bo_redis_cancel(b->key, &call->fleet_lease);
}

void bo_block_fleet_leave(bo_block *b, bo_call *call)
{
    bo_redis_leave_queue(b->key, &call->fleet_ticket);
}

/* ---- the stats ---------------------------------------------------------- */

/* Under the block's shard lock: its counts and window to the totals (its
 * window left out when its slot's lock was not had in time). */
void bo_block_sum(bo_block *b, bo_block_totals *t, uint64_t *best, int64_t until_ns)
{
    bo_dest *d = backend(b)->lock_idle(b, until_ns);

    if (b->counts.attempts >= *best && d != NULL) {
        *best = b->counts.attempts;
        t->window = d->window.cwnd;
    }
    if (b->cwnd_max > t->window_max)
        t->window_max = b->cwnd_max;
    t->counts.calls += b->counts.calls;
    t->counts.attempts += b->counts.attempts;
    t->counts.retries += b->counts.retries;
    t->counts.throttled += b->counts.throttled;
    t->counts.failed += b->counts.failed;
    t->counts.gave_up += b->counts.gave_up;
    t->counts.budget_delayed += b->counts.budget_delayed;
    if (d != NULL)
        bo_block_unlock(b);
}

static uint64_t load(const uint64_t *c)
{
    return __atomic_load_n(c, __ATOMIC_RELAXED);
}

void bo_block_sum_retired(bo_block_totals *t)
{
    double window_max;
    __atomic_load(&g_retired_window_max, &window_max, __ATOMIC_RELAXED);
    if (window_max > t->window_max)
        t->window_max = window_max;
    t->counts.calls += load(&g_retired.calls);
    t->counts.attempts += load(&g_retired.attempts);
    t->counts.retries += load(&g_retired.retries);
    t->counts.throttled += load(&g_retired.throttled);
    t->counts.failed += load(&g_retired.failed);
    t->counts.gave_up += load(&g_retired.gave_up);
    t->counts.budget_delayed += load(&g_retired.budget_delayed);
}
