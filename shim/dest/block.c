/*
 * block.c: a destination block's state and its lock, whichever backend
 * holds it (dest.h): the block's own mutex and condition variable
 * (BACKOFF_SHARE=process), the host-wide slot it is attached to (share.c),
 * and the fleet's word through Redis (redis.c); and the counts: the
 * process's, and the same host-wide in the slot (the metrics').
 */
#include "dest/block.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "bo_time.h"
#include "core/core.h"
#include "dest/redis.h"
#include "dest/share.h"

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

void bo_block_init(bo_block *b, const bo_config *cfg)
{
    /* Adaptive: the critical sections are a few counter updates, so a
     * short spin beats a futex sleep when threads collide. */
    bo_core_mutex_init(&b->mu, PTHREAD_MUTEX_ADAPTIVE_NP);
    init_cond(&b->cv);
    bo_dest_init(&b->d, cfg, bo_core_now_ns());
    b->cwnd_max = b->d.window.cwnd;
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
    add(&g_retired.budget_refused, b->counts.budget_refused);
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

/* The block's own lock, unless the block was attached while this thread
 * waited for it: a block waiting for an entry is attached under mu
 * (share_retry), and from then on the slot's lock is the block's. */
__attribute__((noinline)) static bo_dest *lock_own(bo_block *b)
{
    pthread_mutex_lock(&b->mu);
    bo_share_slot *s = __atomic_load_n(&b->shared, __ATOMIC_ACQUIRE);
    if (s == NULL)
        return &b->d;
    pthread_mutex_unlock(&b->mu);
    bo_share_lock(s);
    return &s->d;
}

bo_dest *bo_block_lock(bo_block *b)
{
    bo_share_slot *s = __atomic_load_n(&b->shared, __ATOMIC_ACQUIRE);
    if (s != NULL) {
        bo_share_lock(s);
        return &s->d;
    }
    return lock_own(b);
}

void bo_block_unlock(bo_block *b)
{
    if (b->shared != NULL)
        bo_share_unlock(b->shared);
    else
        pthread_mutex_unlock(&b->mu);
}

void bo_block_wait(bo_block *b, int64_t until_ns)
{
    if (b->shared != NULL) {
        bo_share_wait(b->shared, b->share_idx, until_ns);
        return;
    }
    struct timespec ts = {.tv_sec = (time_t)(until_ns / BO_NS_PER_S),
                          .tv_nsec = (long)(until_ns % BO_NS_PER_S)};
    pthread_cond_timedwait(&b->cv, &b->mu, &ts);
}

void bo_block_admitted(bo_block *b)
{
    if (b->shared != NULL)
        bo_share_lease_take(b->shared, b->share_idx);
}

void bo_block_waiting(bo_block *b, int64_t now_ns)
{
    if (b->shared != NULL)
        bo_share_waiting(b->shared, b->share_idx, now_ns);
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
            b->share_idx = idx;
            b->share_gen = gen;
            __atomic_store_n(&b->shared, s, __ATOMIC_RELEASE);
            __atomic_store_n(&b->share_wait, 0, __ATOMIC_RELEASE);
            waits = false;
        } else {
            b->share_retry_ns = now_ns + BO_BLOCK_SHARE_RETRY_NS;
        }
    }
    pthread_mutex_unlock(&b->mu);
    return waits;
}

/* A slot of the window came free: the calls waiting for room wake (host-wide,
 * not those waiting for a time: bo_share_wake). */
static void wake(bo_block *b)
{
    if (b->shared != NULL)
        bo_share_wake(b->shared);
    else
        pthread_cond_broadcast(&b->cv);
}

void bo_block_release(bo_block *b, bo_dest *d, bo_call *call)
{
    bool held = call->phase == BO_PHASE_ATTEMPT;
    bo_dest_cancel(d, call);
    if (b->shared != NULL && held)
        bo_share_lease_drop(b->shared, b->share_idx);
    wake(b);
}

/*
 * Under the lock: the process's counts and, attached, the slot's, by the
 * same increments (the slot's are plain stores under its lock but wait_ns),
 * but for the counts of a call that ended with one attempt and no failure,
 * the commonest by far, which take the short way.
 */
static void tally_rest(bo_block *b, bo_tally t, int64_t now_ns)
{
    bo_block_counts *c = &b->counts;
    unsigned w = t.what;
    c->attempts += (w & BO_TALLY_ATTEMPT) != 0;
    c->retries += (w & BO_TALLY_RETRY) != 0;
    c->throttled += (w & BO_TALLY_THROTTLE) != 0;
    c->calls += (w & BO_TALLY_END) != 0;
    c->failed += (w & BO_TALLY_FAILED) != 0;
    c->gave_up += (w & BO_TALLY_GAVE_UP) != 0;
    c->budget_refused += (w & BO_TALLY_BUDGET) != 0;
    if (b->shared == NULL)
        return;
    bo_share_counts *h = &b->shared->counts;
    h->attempts += (w & BO_TALLY_ATTEMPT) != 0;
    h->retries += (w & BO_TALLY_RETRY) != 0;
    h->calls += (w & BO_TALLY_END) != 0;
    h->failed += (w & BO_TALLY_FAILED) != 0;
    h->gave_up += (w & BO_TALLY_GAVE_UP) != 0;
    h->budget_refused += (w & BO_TALLY_BUDGET) != 0;
    if ((w & BO_TALLY_ATTEMPT) && t.cause > BO_CAUSE_NONE && t.cause < BO_CAUSE_COUNT)
        h->throttled[t.cause]++;
    if (w & BO_TALLY_THROTTLE)
        h->last_throttle_ns = now_ns;
}

static inline void tally(bo_block *b, bo_tally t, int64_t now_ns)
{
    if (t.what == (BO_TALLY_ATTEMPT | BO_TALLY_END) && t.cause == BO_CAUSE_NONE) {
        b->counts.attempts++;
        b->counts.calls++;
        if (b->shared != NULL) {
            b->shared->counts.attempts++;
            b->shared->counts.calls++;
        }
        return;
    }
    tally_rest(b, t, now_ns);
}

void bo_block_completed(bo_block *b, bo_tally t, bool success, int64_t now_ns)
{
    tally(b, t, now_ns);
    if (b->shared != NULL) {
        bo_share_lease_drop(b->shared, b->share_idx);
        bo_share_note(b->shared, success, (t.what & BO_TALLY_THROTTLE) != 0, now_ns);
    }
    wake(b);
}

void bo_block_count(bo_block *b, bo_tally t, int64_t now_ns)
{
    tally_rest(b, t, now_ns);
}

void bo_block_waited(bo_block *b, int64_t ns)
{
    if (b != NULL && b->shared != NULL && ns > 0)
        __atomic_add_fetch(&b->shared->counts.wait_ns, (uint64_t)ns, __ATOMIC_RELAXED);
}

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

/*
 * Under the block's shard lock.  A block no call uses (refs 0, which the
 * shard lock keeps so) may still be attached to a slot whose lock another
 * process holds, stopped: that lock is waited for until until_ns only.
 */
void bo_block_sum(bo_block *b, bo_block_totals *t, uint64_t *best, int64_t until_ns)
{
    bo_dest *d;

    if (b->shared != NULL && __atomic_load_n(&b->refs, __ATOMIC_ACQUIRE) == 0)
        d = bo_share_lock_until(b->shared, until_ns) ? &b->shared->d : NULL;
    else
        d = bo_block_lock(b);
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
    t->counts.budget_refused += b->counts.budget_refused;
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
    t->counts.budget_refused += load(&g_retired.budget_refused);
}
