/*
 * table.c: the process-local destination table (dest.h).
 *
 * Every destination is managed, however many there are.  The table is cut
 * into SHARDS shards by the key's hash, each with its own lock, its own
 * hash buckets (doubled as the shard fills) and its own list of idle blocks
 * in least-recently-used order, so a lookup is O(1) and no lock is
 * process-wide.  A lookup happens where a destination is chosen (curl's
 * setopt, each connect()), never on curl_easy_perform's hot path: the
 * handle record keeps its block.
 *
 * Lifetime: a block is referenced by whoever may use its pointer (a handle
 * record, a connect() in progress).  A block with references is never
 * evicted, so a call in flight and a handle that points at a block keep it.
 * When the last reference goes, the block joins its shard's idle list
 * (most recent first); when a shard holds more than IDLE_PER_SHARD idle
 * blocks the oldest is freed: that destination simply starts fresh the next
 * time.  Memory is bounded by IDLE_PER_SHARD * SHARDS idle blocks plus the
 * ones the program holds.  (The LRU order is per shard, which is LRU for a
 * uniform hash up to 1/SHARDS of the capacity.)
 *
 * Lock order: a shard lock, then a block's mutex (eviction reads and
 * retires a block's counters) or the host-wide file's and slot's locks
 * (attach and detach, share.c); nobody takes a shard lock while
 * holding a block's mutex or a slot's lock.
 *
 * BACKOFF_SHARE=host: a block is attached to its host-wide slot from its
 * first use until it is freed (or the process exits: bo_block_table_exit).
 * The move of refs to zero marks the process's entry in the slot idle
 * without a lock; the move from zero checks, under the slot's lock only,
 * that the slot is still this destination's and the entry ours, and
 * attaches anew when it is not.  So a call to a destination the process
 * knows takes no file lock, and the file may still evict a slot whose
 * entries are all idle: one in use is never evicted.
 */
#include "core/core.h"
#include "dest/block.h"
#include "dest/redis.h"
#include "dest/share.h"

#include <stdlib.h>
#include <string.h>

/* 16 shards: contention spread on a machine of a few cores, and fork's
 * prepare handler, which holds them all, stays well under ThreadSanitizer's
 * 64 locks held at once per thread (with the init lock, the blocks' and the
 * handle records'). */
#define SHARDS 16
/* 16,384 idle destinations at most (about 12 MB: a block is some 750
 * bytes), enough that a crawler's working set of 10,000 hosts stays.  The
 * sanitizer builds keep 2 per shard, so that their stress tests evict all
 * the time while threads look blocks up. */
#ifndef BO_TABLE_IDLE_PER_SHARD
#define BO_TABLE_IDLE_PER_SHARD 1024
#endif
#define IDLE_PER_SHARD BO_TABLE_IDLE_PER_SHARD
#define BUCKETS_MIN 16

typedef struct shard {
    pthread_mutex_t mu;
    bo_block **buckets;     /* nbuckets chains (power of two) */
    size_t nbuckets;
    size_t count;               /* blocks in the shard */
    size_t idle;                /* blocks on the idle list */
    bo_block *lru_head;     /* most recently idle */
    bo_block *lru_tail;     /* evicted first */
} shard;

#define S {.mu = PTHREAD_MUTEX_INITIALIZER}
static shard g_shards[SHARDS] = {S, S, S, S, S, S, S, S, S, S, S, S, S, S, S, S};
#undef S

_Static_assert(SHARDS == 16, "g_shards' initializer lists 16 shards");

static shard *shard_of(uint64_t hash)
{
    return &g_shards[hash % SHARDS];
}

static size_t bucket_of(const shard *s, uint64_t hash)
{
    return (size_t)(hash / SHARDS) & (s->nbuckets - 1);
}

static void lru_unlink(shard *s, bo_block *blk)
{
    if (blk->lru_prev != NULL)
        blk->lru_prev->lru_next = blk->lru_next;
    else
        s->lru_head = blk->lru_next;
    if (blk->lru_next != NULL)
        blk->lru_next->lru_prev = blk->lru_prev;
    else
        s->lru_tail = blk->lru_prev;
    blk->lru_prev = blk->lru_next = NULL;
    s->idle--;
}

static void lru_push(shard *s, bo_block *blk)
{
    blk->lru_prev = NULL;
    blk->lru_next = s->lru_head;
    if (s->lru_head != NULL)
        s->lru_head->lru_prev = blk;
    else
        s->lru_tail = blk;
    s->lru_head = blk;
    s->idle++;
}

/* Double the buckets when the chains grow past one block each on average;
 * on allocation failure the chains just get longer. */
