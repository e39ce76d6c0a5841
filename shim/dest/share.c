/*
 * share.c: the host-wide backend of the destination table (share.h): its
 * slots.  A key's slot is found through the file's hash chains, else
 * handed out (one never used, a free one, else the least recently used of
 * a sample nobody uses); the process holds it through an entry
 * (share_entry.c).  Waiting is a futex on the slot's sequence number,
 * woken by completions, always bounded.
 *
 * Lock order: the file's lock, then a slot's; never the other way.
 */
#include "dest/share.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bo_hash.h"
#include "core/core.h"
#include "dest/dest.h"
#include "dest/share_entry.h"
#include "dest/share_file.h"

_Static_assert(BO_SHARE_KEY_LEN == BO_DEST_KEY_LEN, "a slot holds any key a block holds");

#define CHUNK BO_SHARE_CHUNK_PROCS

static int g_opened; /* bo_core_once */

/* The key's hash (bo_share_key_hash), then the configuration's. */
static uint64_t hash_key(uint64_t key_hash, uint64_t cfg_hash)
{
    return bo_fnv1a_step(key_hash, cfg_hash);
}

/* What shapes a destination's state: processes that differ here never share. */
static uint64_t config_hash(const bo_config *cfg)
{
    uint64_t h = BO_FNV_INIT;
#define M(f) h = bo_fnv1a(h, &cfg->f, sizeof cfg->f)
    M(policy); M(base_ms); M(cap_ms); M(factor); M(jitter); M(window); M(window_max);
    M(beta); M(aimd_mode); M(up); M(down); M(down_after); M(pacing); M(ratelimit_headers);
#undef M
    return h;
}

/* One line under BACKOFF_VERBOSE. */
__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
    const bo_config *cfg = __atomic_load_n(&bo_share_me.cfg, __ATOMIC_RELAXED);
    va_list ap;

    if (cfg == NULL || !cfg->verbose)
        return;
    va_start(ap, fmt);
    bo_core_vline(fmt, ap);
    va_end(ap);
}

static void open_once(void)
{
    char why[PATH_MAX + 256];
    bool replaced;
    int saved = errno;

    bo_share_identify();
    bo_share_me.cfg_hash = config_hash(__atomic_load_n(&bo_share_me.cfg, __ATOMIC_RELAXED));
    bo_share_me.file = bo_share_map_file(true, why, sizeof why, &replaced, &bo_share_me.dev,
                                         &bo_share_me.ino);
    if (replaced && bo_share_me.file != NULL)
        say("backoff: BACKOFF_SHARE=host: replaced the shared state file: %s", why);
    else if (bo_share_me.file == NULL)
        say("backoff: BACKOFF_SHARE=host: shared state not used, this process keeps its "
            "own (%s; `backoff --reset` makes a new file)", why);
    errno = saved;
}

/* Slots looked at for the least recently used one (as Redis samples). */
#define EVICT_SAMPLE 32

/*
 * A slot for a new key, under the file's lock: one never used while there
 * are some (in order, so the file's pages are touched as it fills), else a
 * free one, else the least
 * recently used of EVICT_SAMPLE slots nobody is using (no busy entry: the
 * idle entries of processes that may come back are dropped, the slot's
 * generation bumped), from a cursor that goes round the file (an
 * approximate LRU that costs the same at any size; all slots when the
 * sample has none).  Sampled without the slots' locks, then checked under
 * the victim's: a process going idle takes no lock, but one going busy
 * again takes the slot's.  When every slot is busy, the dead processes'
 * entries are reaped once (a lock and a /proc look per entry) and the
 * choice made again.  Returned locked, out of its hash chain.
 */
