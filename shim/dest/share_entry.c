/*
 * share_entry.c: the processes' entries in the host-wide slots, their
 * leases, and the slot's lock, whose holder's death they repair
 * (share_entry.h).
 *
 * An entry names its process by pid, start time and a nonce of the
 * library's image (exec keeps both others); it counts the process's blocks
 * in use, its attempts in flight (leases) and its waiting threads.  Dead
 * processes' entries and leases are reaped when a waiter or a newcomer
 * finds them gone (at most every BO_SHARE_REAP_NS per slot; waiters wake
 * at least every 200 ms, so within a second).
 *
 * A slot's own chunk of BO_SHARE_CHUNK_PROCS entries comes first, then
 * chunks of the file's pool chained to it, taken under the file's lock
 * when a newcomer finds no free entry (and no dead process's to reap) and
 * given back when the slot is dropped or two chunks' worth stand empty.  So
 * the processes of one destination are bounded by the pool only; a process
 * that finds none holds nothing here and asks again (block.c).
 */
#include "dest/share_entry.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "dest/share_file.h"

/*
 * A process's start time (/proc/PID/stat field 22); false when the process
 * is gone or a zombie (killed, not yet reaped by its parent: it holds
 * nothing any more).
 */
static bool proc_start(int32_t pid, uint64_t *start)
{
    char path[64], buf[1024];
    ssize_t n;
    int fd;

    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    n = bo_core_sys_read(fd, buf, sizeof buf - 1);
    bo_core_sys_close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    if (p == NULL || p[1] != ' ')
        return false;
    p += 2;
    if (*p == 'Z' || *p == 'X' || *p == 'x')
        return false;
    for (int field = 3; field < 22; field++) {
        p = strchr(p, ' ');
        if (p == NULL)
            return false;
        p++;
    }
    *start = strtoull(p, NULL, 10);
    return true;
}

void bo_share_identify(void)
{
    bo_share_me.pid = (int32_t)getpid();
    if (!proc_start(bo_share_me.pid, &bo_share_me.start))
        bo_share_me.start = 0;
    if (bo_share_me.nonce == 0) {
        bo_share_me.nonce = (uint64_t)bo_core_wall_ns() ^ ((uint64_t)bo_share_me.pid << 40) ^
                            (uint64_t)(uintptr_t)&bo_share_me.nonce;
        bo_share_me.nonce |= 1;
    }
}

bool bo_share_is_self(const bo_share_proc *p)
{
    return p->pid == bo_share_me.pid && p->start == bo_share_me.start &&
           p->nonce == bo_share_me.nonce;
}

static bool proc_alive(const bo_share_proc *p)
{
    uint64_t start;

    if (p->pid == bo_share_me.pid && p->start == bo_share_me.start)
        return p->nonce == bo_share_me.nonce; /* another nonce: our image before an exec */
    if (p->pid <= 0 || (kill(p->pid, 0) != 0 && errno == ESRCH))
        return false;
    return proc_start(p->pid, &start) && start == p->start;
}

/* Gone for sure: no such process any more (kill's answer only: a zombie or
 * a process whose pid was reused still looks alive; proc_alive tells). */
static bool proc_gone(const bo_share_proc *p)
{
    if (p->pid == bo_share_me.pid && p->start == bo_share_me.start)
        return p->nonce != bo_share_me.nonce;
    return p->pid <= 0 || (kill(p->pid, 0) != 0 && errno == ESRCH);
}

#define CHUNK BO_SHARE_CHUNK_PROCS

static uint32_t slot_ref(const bo_share_slot *s)
{
    return (uint32_t)(s - bo_share_me.file->slots) + 1;
}

static uint64_t entry_bit(const bo_share_chunk *c, const bo_share_proc *p)
{
    return 1ULL << (p - c->procs);
}

/* Under the slot's lock: one more block of the entry's process in use. */
void bo_share_entry_ref(bo_share_chunk *c, bo_share_proc *p)
{
    if (__atomic_fetch_add(&p->refs, 1, __ATOMIC_RELAXED) == 0)
        __atomic_fetch_or(&c->busy, entry_bit(c, p), __ATOMIC_RELAXED);
}

