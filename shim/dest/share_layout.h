/*
 * share_layout.h: the host-wide state file (BACKOFF_SHARE=host) as every
 * process of one user maps it: a header, destination slots (a bo_dest under
 * a robust, process-shared mutex, the processes' entries, the counters), a
 * pool of entries all slots draw from, the metrics files' claims.  Read by
 * the backend (share*.c), `backoff --status`/`--reset` and the test helpers
 * that read the file or hold a slot's lock to be killed (tests/helpers/).
 */
#ifndef BO_DEST_SHARE_LAYOUT_H
#define BO_DEST_SHARE_LAYOUT_H

#include <pthread.h>
#include <stdint.h>

#include "bo_engine.h"

#define BO_SHARE_MAGIC 0x6873666f6b636162ULL /* "backofsh" */
/* Bump with any change of the layout that sizes do not show (8: chunks; 9:
 * slot counters; 11: rate limiter, held bins; 12: the bucket from refusals). */
#define BO_SHARE_VERSION 12
/* Destinations per file, LRU evicted: a crawler's 10,000 hosts in rotation
 * fit (evicting on every call cost ~3,000 instructions per call).  Sparse on
 * tmpfs: a slot's pages (about 4 KB) are touched once it is used, slots are
 * handed out in order and every loop over them stops at the high-water mark. */
#define BO_SHARE_SLOTS 16384
/*
 * Process entries come in chunks: a slot's own, then chunks of the file's
 * pool (a chain), so any number of processes up to the pool's size shares a
 * destination (4,096 chunks of 64: 262,144 entries beyond the slots' own,
 * about 10 MB, sparse: a chunk's pages are allocated when first handed out).
 * A process that finds no entry (the pool spent, a full tmpfs) holds nothing
 * in the file: its calls wait and it asks again (block.c).  A build may make
 * both small (-D).
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

/*
 * One process's hold on a slot: references and the leases of its attempts.
 * Busy while refs, inflight or waiters is not 0, else idle: the process may
 * come back (bo_share_reuse), but the entry holds nothing, so eviction, a
 * newcomer short of entries and `backoff --reset` may drop it.
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
 * --format=...`, BACKOFF_METRICS_FILE): the increments of each process's
 * BACKOFF_STATS (dest/block.c makes both), written under the slot's lock
 * where it is held already, but wait_ns (one atomic add, no lock).  They
 * outlive the processes and the slot's staleness; they start at zero when
 * the slot is handed to a key and on `backoff --reset`.
 */
typedef struct bo_share_counts {
    uint64_t calls, attempts, retries, failed, gave_up;
    uint64_t budget_delayed;    /* calls whose retry waited for the retry budget */
    uint64_t throttled[BO_CAUSE_COUNT]; /* attempts by kind (bo_cause); [0] unused */
    uint64_t wait_ns;           /* waited on the programs' behalf; atomic */
    int64_t last_throttle_ns;   /* CLOCK_MONOTONIC of the last 429/503/504; 0: never */
} bo_share_counts;

/*
 * A chunk of entries: a slot's own, or one of the pool's chained to the slot
 * that took it.  An entry's index in the slot: below BO_SHARE_CHUNK_PROCS
 * its own chunk's, else BO_SHARE_CHUNK_PROCS x (1 + pool chunk) + i.
 */
typedef struct bo_share_chunk {
    /* Bit i: procs[i].refs != 0.  Atomic: set under the slot's mu, cleared
     * under it or by the entry's own process (bo_share_idle); read unlocked
     * by the eviction's sampling (a slot with a busy entry is never taken). */
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
    /* Bumped (under mu) when live processes' entries are dropped by others
     * (eviction, --reset) and when the slot is handed to another key: a
     * process's (slot, entry, gen) names its attachment, and a reuse that
     * finds another gen attaches anew. */
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
 * One BACKOFF_METRICS_FILE's last rewrite, so that its processes write it at
 * most once a second between them: claimed for a path's hash by
 * compare-and-swap from 0, written_ns (CLOCK_MONOTONIC) moved forward by
 * compare-and-swap by the rewriter (dest/metrics_file.c).  No lock.
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
    /* guarded by mu: the pool's chunks ever handed out (their pages allocated;
     * atomic) and the free ones among them (through next, index + 1; 0: none) */
    uint32_t pool_hiwater;
    uint32_t pool_free;
    bo_share_slot slots[BO_SHARE_SLOTS];
    bo_share_chunk pool[BO_SHARE_POOL_CHUNKS];
    bo_share_export exports[BO_SHARE_EXPORTS]; /* atomics, no lock */
} bo_share_file;

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
 * The chunk after c on s's chain; NULL at its end.  A link is checked, never
 * trusted: it must name a chunk handed out that names s (a holder that died
 * half-way through a change leaves a chain cut, never a wrong one).  Under
 * s's lock, or the file's (which every change of a chain holds).
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

#endif
