/*
 * share: the host-wide backend of the destination table
 * (BACKOFF_SHARE=host).  Every process of one user on the host maps one
 * file, a fixed array of destination slots, each holding the policy's
 * bo_dest under a robust, process-shared mutex, and a pool of process
 * entries all slots draw from.  The process-local table (table.c) stays in
 * front of it: a local block is attached to one slot (an entry of the
 * process in it) from its first use until the table drops the block or the
 * process exits, and the block's lock (block.c) is then the slot's:
 * admissions and completions update the slot instead of the block.  While
 * no handle or call of the process uses the block its entry is idle (refs
 * 0): it pins nothing, the file may evict a slot whose entries are all
 * idle, and another process may take an idle entry when the slot has no
 * free one and the pool no chunk.
 *
 * The interface it gives the table and the block:
 *   attach/detach  find or make the slot of a key and hold it (or let it go);
 *   idle/reuse     the block goes unused / is used again, without the file's
 *                  lock (reuse checks that the slot is still this key's);
 *   lock/unlock    the slot's state, repaired when a holder died;
 *   lease_take/_drop  an attempt in flight, named after its process;
 *   waiting        a call of the process was told to wait for admission;
 *   wait/wake      wait (bounded, no spinning) for a completion anywhere;
 *   note           last throttle / last success for `backoff --status`;
 *   reap           give back the leases of dead processes;
 *   views          every destination's counts and gauges (dest/metrics.c).
 * The counts (bo_share_counts) are written by dest/block.c under the lock.
 * The layout below is also read by `backoff --status`/`--reset`
 * (wrapper/wrapper.c) and by test helpers that read the file or hold a
 * slot's lock to be killed (tests/helpers/share_*.c).
 */
#ifndef BO_DEST_SHARE_H
#define BO_DEST_SHARE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "bo_config.h"
#include "bo_budget.h"
#include "bo_engine.h"

#define BO_SHARE_MAGIC 0x6873666f6b636162ULL /* "backofsh" */
/* Bump with any change of the layout below that sizes do not show.
 * 8: process entries in chunks, a slot's own and the file's pool; 9: the
 * counters of each destination appended to the slot, the metrics files'
 * claims to the file; 11: bo_dest holds aws-adaptive's rate limiter and the
 * aimd window's in-flight attempts by send time. */
#define BO_SHARE_VERSION 11
/* Destinations per file, LRU evicted: a crawler's 10,000 hosts in rotation
 * fit (evicting on every call cost ~3,000 instructions per call).  The file
 * is sparse on tmpfs: a slot's pages are touched only once it is used
 * (about 4 KB a destination), slots are handed out in order and every
 * loop over them stops at the high-water mark. */
#define BO_SHARE_SLOTS 16384
/*
 * Process entries come in chunks: each slot has one of its own, and takes
 * more from the file's pool when it needs them (a chain), so any number of
 * processes up to the pool's size shares one destination (4,096 chunks of
 * 64: 262,144 entries beyond the slots' own, about 10 MB, sparse as the
 * slots: a chunk's pages are allocated when it is first handed out).  A
 * process that finds no entry (the pool spent, or a full tmpfs) holds
 * nothing in the file: its calls wait and it asks again (block.c), never
 * sending on a state of its own.  A test build makes both small
 * (tests/small/: the same code with a pool of 2 chunks of 4).
 */