/* Take a free entry of c for this process (under the slot's lock). */
static void claim_entry(bo_share_slot *s, bo_share_chunk *c, bo_share_proc *p)
{
    __atomic_add_fetch(&s->m.nattached, 1, __ATOMIC_RELAXED);
    c->nattached++;
    __atomic_store_n(&p->refs, 0, __ATOMIC_RELAXED);
    p->inflight = p->waiters = 0;
    p->wait_ns = 0;
    p->pid = bo_share_me.pid;
    p->start = bo_share_me.start;
    p->nonce = bo_share_me.nonce;
}

/* Free an entry (under the slot's lock). */
static void free_entry(bo_share_slot *s, bo_share_chunk *c, bo_share_proc *p)
{
    if (p->pid != 0) {
        __atomic_sub_fetch(&s->m.nattached, 1, __ATOMIC_RELAXED);
        if (c->nattached > 0)
            c->nattached--;
    }
    __atomic_fetch_and(&c->busy, ~entry_bit(c, p), __ATOMIC_RELAXED);
    __atomic_store_n(&p->refs, 0, __ATOMIC_RELAXED);
    p->pid = 0;
    p->start = p->nonce = 0;
    p->inflight = p->waiters = 0;
    p->wait_ns = 0;
}

/* Some process uses the slot: a busy bit in one of its chunks.  Read
 * without the slot's lock by the eviction's sampling, which holds the
 * file's (the chain does not change); bo_share_slot_idle tells under the slot's. */
bool bo_share_slot_busy(bo_share_slot *s)
{
    bo_share_chunk *c;
    unsigned n;
    BO_SHARE_FOR_CHUNKS(s, c, n)
        if (__atomic_load_n(&c->busy, __ATOMIC_ACQUIRE) != 0)
            return true;
    return false;
}

/* Under the slot's lock: no entry busy, nothing in flight (eviction, --reset). */
bool bo_share_slot_idle(bo_share_slot *s)
{
    bo_share_chunk *c;
    unsigned n;
    if (bo_share_slot_busy(s))
        return false;
    BO_SHARE_FOR_CHUNKS(s, c, n) {
        for (unsigned i = 0, left = c->nattached; i < CHUNK && left > 0; i++) {
            const bo_share_proc *p = &c->procs[i];
            if (p->pid == 0)
                continue;
            left--;
            if (!bo_share_entry_idle(p))
                return false;
        }
    }
    return true;
}

/* Under the slot's lock (and the file's, which the chunks go back to),
 * bo_share_slot_idle: drop the idle entries of processes that may come
 * back; their next reuse sees the new generation. */
void bo_share_drop_idle(bo_share_slot *s)
{
    bo_share_chunk *c;
    unsigned n;
    BO_SHARE_FOR_CHUNKS(s, c, n)
        for (unsigned i = 0; i < CHUNK; i++)
            if (c->procs[i].pid != 0)
                free_entry(s, c, &c->procs[i]);
    bo_share_release_chunks(s, true);
    s->gen++;
}

/* Give back a dead process's leases and waiters; free its entry. */
static void drop_proc(bo_share_slot *s, bo_share_chunk *c, bo_share_proc *p)
{
    unsigned *in = &s->d.window.inflight;
    *in = *in > p->inflight ? *in - p->inflight : 0;
    s->waiters = s->waiters > p->waiters ? s->waiters - p->waiters : 0;
    free_entry(s, c, p);
}

/*
 * Dead processes' entries go, with their leases and waiters.  Forced (a
 * newcomer, a repair, --status, eviction): every entry is checked fully
 * (/proc: zombies and reused pids).  Else at most every BO_SHARE_REAP_NS
 * (a waiting call): entries with leases fully, since their slots are what
 * the others wait for, busy ones by kill() alone, idle ones not at all
 * (they hold nothing; a newcomer takes them over), so that a slot of
 * thousands of processes costs a waiter one system call per busy process.
 */
