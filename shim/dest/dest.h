/*
 * dest: the destination room.  Every destination (scheme, host, port; a
 * connect() address) has one block in this process, found in O(1) by its
 * key where the destination is chosen (a URL set, a connect()), and the
 * policy's state of that destination (bo_dest) behind one lock, wherever
 * it lives:
 *   table.c    the process-local table: sharded hash, references, LRU;
 *   block.c    a block's state, lock and counts through its backend, the
 *              block's own or the host-wide slot's (a table of the two);
 *   share*.c   the host-wide backend, a shared-memory file of slots
 *              (share.h; its layout share_layout.h; --status, --reset);
 *   redis.c    the fleet backend: the fleet's window in Redis (redis.h);
 *   metrics.c, metrics_file.c  the host-wide counts in the forms monitoring
 *              reads, and BACKOFF_METRICS_FILE (metrics.h, metrics_file.h).
 * The call room (call/) drives admissions and completions through the
 * functions below and never sees a backend.  Decisions are policies/'.
 */
#ifndef BO_DEST_H
#define BO_DEST_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "bo_classify.h"
#include "bo_engine.h"

#define BO_DEST_KEY_LEN 300

/* What this process counted on a destination, for BACKOFF_STATS (guarded
 * by the block's lock: no shared atomics on the hot path). */
typedef struct bo_block_counts {
    uint64_t calls, attempts, retries, throttled, failed, gave_up, budget_delayed;
} bo_block_counts;

/*
 * What one step of a call adds to the counts: the process's (above) and,
 * attached host-wide, the slot's (the same increments: the processes'
 * BACKOFF_STATS sum to `backoff --status --format=...`).  Bits of
 * bo_tally.what, and the attempt's kind of throttle or loss.
 */
enum {
    BO_TALLY_ATTEMPT = 1u << 0,  /* an attempt completed */
    BO_TALLY_RETRY = 1u << 1,    /* ... and is retried */
    BO_TALLY_THROTTLE = 1u << 2, /* ... answered 429, 503 or 504 (BO_SIGNAL_THROTTLE) */
    BO_TALLY_END = 1u << 3,      /* the call ends */
    BO_TALLY_FAILED = 1u << 4,   /* ... without a success */
    BO_TALLY_GAVE_UP = 1u << 5,  /* ... on a retryable failure, attempts or time spent */
    BO_TALLY_BUDGET = 1u << 6    /* ... a retry of it waited for the retry budget
                                    (bo_call.budget_delayed) */
};
typedef struct bo_tally {
    unsigned what;
    bo_cause cause;
} bo_tally;

/* Where a block's state lives: its own, or the host-wide slot's (block.c). */
typedef struct bo_block_backend bo_block_backend;

/* One destination's block, alive while someone holds a reference (a handle
 * record pointing at it, a connect() in progress: bo_block_get/_ref/_put);
 * an unreferenced one stays in the table until it is evicted and freed. */
typedef struct bo_block {
    char key[BO_DEST_KEY_LEN];  /* "http://host:port", "tcp://addr:port", "unix:path" */
    /* the table's (table.c), guarded by the block's shard lock; refs is
     * atomic, and changes to or from 0 happen under that lock */
    struct bo_block *hnext;                 /* hash chain */
    struct bo_block *lru_prev, *lru_next;   /* idle list, only while refs == 0 */
    uint64_t hash;
    unsigned refs;
    pthread_mutex_t mu;
    pthread_cond_t cv;          /* CLOCK_MONOTONIC; broadcast on every completion */
    bo_dest d;                  /* guarded by mu */
    double cwnd_max;            /* largest cwnd seen (stats), guarded by the lock */
    bo_block_counts counts;     /* guarded by the lock (bo_block_lock) */
    /* connect(): set (atomically, never cleared) once a connect to this
     * destination succeeded in this process: a refusal then means
     * "restarting", not "nothing here" (bo_connect_errno_retryable). */
    int alive;
    /* The backend that holds d and mu's part (block.c), and for the
     * host-wide one (BACKOFF_SHARE=host) the slot the block is attached to,
     * whose bo_dest and lock stand in for d and mu (the counters stay this
     * process's), with this process's entry and the slot's generation.
     * Set by bo_block_set_slot only: where the table attaches (refs 0 to
     * 1; checked again by bo_share_reuse), by the attach of a block waiting
     * for an entry (under mu), and cleared only while refs is zero, so a
     * holder sees it stable.  It stays attached while idle. */
    const bo_block_backend *backend;
    struct bo_share_slot *shared;
    unsigned share_idx;
    uint32_t share_gen;
    /* BACKOFF_SHARE=host, not attached: the slot had no entry for this
     * process (the pool spent, a full tmpfs): its calls wait for one
     * (bo_block_share_waits), never sending on the block's own state.  Set
     * where the table attaches, cleared by the attach that finds an entry
     * (under mu); share_retry_ns (under mu): the next attach to try. */
    int share_wait;
    int64_t share_retry_ns;
} bo_block;