#ifndef BO_SHARE_CHUNK_PROCS
#define BO_SHARE_CHUNK_PROCS 64 /* at most 64: a bit each in the chunk's busy mask */
#endif
#ifndef BO_SHARE_POOL_CHUNKS
#define BO_SHARE_POOL_CHUNKS 4096
#endif
_Static_assert(BO_SHARE_CHUNK_PROCS >= 1 && BO_SHARE_CHUNK_PROCS <= 64, "one bit per entry");
/* Entries one slot can hold: its own chunk and every chunk of the pool. */
#define BO_SHARE_MAX_ENTRIES (BO_SHARE_CHUNK_PROCS * (1 + BO_SHARE_POOL_CHUNKS))
#define BO_SHARE_KEY_LEN 300    /* = BO_DEST_KEY_LEN (dest.h) */
/* A destination nobody used for this long starts fresh (tests reuse ports). */
#define BO_SHARE_STALE_NS (60 * 1000000000LL)
/* Dead processes' leases are looked for at most this often per slot. */
#define BO_SHARE_REAP_NS (250 * 1000000LL)
/* `backoff --status`: a process told to wait this recently still waits. */
#define BO_SHARE_WAIT_SEEN_NS (1000 * 1000000LL)

/*
 * One process's hold on a slot: references and the leases of its attempts.
 * Busy while refs, inflight or waiters is not 0 (a busy process holds refs:
 * its calls run on a referenced block), else idle: the process used the
 * destination and may come back (bo_share_reuse), but the entry holds
 * nothing, so eviction (take_slot), a newcomer short of entries
 * (self_entry) and `backoff --reset` may drop it.
 */
typedef struct bo_share_proc {
    int32_t pid;                /* 0: entry free */
    uint32_t refs;              /* local blocks of the process in use; atomic, changed
                                 * under mu but for the move to 0 (bo_share_idle) */
    uint64_t start;             /* start time, /proc/PID/stat field 22 */
    uint64_t nonce;             /* the library's image in that process (exec) */
    uint32_t inflight;          /* leases: its attempts in flight */
    uint32_t waiters;           /* its threads waiting on the slot's futex */
    int64_t wait_ns;            /* a call of it told to wait for admission, last
                                 * (CLOCK_MONOTONIC); 0: admitted since */
} bo_share_proc;

/*
 * What every process counted on one destination (`backoff --status
 * --format=...`, BACKOFF_METRICS_FILE), the same increments as
 * each process's BACKOFF_STATS (dest/block.c makes both), so the sum of
 * the processes' stats is what these say.  Written under the slot's lock on
 * the paths that already hold it (a completion, an admission that gives up,
 * a call abandoned or cancelled), but wait_ns, which a call adds after a
 * wait with one atomic add and no lock.  They outlive the processes and
 * the slot's staleness (the state starts fresh after 60 s unused, the
 * counts do not); they start at zero when the slot is handed to a key and
 * on `backoff --reset`.
 */
typedef struct bo_share_counts {
    uint64_t calls, attempts, retries, failed, gave_up;
    uint64_t budget_refused;    /* calls ended because the retry budget was spent */
    uint64_t throttled[BO_CAUSE_COUNT]; /* attempts by kind (bo_cause); [0] unused */
    uint64_t wait_ns;           /* waited on the programs' behalf; atomic */
    int64_t last_throttle_ns;   /* CLOCK_MONOTONIC of the last 429/503/504; 0: never */
} bo_share_counts;

/*
 * A chunk of entries: a slot's own, or one of the pool's, chained to the
 * slot that took it.  An entry is named by its index in the slot: below
 * BO_SHARE_CHUNK_PROCS the slot's own chunk, above it the pool's
 * (BO_SHARE_CHUNK_PROCS + chunk x BO_SHARE_CHUNK_PROCS + i).
 */
typedef struct bo_share_chunk {
    /* Bit i: procs[i].refs != 0.  Atomic: set under the slot's mu, cleared
     * under it or by the entry's own process (bo_share_idle); read without
     * the lock by the eviction's sampling (a slot with a busy entry is
     * never taken). */
    uint64_t busy;
    uint32_t nattached;         /* entries in use; changed under the slot's mu */
    /* The slot's next pool chunk (pool index + 1; 0: none), and for a pool
     * chunk the slot holding it (slot index + 1; 0: free, then next links
     * the pool's free list): changed under the file's lock and the slot's.
     * A chunk is the slot's when it is on its chain and names it. */
    uint32_t next;
    uint32_t owner;
    uint32_t pad;
    bo_share_proc procs[BO_SHARE_CHUNK_PROCS];
} bo_share_chunk;