void bo_share_reap(bo_share_slot *s, int64_t now, bool force)
{
    if (!force && now - s->reaped_ns < BO_SHARE_REAP_NS && now >= s->reaped_ns)
        return;
    s->reaped_ns = now;
    int saved = errno;
    bo_share_chunk *c;
    unsigned n;
    BO_SHARE_FOR_CHUNKS(s, c, n) {
        /* entries in use are counted: stop once all were seen */
        for (unsigned i = 0, left = c->nattached; i < CHUNK && left > 0; i++) {
            bo_share_proc *p = &c->procs[i];
            if (p->pid == 0)
                continue;
            left--;
            bool dead;
            if (force || p->inflight > 0)
                dead = !proc_alive(p);
            else if (bo_share_entry_refs(p) != 0 || p->waiters != 0)
                dead = proc_gone(p);
            else
                continue;
            if (dead)
                drop_proc(s, c, p);
        }
    }
    errno = saved;
}

/* Under the slot's lock: a newcomer found no entry free.  Entries of
 * processes gone (kill's answer) go, at most every BO_SHARE_REAP_NS: a
 * slot of thousands costs one system call a process, not four. */
static void reap_gone(bo_share_slot *s, int64_t now)
{
    if (now - s->reaped_ns < BO_SHARE_REAP_NS && now >= s->reaped_ns)
        return;
    s->reaped_ns = now;
    int saved = errno;
    bo_share_chunk *c;
    unsigned n;
    BO_SHARE_FOR_CHUNKS(s, c, n)
        for (unsigned i = 0, left = c->nattached; i < CHUNK && left > 0; i++) {
            bo_share_proc *p = &c->procs[i];
            if (p->pid == 0)
                continue;
            left--;
            if (proc_gone(p) || (p->inflight > 0 && !proc_alive(p)))
                drop_proc(s, c, p);
        }
    errno = saved;
}

/*
 * A chunk of the pool for s, under the file's lock and s's: a free one,
 * else one never handed out (its pages allocated first: on a full tmpfs,
 * writing an unallocated page of a shared mapping raises SIGBUS in the
 * program), linked at the head of s's chain; NULL when there is none.
 */
static bo_share_chunk *grow(bo_share_slot *s)
{
    bo_share_file *f = bo_share_me.file;
    bo_share_chunk *c = NULL;
    uint32_t ref = f->pool_free;
    unsigned fresh = bo_share_pool_hiwater(f);

    if (ref != 0 && ref <= fresh && f->pool[ref - 1].owner == 0) {
        c = &f->pool[ref - 1];
        f->pool_free = c->next;
    } else {
        f->pool_free = 0; /* a list a death left wrong is made anew by repair_file_v */
        if (fresh >= BO_SHARE_POOL_CHUNKS)
            return NULL;
        if (!bo_share_reserve(f, &f->pool[fresh], sizeof *c))
            return NULL;
        c = &f->pool[fresh];
        ref = fresh + 1;
        __atomic_store_n(&f->pool_hiwater, fresh + 1, __ATOMIC_RELEASE);
    }
    memset(c->procs, 0, sizeof c->procs);
    c->busy = 0;
    c->nattached = 0;
    /* named first, then linked: a death between leaves it off the chain,
     * which repair_file_v gives back */
    __atomic_store_n(&c->owner, slot_ref(s), __ATOMIC_RELAXED);
    c->next = s->m.own.next;
    __atomic_store_n(&s->m.own.next, ref, __ATOMIC_RELEASE);
    s->m.nchunks++;
    return c;
}

/*
 * Under the file's lock and s's: s's pool chunks with no entry in use go
 * back to the pool (all of them: the slot is dropped, its entries freed).
 * Unlinked first, then named free: a death between leaves a chunk off
 * every chain, which repair_file_v gives back.  A process whose idle
 * attachment named an entry there finds it is not its own any more
 * (bo_share_own_entry checks the chunk's slot) and attaches anew.
 */