/* The block for `key`, created on first use, with a reference the caller
 * releases with bo_block_put; NULL when the key is too long, allocation
 * fails or the configuration is bad (the caller then passes through). */
bo_block *bo_block_get(const char *key);
/* Another reference to a block the caller already holds one on (NULL: NULL). */
bo_block *bo_block_ref(bo_block *b);
/* Release a reference (NULL: nothing). */
void bo_block_put(bo_block *b);

/* The destination's state, locked: the host-wide slot's when attached,
 * else the block's own; the block's counts and cwnd_max are guarded by it. */
bo_dest *bo_block_lock(bo_block *b);
void bo_block_unlock(bo_block *b);
/* Under the lock: release it, wait for a completion on the destination or
 * until until_ns (CLOCK_MONOTONIC), take it again. */
void bo_block_wait(bo_block *b, int64_t until_ns);
/*
 * BACKOFF_SHARE=host: true while the destination's slot has no entry for
 * this process: no attempt may start (none would count in the shared
 * window); the file is asked again at most every BO_BLOCK_SHARE_RETRY_NS
 * per block.  No lock held; one load when the block is not waiting.
 */
#define BO_BLOCK_SHARE_RETRY_NS (20 * 1000000LL)
bool bo_block_share_retry(bo_block *b, int64_t now_ns);
/* The block waits for an entry (one load; bo_block_share_waits asks). */
static inline bool bo_block_share_pending(const bo_block *b)
{
    return __atomic_load_n(&b->share_wait, __ATOMIC_ACQUIRE) != 0;
}
static inline bool bo_block_share_waits(bo_block *b, int64_t now_ns)
{
    return bo_block_share_pending(b) && bo_block_share_retry(b, now_ns);
}
/* Under the lock: an attempt was admitted (a lease of this process). */
void bo_block_admitted(bo_block *b);
/* Under the lock: a call waits for admission; dead processes' leases go back. */
void bo_block_waiting(bo_block *b, int64_t now_ns);
/* Under the lock: give back an admitted attempt that will not run (its
 * slot, its lease: bo_dest_cancel) and wake the calls waiting for one. */
void bo_block_release(bo_block *b, bo_dest *d, bo_call *call);
/* Under the lock: the admitted attempt ended (its lease back, the news for
 * `backoff --status`, the tally counted); the waiting calls are woken. */
void bo_block_completed(bo_block *b, bo_tally t, bool success, int64_t now_ns);
/* Under the lock: a call ends without a completion (it gave up waiting,
 * was abandoned or cancelled): the tally counted. */
void bo_block_count(bo_block *b, bo_tally t, int64_t now_ns);
/* No lock: the call waited ns on the program's behalf (host-wide, one
 * atomic add; the process's own total is the call room's). */
void bo_block_waited(bo_block *b, int64_t ns);

/*
 * The fleet (BACKOFF_SHARE=redis, aimd): after a host-wide admission, its
 * word on the attempt, no lock held.  GO: a fleet lease (call->fleet_lease);
 * WAIT: ask again at *until_ns, keeping the call's place in the fleet's
 * queue (call->fleet_ticket); ALONE: no answer, the host-wide state alone.
 * Without a fleet every call is ALONE, at the cost of one load.
 */
typedef enum bo_fleet_answer {
    BO_FLEET_GO = 0,
    BO_FLEET_WAIT,
    BO_FLEET_ALONE
} bo_fleet_answer;
bool bo_block_fleet_on(void);
bo_fleet_answer bo_block_fleet_admit(bo_block *b, bo_call *call, int64_t now_ns,
                                     int64_t *until_ns);
/* The leased attempt ended (the fleet learns from its outcome), or never ran. */
void bo_block_fleet_complete(bo_block *b, bo_call *call, const bo_outcome *o);
void bo_block_fleet_cancel(bo_block *b, bo_call *call);
/* A call that stops waiting for the fleet leaves its place in the queue. */
void bo_block_fleet_leave(bo_block *b, bo_call *call);

/*
 * What this process counted on every destination, for the stats at exit
 * (evicted blocks' included); `window` is the cwnd of the destination with
 * the most attempts, `window_max` the largest any reached.  A slot's lock
 * held by a stopped process is waited for until until_ns only (without it
 * the block's counts count, its window does not).
 */
typedef struct bo_block_totals {
    bo_block_counts counts;
    double window, window_max;
} bo_block_totals;
void bo_block_totals_get(bo_block_totals *t, int64_t until_ns);

/* At exit: the idle blocks let their host-wide entries go, each slot's lock
 * waited for until until_ns at most. */
void bo_block_table_exit(int64_t until_ns);

/*
 * Fork (the one list in fork/fork.c): the table's shards, then every
 * block's mutex, held across fork(); in the child each block starts its
 * own state anew (nothing in flight, no counts) and a block in use attaches
 * to its slot as the child (the backends' handlers: share.h, redis.h).
 */
void bo_block_table_prepare_fork(void);
void bo_block_table_parent_fork(void);
void bo_block_table_child_fork(void);

#endif