/* A slot's process entries: its own chunk, then its chain of pool chunks. */
typedef struct bo_share_members {
    uint32_t nattached;         /* entries in use, every chunk; atomic, changed under mu */
    uint32_t nchunks;           /* pool chunks on the chain (the file's lock and mu) */
    bo_share_chunk own;
} bo_share_members;

typedef struct bo_share_slot {
    pthread_mutex_t mu;         /* robust, process-shared; guards all below but key */
    uint32_t seq;               /* futex word, bumped on every completion */
    uint32_t waiters;           /* sum of the entries' waiters */
    /* written under the file's lock (and this slot's), read under either */
    uint32_t used;
    uint32_t pad;
    uint64_t hash;              /* of key and cfg_hash */
    uint32_t hnext;             /* next slot (index + 1) of the hash chain; 0: none */
    /* Bumped (under mu) whenever entries are dropped that their processes
     * did not drop themselves but dead ones (eviction, --reset), and when the
     * slot is handed to another key: a process's (slot, entry, gen) names its
     * attachment, and a reuse that finds another gen attaches anew. */
    uint32_t gen;
    uint64_t cfg_hash;          /* processes configured alike share a slot */
    char key[BO_SHARE_KEY_LEN];
    int64_t last_used_ns;       /* CLOCK_MONOTONIC, host-wide; atomic, written under mu */
    int64_t last_throttle_ns, last_success_ns; /* 0: never */
    int64_t reaped_ns;
    uint64_t attempts, throttled, successes;
    bo_dest d;
    bo_share_members m;         /* the processes' entries */
    bo_share_counts counts;     /* guarded by mu but wait_ns */
} bo_share_slot;

/*
 * One BACKOFF_METRICS_FILE's last rewrite, so that the processes writing it
 * write it at most once a second between them: an entry is claimed for a
 * path's hash by compare-and-swap from 0, its written_ns (CLOCK_MONOTONIC)
 * moved forward by compare-and-swap by the process that rewrites the file
 * (dest/metrics.c).  No lock.
 */
#define BO_SHARE_EXPORTS 8
typedef struct bo_share_export {
    uint64_t path_hash;         /* 0: free */
    int64_t written_ns;
} bo_share_export;

typedef struct bo_share_file {
    uint64_t magic;
    uint32_t version;
    uint32_t dest_size;         /* sizeof(bo_dest): other builds add fields */
    uint32_t slot_size;
    uint32_t nslots, nprocs;    /* nprocs: entries per chunk */
    uint32_t mutex_size, ptr_size;
    uint32_t pool_chunks;
    uint64_t file_size;
    pthread_mutex_t mu;         /* robust, process-shared: slot and chunk allocation */
    /* guarded by mu: hash chains (slot index + 1, 0: empty), the eviction cursor,
     * the slots ever handed out ([0, hiwater): their locks are made; atomic) */
    uint32_t heads[BO_SHARE_SLOTS];
    uint32_t cursor;
    uint32_t hiwater;
    /* guarded by mu: the pool's chunks ever handed out ([0, pool_hiwater):
     * their pages allocated; atomic) and the free ones among them (a list
     * through next, pool index + 1; 0: empty) */
    uint32_t pool_hiwater;
    uint32_t pool_free;
    bo_share_slot slots[BO_SHARE_SLOTS];
    bo_share_chunk pool[BO_SHARE_POOL_CHUNKS];
    bo_share_export exports[BO_SHARE_EXPORTS]; /* atomics, no lock */
} bo_share_file;

/*
 * Open (or make) the file, once per process; call it with no lock of the
 * table held (it takes the init lock, bo_core_once, which fork holds before
 * them).
 */