static bo_share_slot *take_slot(bo_share_file *f, int64_t now)
{
    unsigned fresh = bo_share_hiwater(f);
    if (fresh < BO_SHARE_SLOTS) { /* never used: its pages are touched from now on */
        bo_share_slot *s = &f->slots[fresh];
        /* Its pages first: on a full tmpfs, writing an unallocated page of a
         * shared mapping raises SIGBUS in the program.  No room: this
         * destination stays process-local (NULL), as when every slot is held. */
        if (!bo_share_reserve(f, s, sizeof *s))
            return NULL;
        bo_share_mutex_init(&s->mu);
        __atomic_store_n(&f->hiwater, fresh + 1, __ATOMIC_RELEASE);
        bo_share_lock(s);
        return s;
    }
    for (int pass = 0; pass < 2; pass++) {
        bo_share_slot *victim = NULL;
        int64_t oldest = INT64_MAX;
        unsigned start = f->cursor % BO_SHARE_SLOTS;
        for (unsigned k = 0; k < BO_SHARE_SLOTS; k++) {
            if (k >= EVICT_SAMPLE && victim != NULL)
                break;
            bo_share_slot *s = &f->slots[(start + k) % BO_SHARE_SLOTS];
            if (!s->used) {
                victim = s;
                break;
            }
            int64_t t = __atomic_load_n(&s->last_used_ns, __ATOMIC_RELAXED);
            if (!bo_share_slot_busy(s) && t < oldest) {
                victim = s;
                oldest = t;
            }
        }
        f->cursor = start + EVICT_SAMPLE;
        if (victim != NULL) {
            bo_share_lock(victim);
            if (bo_share_slot_idle(victim)) { /* a process may have gone busy again since */
                bo_share_drop_idle(victim);
                if (victim->used)
                    bo_share_chain_unlink(f, victim);
                return victim;
            }
            bo_share_unlock(victim);
        }
        if (pass == 0) {
            for (unsigned i = 0; i < BO_SHARE_SLOTS; i++) { /* all handed out */
                bo_share_lock(&f->slots[i]);
                bo_share_reap(&f->slots[i], now, true);
                bo_share_unlock(&f->slots[i]);
            }
        }
    }
    return NULL;
}

/* Under the slot's lock: the counts start from zero (a new key, --reset);
 * wait_ns is added to without the lock. */
void bo_share_counts_clear(bo_share_slot *s)
{
    memset(s->counts.throttled, 0, sizeof s->counts.throttled);
    s->counts.calls = s->counts.attempts = s->counts.retries = 0;
    s->counts.failed = s->counts.gave_up = s->counts.budget_delayed = 0;
    s->counts.last_throttle_ns = 0;
    __atomic_store_n(&s->counts.wait_ns, 0, __ATOMIC_RELAXED);
}

/* The state of a destination as new (leases, if any, stay counted). */
void bo_share_fresh_state(bo_share_slot *s, const bo_config *cfg, int64_t now)
{
    unsigned inflight = 0;
    bo_share_chunk *c;
    unsigned n;
    BO_SHARE_FOR_CHUNKS(s, c, n)
        for (unsigned i = 0; i < CHUNK; i++)
            inflight += c->procs[i].inflight;
    bo_dest_init(&s->d, cfg, now);
    s->d.window.inflight = inflight;
    s->last_throttle_ns = s->last_success_ns = 0;
    s->attempts = s->throttled = s->successes = 0;
}

void bo_share_init(const bo_config *cfg)
{
    if (cfg->share == BO_SHARE_PROCESS || __atomic_load_n(&g_opened, __ATOMIC_ACQUIRE))
        return;
    __atomic_store_n(&bo_share_me.cfg, cfg, __ATOMIC_RELAXED); /* every caller passes the same */
    bo_core_once(&g_opened, open_once);
}

/* Under the slot's lock: nobody used it for long (or its clock is from
 * before a reboot), and nobody uses it now: its state starts fresh.  A
 * state that holds what the engine cannot have left there (a window below
 * 1, a number that is not finite, a hold past BACKOFF_CAP_MS: any process
 * of the user can write the file) is never obeyed: it starts fresh too,
 * busy or not (the leases stay counted). */