static void maybe_grow(shard *s)
{
    size_t n = s->nbuckets == 0 ? BUCKETS_MIN : s->nbuckets * 2;
    bo_block **b;

    if (s->nbuckets != 0 && s->count <= s->nbuckets)
        return;
    b = calloc(n, sizeof *b);
    if (b == NULL)
        return;
    for (size_t i = 0; i < s->nbuckets; i++) {
        bo_block *blk = s->buckets[i], *next;
        for (; blk != NULL; blk = next) {
            next = blk->hnext;
            size_t j = (size_t)(blk->hash / SHARDS) & (n - 1);
            blk->hnext = b[j];
            b[j] = blk;
        }
    }
    free(s->buckets);
    s->buckets = b;
    s->nbuckets = n;
}

/* Free the least recently idle blocks while the shard holds too many. */
static void evict(shard *s)
{
    while (s->idle > IDLE_PER_SHARD) {
        bo_block *blk = s->lru_tail, **pp;
        lru_unlink(s, blk);
        for (pp = &s->buckets[bucket_of(s, blk->hash)]; *pp != blk; pp = &(*pp)->hnext) {
        }
        *pp = blk->hnext;
        s->count--;
        pthread_mutex_lock(&blk->mu);
        bo_block_retire(blk);
        pthread_mutex_unlock(&blk->mu);
        bo_share_detach(blk->shared, blk->share_idx, blk->share_gen, 0);
        pthread_cond_destroy(&blk->cv);
        pthread_mutex_destroy(&blk->mu);
        free(blk);
    }
}

/* The block's host-wide slot, from its first use or its return to use
 * (refs 0 to 1, under its shard lock: no call uses it).  No entry for this
 * process there: its calls wait for one (bo_block_share_waits). */
static void attach(bo_block *blk, const char *key, size_t len, uint64_t h, const bo_config *cfg)
{
    unsigned idx = 0;
    uint32_t gen = 0;
    bool wait;
    bo_share_slot *slot = bo_share_attach(key, len, h, cfg, &idx, &gen, &wait);
    bo_block_set_slot(blk, slot, idx, gen);
    blk->share_retry_ns = 0;
    __atomic_store_n(&blk->share_wait, wait, __ATOMIC_RELEASE);
    if (wait && cfg->verbose)
        bo_core_line("backoff: BACKOFF_SHARE=host: %s: the shared state has no entry free for "
                     "this process (its pool spent, or the tmpfs full); its calls wait for one",
                     key);
}

bo_block *bo_block_get(const char *key)
{
    const bo_config *cfg = bo_core_config();
    bo_block *blk;
    size_t len;
    uint64_t h;
    shard *s;

    if (cfg == NULL)
        return NULL;
    h = bo_share_key_hash(key, &len); /* the host-wide file's hash starts from it */
    if (len >= BO_DEST_KEY_LEN)
        return NULL;
    /* the backends open once, before the shard lock: they may take the init lock */
    bo_share_init(cfg);
    bo_redis_init(cfg);
    s = shard_of(h);
    pthread_mutex_lock(&s->mu);
    if (s->nbuckets != 0) {
        for (blk = s->buckets[bucket_of(s, h)]; blk != NULL; blk = blk->hnext) {
            if (blk->hash == h && strcmp(blk->key, key) == 0) {
                if (__atomic_fetch_add(&blk->refs, 1, __ATOMIC_ACQ_REL) == 0) {
                    lru_unlink(s, blk);
                    if (blk->shared == NULL ||
                        !bo_share_reuse(blk->shared, blk->share_idx, blk->share_gen, cfg))
                        attach(blk, key, len, h, cfg);
                }
                goto out;
            }
        }
    }
    maybe_grow(s);
    blk = s->nbuckets != 0 ? calloc(1, sizeof *blk) : NULL;
    if (blk == NULL)
        goto out;
    memcpy(blk->key, key, len + 1);
    blk->hash = h;
    __atomic_store_n(&blk->refs, 1, __ATOMIC_RELAXED);
    bo_block_init(blk, cfg);
    attach(blk, key, len, h, cfg);
    size_t b = bucket_of(s, h);
    blk->hnext = s->buckets[b];
    s->buckets[b] = blk;
    s->count++;
out:
    pthread_mutex_unlock(&s->mu);
    return blk;
}

/*
 * References: the count changes atomically; only the moves to and from zero
 * (joining or leaving the idle list) take the shard lock.  A block with a
 * count of zero is only reached through the table, under that lock, so a
 * lock-free change (from a holder: ref, or a put that leaves one) never
 * races with its eviction.
 */
bo_block *bo_block_ref(bo_block *blk)
{
    if (blk != NULL)
        __atomic_add_fetch(&blk->refs, 1, __ATOMIC_RELAXED); /* the caller holds one */
    return blk;
}