void bo_share_init(const bo_config *cfg);

/* Attach this process to the slot of key (after bo_share_init).  NULL and
 * *wait false: the process keeps this destination's state to itself (no
 * file, no slot free: every one in use); NULL and *wait true: the slot is
 * there but has no entry for this process (the pool is spent or the tmpfs
 * full): its calls wait and it asks again (they never send on a state of
 * their own).  len is strlen(key), key_hash its hash (bo_share_key_hash),
 * which the table has already computed. */
bo_share_slot *bo_share_attach(const char *key, size_t len, uint64_t key_hash,
                               const bo_config *cfg, unsigned *idx, uint32_t *gen, bool *wait);

/* The hash of a key (bo_key_of, eight bytes a step); *len its length. */
static inline uint64_t bo_share_key_hash(const char *key, size_t *len)
{
    return bo_key_of(key, len);
}

/* Slots ever handed out: loops over the file stop there. */
static inline unsigned bo_share_hiwater(const bo_share_file *f)
{
    unsigned n = __atomic_load_n(&f->hiwater, __ATOMIC_ACQUIRE);
    return n < BO_SHARE_SLOTS ? n : BO_SHARE_SLOTS;
}

/* Pool chunks ever handed out (their pages allocated). */
static inline unsigned bo_share_pool_hiwater(const bo_share_file *f)
{
    unsigned n = __atomic_load_n(&f->pool_hiwater, __ATOMIC_ACQUIRE);
    return n < BO_SHARE_POOL_CHUNKS ? n : BO_SHARE_POOL_CHUNKS;
}

/*
 * The chunk after c on s's chain; NULL at its end.  A link is checked,
 * never trusted: it must name a chunk handed out that names s (a holder
 * that died half-way through a change leaves a chain cut, never a wrong
 * one).  Under s's lock, or the file's (which every change of a chain
 * holds).
 */
static inline bo_share_chunk *bo_share_chunk_next(bo_share_file *f, const bo_share_slot *s,
                                                  const bo_share_chunk *c)
{
    uint32_t ref = __atomic_load_n(&c->next, __ATOMIC_RELAXED);
    if (ref == 0 || ref > bo_share_pool_hiwater(f))
        return NULL;
    bo_share_chunk *n = &f->pool[ref - 1];
    uint32_t owner = __atomic_load_n(&n->owner, __ATOMIC_RELAXED);
    return owner == (uint32_t)(s - f->slots) + 1 ? n : NULL;
}

/* The entry index of c's i-th entry in slot s (see bo_share_chunk). */
static inline unsigned bo_share_entry_index(const bo_share_file *f, const bo_share_slot *s,
                                            const bo_share_chunk *c, unsigned i)
{
    if (c == &s->m.own)
        return i;
    return BO_SHARE_CHUNK_PROCS * (1 + (unsigned)(c - f->pool)) + i;
}
/*
 * The block attached as (s, idx, gen) is no longer used by the process
 * (its references went to 0, nothing in flight): its entry turns idle and
 * stays.  Takes no lock (one atomic change of the entry's own word).
 */
void bo_share_idle(bo_share_slot *s, unsigned idx);
/*
 * The idle block is used again: under the slot's lock, when the slot still
 * holds this attachment (gen) and this process's entry, the entry turns
 * busy (and a slot nobody used for BO_SHARE_STALE_NS starts fresh); false:
 * the attachment is gone (evicted, reset, its entry taken), attach anew.
 */
bool bo_share_reuse(bo_share_slot *s, unsigned idx, uint32_t gen, const bo_config *cfg);
/* Drop an idle attachment (the table frees the block, the process exits).
 * until_ns (CLOCK_MONOTONIC; 0: no bound) bounds the wait for the slot's
 * lock at exit, which a process stopped while holding it must not hang:
 * an entry not dropped then names this process and is reaped. */