static void fresh_if_stale(bo_share_slot *s, const bo_config *cfg, int64_t now)
{
    int64_t used = __atomic_load_n(&s->last_used_ns, __ATOMIC_RELAXED);
    if ((now - used > BO_SHARE_STALE_NS || used > now) && !bo_share_slot_busy(s)) {
        bo_share_fresh_state(s, cfg, now);
    } else if (!bo_dest_sane(&s->d, cfg, now)) {
        say("backoff: BACKOFF_SHARE=host: the shared state of %.200s held values the "
            "library never sets (a window below 1, a wait past BACKOFF_CAP_MS...); it "
            "starts fresh", s->key);
        bo_share_fresh_state(s, cfg, now);
    }
}

/*
 * The mapping this process looks at is still the file's: false once it was
 * lost (the file shrank under it, or its header is gone: bo_share_lost),
 * said once under BACKOFF_VERBOSE.  Every attach and reuse looks: the
 * process goes on with its own state from there.
 */
static bool still_shared(bo_share_file *f)
{
    if (!bo_share_lost(f))
        return true;
    if (bo_share_lost_first())
        say("backoff: BACKOFF_SHARE=host: the shared state file was truncated or emptied "
            "under this process; it goes on with its own state");
    return false;
}

static void set_used_ns(bo_share_slot *s, int64_t now)
{
    __atomic_store_n(&s->last_used_ns, now, __ATOMIC_RELAXED);
}

bo_share_slot *bo_share_attach(const char *key, size_t len, uint64_t key_hash,
                               const bo_config *cfg, unsigned *idx, uint32_t *gen, bool *wait)
{
    bo_share_file *f;
    bo_share_slot *s = NULL;
    uint64_t ch, h;
    int64_t now;

    *wait = false;
    if (cfg->share == BO_SHARE_PROCESS || len >= BO_SHARE_KEY_LEN ||
        !__atomic_load_n(&g_opened, __ATOMIC_ACQUIRE))
        return NULL;
    f = bo_share_me.file;
    if (f == NULL || !still_shared(f))
        return NULL;
    ch = cfg == __atomic_load_n(&bo_share_me.cfg, __ATOMIC_RELAXED) ? bo_share_me.cfg_hash
                                                                    : config_hash(cfg);
    h = hash_key(key_hash, ch);
    now = bo_core_now_ns();
    bo_share_lock_file(f);
    s = bo_share_chain_find(f, key, h, ch);
    bool fresh = s == NULL;
    if (fresh) {
        if ((s = take_slot(f, now)) == NULL)
            goto out;
    } else {
        bo_share_lock(s);
    }
    if (fresh) {
        s->used = 1;
        s->gen++; /* another key: whoever held it idle attaches anew */
        s->hash = h;
        s->cfg_hash = ch;
        memcpy(s->key, key, len + 1);
        bo_share_chain_link(f, s);
        bo_share_fresh_state(s, cfg, now);
        bo_share_counts_clear(s);
    } else {
        bo_share_reap(s, now, false);
        fresh_if_stale(s, cfg, now);
    }
    int i = bo_share_self_entry(s, now, true);
    if (i < 0) {
        bo_share_unlock(s);
        s = NULL;
        *wait = true; /* the slot is there, its entries are not: ask again */
        goto out;
    }
    bo_share_entry_ref(bo_share_chunk_of(s, (unsigned)i), bo_share_entry_at(s, (unsigned)i));
    bo_share_trim_chunks(s);
    set_used_ns(s, now);
    *idx = (unsigned)i;
    *gen = s->gen;
    bo_share_unlock(s);
out:
    pthread_mutex_unlock(&f->mu);
    return s;
}

bool bo_share_reuse(bo_share_slot *s, unsigned idx, uint32_t gen, const bo_config *cfg)
{
    int64_t now = bo_core_now_ns();
    bo_share_proc *p;

    if (!still_shared(bo_share_me.file))
        return false;
    bo_share_lock(s);
    p = bo_share_own_entry(s, idx, gen);
    if (p != NULL) {
        fresh_if_stale(s, cfg, now);
        bo_share_entry_ref(bo_share_chunk_of(s, idx), p);
        set_used_ns(s, now);
    }
    bo_share_unlock(s);
    return p != NULL;
}