void bo_block_put(bo_block *blk)
{
    unsigned n;
    shard *s;

    if (blk == NULL)
        return;
    n = __atomic_load_n(&blk->refs, __ATOMIC_RELAXED);
    while (n > 1) {
        if (__atomic_compare_exchange_n(&blk->refs, &n, n - 1, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED))
            return;
    }
    s = shard_of(blk->hash);
    pthread_mutex_lock(&s->mu);
    if (__atomic_sub_fetch(&blk->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        /* Idle: the host-wide entry turns idle but stays, so that the next
         * get needs no new attach (it holds nothing the file cannot take). */
        if (blk->shared != NULL)
            bo_share_idle(blk->shared, blk->share_idx);
        lru_push(s, blk);
        evict(s);
    }
    pthread_mutex_unlock(&s->mu);
}

void bo_block_totals_get(bo_block_totals *t, int64_t until_ns)
{
    uint64_t best = 0;

    *t = (bo_block_totals){0};
    for (unsigned i = 0; i < SHARDS; i++) {
        shard *s = &g_shards[i];
        pthread_mutex_lock(&s->mu);
        for (size_t b = 0; b < s->nbuckets; b++)
            for (bo_block *blk = s->buckets[b]; blk != NULL; blk = blk->hnext)
                bo_block_sum(blk, t, &best, until_ns);
        pthread_mutex_unlock(&s->mu);
    }
    bo_block_sum_retired(t);
}

/*
 * At exit: the idle blocks' host-wide entries go, so that processes ending
 * one after another (a shell loop) leave no entries for the next to reap.
 * Blocks still referenced keep theirs (another thread may be using them);
 * their entries, like those of a process killed, name a dead process and
 * are reaped.  A slot's lock is waited for until until_ns at most, all
 * slots together (a process stopped in one must not keep this one alive).
 */
void bo_block_table_exit(int64_t until_ns)
{
    for (unsigned i = 0; i < SHARDS; i++) {
        shard *s = &g_shards[i];
        pthread_mutex_lock(&s->mu);
        for (bo_block *blk = s->lru_head; blk != NULL; blk = blk->lru_next) {
            bo_share_detach(blk->shared, blk->share_idx, blk->share_gen, until_ns);
            bo_block_set_slot(blk, NULL, 0, 0);
        }
        pthread_mutex_unlock(&s->mu);
    }
}

/* Fork: every shard lock in order, then every block's mutex. */
void bo_block_table_prepare_fork(void)
{
    for (unsigned i = 0; i < SHARDS; i++)
        pthread_mutex_lock(&g_shards[i].mu);
    for (unsigned i = 0; i < SHARDS; i++) {
        shard *s = &g_shards[i];
        for (size_t b = 0; b < s->nbuckets; b++)
            for (bo_block *blk = s->buckets[b]; blk != NULL; blk = blk->hnext)
                pthread_mutex_lock(&blk->mu);
    }
}

void bo_block_table_parent_fork(void)
{
    for (unsigned i = 0; i < SHARDS; i++) {
        shard *s = &g_shards[i];
        for (size_t b = 0; b < s->nbuckets; b++)
            for (bo_block *blk = s->buckets[b]; blk != NULL; blk = blk->hnext)
                pthread_mutex_unlock(&blk->mu);
    }
    for (unsigned i = SHARDS; i-- > 0;)
        pthread_mutex_unlock(&g_shards[i].mu);
}

/*
 * In the child, each block starts its process-local state anew
 * (bo_block_child: its mutex and condvar among them), the evicted blocks'
 * counts are forgotten, and the shard locks are made anew.  References the
 * parent's other threads held (a connect() in progress) are never released
 * here: those blocks stay pinned, which costs memory, never correctness.
 * A block in use attaches to its slot as the child (when the slot now
 * holds another destination or has no entry free without a new chunk, the
 * child's calls wait and it attaches anew through the file's lock); an
 * idle one forgets its slot without touching the file (the idle entry
 * there is the parent's), and attaches anew if the child uses it.
 */
void bo_block_table_child_fork(void)
{
    bo_block_child_retired();
    for (unsigned i = 0; i < SHARDS; i++) {
        shard *s = &g_shards[i];
        for (size_t b = 0; b < s->nbuckets; b++)
            for (bo_block *blk = s->buckets[b]; blk != NULL; blk = blk->hnext) {
                bo_block_child(blk);
                bool used = __atomic_load_n(&blk->refs, __ATOMIC_RELAXED) != 0;
                /* in use, attached in the parent or waiting for an entry
                 * there: the child's calls wait until it attaches as itself */
                bool waits = used && (blk->shared != NULL || blk->share_wait);
                if (blk->shared != NULL &&
                    (!used || !bo_share_child_reattach(blk->shared, blk->key, blk->share_gen,
                                                       &blk->share_idx)))
                    bo_block_set_slot(blk, NULL, 0, 0);
                blk->share_wait = waits && blk->shared == NULL;
                blk->share_retry_ns = 0;
            }
        pthread_mutex_init(&s->mu, NULL);
    }
}