void bo_share_detach(bo_share_slot *s, unsigned idx, uint32_t gen, int64_t until_ns);

/* The slot's lock; a holder's death is repaired before it returns. */
void bo_share_lock(bo_share_slot *s);
void bo_share_unlock(bo_share_slot *s);
/* The same, waiting at most until until_ns (CLOCK_MONOTONIC): false, not taken. */
bool bo_share_lock_until(bo_share_slot *s, int64_t until_ns);

/* Under the lock: an admitted attempt is leased to this process / ended. */
void bo_share_lease_take(bo_share_slot *s, unsigned idx);
void bo_share_lease_drop(bo_share_slot *s, unsigned idx);
/* Under the lock: a call of this process was told to wait for admission
 * (for --status); dead processes' leases are given back (rate-limited). */
void bo_share_waiting(bo_share_slot *s, unsigned idx, int64_t now_ns);

/* Under the lock: release it, wait for a completion (when the window has
 * no room: completions make it) or until_ns, relock. */
void bo_share_wait(bo_share_slot *s, unsigned idx, int64_t until_ns);
/* Under the lock: wake as many of the calls waiting for room, of every
 * process, as the window has room for (first come, first woken). */
void bo_share_wake(bo_share_slot *s);
/* Under the lock: a completed attempt's news for --status. */
void bo_share_note(bo_share_slot *s, bool success, bool throttle, int64_t now_ns);
/* Under the lock: give back dead processes' leases (force: now, else rate-limited). */
void bo_share_reap(bo_share_slot *s, int64_t now_ns, bool force);

/* Fork (the one list in fork/fork.c): the child is a new process (its own
 * leases), with the same mapping; nothing of the file is held across fork(). */
void bo_share_child_fork(void);
/* In the child, for each block in use it inherited attached: hold the slot
 * as itself (the parent's attachment, gen, stays valid: the slot was busy).
 * Returns false when the slot now holds another destination (key) or has
 * no entry free without a new chunk of the pool (the child then attaches
 * anew, through the file's lock, before its first call).  A block the
 * child inherited idle is forgotten instead, without touching the file:
 * the entry is the parent's. */
bool bo_share_child_reattach(bo_share_slot *s, const char *key, uint32_t gen, unsigned *idx);

/* This process's mapping of the file (NULL: none, or not opened yet). */
bo_share_file *bo_share_mapped(void);

/*
 * One destination's figures for the metrics (dest/metrics.c), read under
 * its slot's lock: the counts, and the gauges of the moment (the window,
 * the pace in sends a second, 0: none; the attempts in flight; the
 * processes using it now and those attached idle, dead ones reaped first;
 * the last throttle's and success's age, -1: never).
 */
typedef struct bo_share_view {
    char key[BO_SHARE_KEY_LEN];
    bo_share_counts counts;
    double window, pace_hz;
    unsigned in_flight, busy, idle, holding, waiting;
    int64_t throttle_age_ns, success_age_ns;
} bo_share_view;

/*
 * The used slots of f (NULL: the user's file, mapped for the call; the
 * wrapper) as views, in slot order, in an array the caller frees (*views
 * NULL and *n 0 when there are none).  Each slot's lock is waited for until
 * until_ns (CLOCK_MONOTONIC; 0: no bound).  Returns 0; 1 when there is no
 * file (f NULL); 2 with the reason in why when the file cannot be read, a
 * lock was not taken in time or memory ran out (nothing returned).
 */
int bo_share_views(bo_share_file *f, bo_share_view **views, size_t *n, int64_t until_ns,
                   char *why, size_t whylen);

/* backoff --status / --reset (wrapper/wrapper.c): 0 ok, 1 nothing shared, 2 error. */
int bo_share_status(FILE *out);
int bo_share_reset(FILE *out, const bo_config *cfg);

/* The file's path for this user (for messages and tests). */
int bo_share_path(char *buf, size_t len);

#endif