/* The futex bits: calls waiting for room in the window, and for a time. */
#define WAIT_ROOM 1u
#define WAIT_TIME 2u

/* Requests the window lets in flight now (a window below one still lets
 * one out). */
static double window_room(const bo_dest *d)
{
    double limit = d->window.cwnd < 1 ? 1 : d->window.cwnd;
    return limit - (double)d->window.inflight;
}

void bo_share_wait(bo_share_slot *s, unsigned idx, int64_t until_ns)
{
    /* a call that waits for room in the window is what a completion wakes;
     * one that waits for a time (a retry's, the pace's) wakes then */
    bool room = window_room(&s->d) < 1;
    uint32_t seq = __atomic_load_n(&s->seq, __ATOMIC_RELAXED);
    bo_share_proc *p = bo_share_entry_at(s, idx);
    struct timespec ts = {.tv_sec = (time_t)(until_ns / 1000000000LL),
                          .tv_nsec = (long)(until_ns % 1000000000LL)};
    int saved = errno;

    s->waiters++;
    p->waiters++;
    bo_share_unlock(s);
    /* Absolute CLOCK_MONOTONIC deadline; shared (not private) futex. */
    syscall(SYS_futex, &s->seq, FUTEX_WAIT_BITSET, seq, &ts, NULL, room ? WAIT_ROOM : WAIT_TIME);
    bo_share_lock(s);
    if (bo_share_is_self(p) && p->waiters > 0) {
        p->waiters--;
        if (s->waiters > 0)
            s->waiters--;
    }
    errno = saved;
}

/*
 * A completion wakes the calls waiting for room in the window, all of them:
 * they race for the room, as a thread of this process would.  Waking only
 * as many as the window has room for starved a process: a woken call that
 * lost the room to a call that never waited (the completing thread's next
 * one) waited again at the back of the futex's queue, and a forked child
 * behind 16 threads on a window of one waited 10 s and more (test_shim_fork).
 * The calls waiting for a time (a retry's, the pace's) are not woken: they
 * wake then.
 */
void bo_share_wake(bo_share_slot *s)
{
    __atomic_add_fetch(&s->seq, 1, __ATOMIC_RELEASE);
    if (s->waiters > 0) {
        int saved = errno;
        syscall(SYS_futex, &s->seq, FUTEX_WAKE_BITSET, INT_MAX, NULL, NULL, WAIT_ROOM);
        errno = saved;
    }
}

void bo_share_note(bo_share_slot *s, bool success, bool throttle, int64_t now)
{
    s->attempts++;
    set_used_ns(s, now);
    if (success) {
        s->successes++;
        s->last_success_ns = now;
    }
    if (throttle) {
        s->throttled++;
        s->last_throttle_ns = now;
    }
}

bo_share_file *bo_share_mapped(void)
{
    return __atomic_load_n(&g_opened, __ATOMIC_ACQUIRE) ? bo_share_me.file : NULL;
}

void bo_share_child_fork(void)
{
    bo_share_identify(); /* a new pid; the nonce stays: the same image */
}

bool bo_share_child_reattach(bo_share_slot *s, const char *key, uint32_t gen, unsigned *idx)
{
    int i = -1;

    if (!still_shared(bo_share_me.file))
        return false;
    bo_share_lock(s);
    /* The parent may have let the slot go since fork, and it may hold
     * another destination now: then the child attaches anew.  No chunk of
     * the pool without the file's lock: a child short of one, too. */
    if (s->used && s->gen == gen && strcmp(s->key, key) == 0)
        i = bo_share_self_entry(s, bo_core_now_ns(), false);
    if (i >= 0)
        bo_share_entry_ref(bo_share_chunk_of(s, (unsigned)i), bo_share_entry_at(s, (unsigned)i));
    bo_share_unlock(s);
    if (i < 0)
        return false;
    *idx = (unsigned)i;
    return true;
}