void bo_share_release_chunks(bo_share_slot *s, bool all)
{
    bo_share_file *f = bo_share_me.file;
    bo_share_chunk *prev = &s->m.own;
    for (unsigned n = 0; n < BO_SHARE_POOL_CHUNKS; n++) {
        bo_share_chunk *c = bo_share_chunk_next(f, s, prev);
        if (c == NULL) {
            prev->next = 0; /* a link that named no chunk of s */
            break;
        }
        if (!all && c->nattached != 0) {
            prev = c;
            continue;
        }
        uint32_t ref = (uint32_t)(c - f->pool) + 1;
        __atomic_store_n(&prev->next, c->next, __ATOMIC_RELEASE);
        if (s->m.nchunks > 0)
            s->m.nchunks--;
        __atomic_store_n(&c->owner, 0, __ATOMIC_RELAXED);
        c->busy = 0;
        c->nattached = 0;
        c->next = f->pool_free;
        f->pool_free = ref;
    }
}

/* Under the file's lock and s's: chunks emptied by processes gone go back
 * while at least two chunks' worth of entries are free (not on every
 * departure: a slot at a chunk's edge would take and give one each time). */
void bo_share_trim_chunks(bo_share_slot *s)
{
    unsigned room = CHUNK * (1 + s->m.nchunks);
    if (s->m.nchunks > 0 && s->m.nattached + 2 * CHUNK <= room)
        bo_share_release_chunks(s, false);
}

/* Under the slot's lock: an idle entry of another process, whose process
 * may come back to it (its reuse then finds the entry not its own and
 * attaches anew); its busy bit is clear, so its process is done with it. */
static bool idle_entry(bo_share_slot *s, bo_share_chunk **cp, bo_share_proc **pp)
{
    bo_share_chunk *c;
    unsigned n;
    BO_SHARE_FOR_CHUNKS(s, c, n) {
        uint64_t busy = __atomic_load_n(&c->busy, __ATOMIC_ACQUIRE);
        if ((unsigned)__builtin_popcountll(busy) >= c->nattached)
            continue; /* every entry in use is busy */
        for (unsigned i = 0; i < CHUNK; i++) {
            bo_share_proc *p = &c->procs[i];
            if (p->pid != 0 && !(busy & (1ULL << i)) && bo_share_entry_idle(p)) {
                *cp = c;
                *pp = p;
                return true;
            }
        }
    }
    return false;
}

/* A free entry of s (the chunks with one, first). */
static bool free_entry_of(bo_share_slot *s, bo_share_chunk **cp, bo_share_proc **pp)
{
    bo_share_chunk *c;
    unsigned n;
    if (__atomic_load_n(&s->m.nattached, __ATOMIC_RELAXED) >= CHUNK * (1 + s->m.nchunks))
        return false;
    BO_SHARE_FOR_CHUNKS(s, c, n) {
        if (c->nattached >= CHUNK)
            continue;
        for (unsigned i = 0; i < CHUNK; i++)
            if (c->procs[i].pid == 0) {
                *cp = c;
                *pp = &c->procs[i];
                return true;
            }
    }
    return false;
}

/*
 * This process's entry in s (created), or -1 when there is none to have:
 * the slot's chunks all taken by live processes using the destination (a
 * dead one's is reaped, an idle one's taken over) and, with the file's
 * lock held (grow), no chunk left in the pool.  Our image before an exec
 * (same pid and start, another nonce) is gone: its entries are dropped.
 */
int bo_share_self_entry(bo_share_slot *s, int64_t now, bool can_grow)
{
    bo_share_chunk *c, *fc = NULL;
    bo_share_proc *fp = NULL;
    unsigned n;

    BO_SHARE_FOR_CHUNKS(s, c, n) {
        /* Entries in use are counted: once all were seen and a free one
         * found, stop. */
        unsigned left = c->nattached;
        for (unsigned i = 0; i < CHUNK && (left > 0 || fp == NULL); i++) {
            bo_share_proc *p = &c->procs[i];
            if (p->pid == 0) {
                if (fp == NULL) {
                    fc = c;
                    fp = p;
                }
                continue;
            }
            if (left > 0)
                left--;
            if (p->pid == bo_share_me.pid) {
                if (bo_share_is_self(p))
                    return (int)bo_share_entry_index(bo_share_me.file, s, c, i);
                if (p->start == bo_share_me.start)
                    drop_proc(s, c, p); /* our image before an exec: gone */
            }
        }
    }
    if (fp == NULL) {
        reap_gone(s, now);
        free_entry_of(s, &fc, &fp);
    }
    if (fp == NULL && can_grow && (fc = grow(s)) != NULL)
        fp = &fc->procs[0];
    if (fp == NULL && idle_entry(s, &fc, &fp))
        free_entry(s, fc, fp);
    if (fp == NULL)
        return -1;
    claim_entry(s, fc, fp);
    return (int)bo_share_entry_index(bo_share_me.file, s, fc, (unsigned)(fp - fc->procs));
}

/* Our entry of the attachment (idx, gen), under the slot's lock; NULL:
 * it was dropped (eviction, --reset, taken over while idle, its chunk
 * given back to the pool). */
bo_share_proc *bo_share_own_entry(bo_share_slot *s, unsigned idx, uint32_t gen)
{
    if (s->gen != gen || idx >= BO_SHARE_MAX_ENTRIES)
        return NULL;
    if (idx >= CHUNK && __atomic_load_n(&bo_share_chunk_of(s, idx)->owner, __ATOMIC_RELAXED) !=
                            slot_ref(s))
        return NULL;
    bo_share_proc *p = bo_share_entry_at(s, idx);
    return bo_share_is_self(p) ? p : NULL;
}

void bo_share_idle(bo_share_slot *s, unsigned idx)
{
    bo_share_proc *p = bo_share_entry_at(s, idx);
    uint32_t n = __atomic_load_n(&p->refs, __ATOMIC_RELAXED);

    /* The entry is busy, so nobody else drops or changes it: the refs
     * first, then the bit, which lets eviction and takeover see it idle. */
    while (n > 0 && !__atomic_compare_exchange_n(&p->refs, &n, n - 1, false,
                                                 __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
    }
    if (n == 1) {
        bo_share_chunk *c = bo_share_chunk_of(s, idx);
        __atomic_fetch_and(&c->busy, ~entry_bit(c, p), __ATOMIC_SEQ_CST);
    }
}

void bo_share_detach(bo_share_slot *s, unsigned idx, uint32_t gen, int64_t until_ns)
{
    if (s == NULL)
        return;
    if (until_ns == 0)
        bo_share_lock(s);
    else if (!bo_share_lock_until(s, until_ns))
        return; /* the entry names this process: reaped once it is gone */
    bo_share_proc *p = bo_share_own_entry(s, idx, gen);
    if (p != NULL && bo_share_entry_idle(p))
        free_entry(s, bo_share_chunk_of(s, idx), p);
    bo_share_unlock(s);
}

void bo_share_lease_take(bo_share_slot *s, unsigned idx)
{
    bo_share_proc *p = bo_share_entry_at(s, idx);
    p->inflight++;
    p->wait_ns = 0;
}

void bo_share_lease_drop(bo_share_slot *s, unsigned idx)
{
    bo_share_proc *p = bo_share_entry_at(s, idx);
    if (p->inflight > 0)
        p->inflight--;
}

void bo_share_waiting(bo_share_slot *s, unsigned idx, int64_t now)
{
    bo_share_entry_at(s, idx)->wait_ns = now;
    bo_share_reap(s, now, false);
}

/* ---- the slot's lock, repaired by its entries ---------------------------- */

/*
 * A holder died inside the slot: its leases go back, the counts are summed
 * anew from the leases (the only record a death cannot half-write), and a
 * window left unusable starts fresh.
 */
static void repair_slot(bo_share_slot *s)
{
    unsigned inflight = 0, waiters = 0, attached = 0, chunks = 0;
    const bo_config *cfg = __atomic_load_n(&bo_share_me.cfg, __ATOMIC_RELAXED);
    bo_share_chunk *c;
    unsigned n;

    /* the counts of entries in use first: reap and bo_share_self_entry rely on them;
     * then the busy bits from the refs.  A process going idle meanwhile
     * (bo_share_idle, no lock) clears its refs, then its bit: a bit is set
     * first and the refs read again after, so neither order leaves it set. */
    BO_SHARE_FOR_CHUNKS(s, c, n) {
        unsigned in_chunk = 0;
        chunks += c != &s->m.own;
        for (unsigned i = 0; i < CHUNK; i++) {
            bo_share_proc *p = &c->procs[i];
            in_chunk += p->pid != 0;
            if (p->pid != 0 && bo_share_entry_refs(p) != 0) {
                __atomic_fetch_or(&c->busy, 1ULL << i, __ATOMIC_SEQ_CST);
                if (__atomic_load_n(&p->refs, __ATOMIC_SEQ_CST) != 0)
                    continue;
            }
            __atomic_fetch_and(&c->busy, ~(1ULL << i), __ATOMIC_SEQ_CST);
        }
        c->nattached = in_chunk;
        attached += in_chunk;
    }
    __atomic_store_n(&s->m.nattached, attached, __ATOMIC_RELAXED);
    s->m.nchunks = chunks;
    bo_share_reap(s, bo_core_now_ns(), true);
    BO_SHARE_FOR_CHUNKS(s, c, n)
        for (unsigned i = 0; i < CHUNK; i++) {
            inflight += c->procs[i].inflight;
            waiters += c->procs[i].waiters;
        }
    s->waiters = waiters;
    if ((!isfinite(s->d.window.cwnd) || s->d.window.cwnd < 1.0) && cfg != NULL)
        bo_dest_init(&s->d, cfg, bo_core_now_ns());
    s->d.window.inflight = inflight;
    s->key[BO_SHARE_KEY_LEN - 1] = '\0';
}

static void repair_slot_v(void *arg)
{
    repair_slot(arg);
}

/*
 * Under the slot's lock, once the mapping was lost (share_file.c's guard):
 * the slot is zero memory of this process's own.  A block still attached
 * to it (its calls go on) finds a fresh state there, its own as a block's
 * own would be, until its next reuse, which makes it its own (share.c).
 */
static void adopt(bo_share_slot *s)
{
    const bo_config *cfg = __atomic_load_n(&bo_share_me.cfg, __ATOMIC_RELAXED);
    if (s->used || cfg == NULL)
        return;
    bo_dest_init(&s->d, cfg, bo_core_now_ns());
    s->used = 1;
}

void bo_share_lock(bo_share_slot *s)
{
    int rc = bo_share_mutex_lock(&s->mu);
    if (__builtin_expect(rc != 0, 0))
        bo_share_lock_mend(&s->mu, rc, repair_slot_v, s);
    if (__builtin_expect(__atomic_load_n(&bo_share_lost_flag, __ATOMIC_RELAXED) != 0, 0))
        adopt(s);
}

bool bo_share_lock_until(bo_share_slot *s, int64_t until_ns)
{
    int saved = errno;
    /* CLOCK_REALTIME, as pthread_mutex_timedlock reads it, which
     * ThreadSanitizer knows, unlike pthread_mutex_clocklock */
    struct timespec ts = bo_core_wall_ts_in(until_ns - bo_core_now_ns());
    int rc = pthread_mutex_timedlock(&s->mu, &ts);
    bo_share_timedlock_owned(&s->mu, rc);
    bool ok = rc == 0 || bo_share_lock_mend(&s->mu, rc, repair_slot_v, s);
    if (ok && __builtin_expect(__atomic_load_n(&bo_share_lost_flag, __ATOMIC_RELAXED) != 0, 0))
        adopt(s);
    errno = saved;
    return ok;
}

void bo_share_unlock(bo_share_slot *s)
{
    pthread_mutex_unlock(&s->mu);
}
