/*
 * share_entry.h: the processes' entries in a host-wide slot and the slot's
 * lock (share_entry.c).  First what the table and the block ask (through
 * share.h, which includes this header): the lock, idle and detach, leases,
 * waiting, reap; then, for the backend's other files (share.c,
 * share_status.c): who this process is, an entry's place and state, taking
 * and dropping entries and the pool's chunks.  All of it under the slot's
 * lock but where a function says otherwise.
 */
#ifndef BO_DEST_SHARE_ENTRY_H
#define BO_DEST_SHARE_ENTRY_H

#include <stdbool.h>
#include <stdint.h>

#include "bo_config.h"
#include "dest/share_file.h"
#include "dest/share_layout.h"

/* The chunks of s, its own first; n counts them (a chain never loops: it
 * is walked at most once per chunk of the pool). */
#define BO_SHARE_FOR_CHUNKS(s, c, n)                                                         \
    for ((c) = &(s)->m.own, (n) = 0; (c) != NULL && (n) <= BO_SHARE_POOL_CHUNKS;            \
         (c) = bo_share_chunk_next(bo_share_me.file, (s), (c)), (n)++)

/* The chunk of entry idx of s (idx valid for an attachment of s). */
static inline bo_share_chunk *bo_share_chunk_of(bo_share_slot *s, unsigned idx)
{
    if (idx < BO_SHARE_CHUNK_PROCS)
        return &s->m.own;
    return &bo_share_me.file->pool[(idx - BO_SHARE_CHUNK_PROCS) / BO_SHARE_CHUNK_PROCS];
}

static inline bo_share_proc *bo_share_entry_at(bo_share_slot *s, unsigned idx)
{
    if (idx < BO_SHARE_CHUNK_PROCS)
        return &s->m.own.procs[idx];
    idx -= BO_SHARE_CHUNK_PROCS;
    return &bo_share_me.file->pool[idx / BO_SHARE_CHUNK_PROCS].procs[idx % BO_SHARE_CHUNK_PROCS];
}

/* The entry index of c's i-th entry in slot s (see bo_share_chunk). */
static inline unsigned bo_share_entry_index(const bo_share_file *f, const bo_share_slot *s,
                                            const bo_share_chunk *c, unsigned i)
{
    if (c == &s->m.own)
        return i;
    return BO_SHARE_CHUNK_PROCS * (1 + (unsigned)(c - f->pool)) + i;
}

static inline uint32_t bo_share_entry_refs(const bo_share_proc *p)
{
    return __atomic_load_n(&p->refs, __ATOMIC_ACQUIRE);
}

/* An entry that holds nothing: no block of its process in use, no lease, no waiter. */
static inline bool bo_share_entry_idle(const bo_share_proc *p)
{
    return bo_share_entry_refs(p) == 0 && p->inflight == 0 && p->waiters == 0;
}

/* Dead processes' leases are looked for at most this often per slot. */
#define BO_SHARE_REAP_NS (250 * 1000000LL)

/*
 * The block attached as (s, idx, gen) is no longer used by the process
 * (its references went to 0, nothing in flight): its entry turns idle and
 * stays.  Takes no lock (one atomic change of the entry's own word).
 */
void bo_share_idle(bo_share_slot *s, unsigned idx);
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
/* Under the lock: give back dead processes' leases (force: now, else rate-limited). */
void bo_share_reap(bo_share_slot *s, int64_t now_ns, bool force);

/* ---- for the backend's own files ---------------------------------------- */

/* This process as its entries name it (at start, in a fork child: a new pid). */
void bo_share_identify(void);
/* The entry is this process's own (not another's, nor our image before an exec). */
bool bo_share_is_self(const bo_share_proc *p);

/* One more block of the entry's process in use. */
void bo_share_entry_ref(bo_share_chunk *c, bo_share_proc *p);
/* Some process uses the slot (a busy bit; also read without the slot's lock). */
bool bo_share_slot_busy(bo_share_slot *s);
/* No entry busy, nothing in flight (eviction, --reset). */
bool bo_share_slot_idle(bo_share_slot *s);
/* The file's lock too, slot idle: every entry dropped, its chunks given back,
 * the generation bumped (their processes attach anew). */
void bo_share_drop_idle(bo_share_slot *s);
/* The file's lock too: s's pool chunks with no entry in use (all: every one)
 * go back to the pool. */
void bo_share_release_chunks(bo_share_slot *s, bool all);
/* The file's lock too: empty chunks go back once two chunks' worth are free. */
void bo_share_trim_chunks(bo_share_slot *s);
/* This process's entry in s, made when there is none (a chunk of the pool
 * taken when can_grow, which needs the file's lock); -1: none to have. */
int bo_share_self_entry(bo_share_slot *s, int64_t now, bool can_grow);
/* This process's entry of the attachment (idx, gen); NULL: it was dropped. */
bo_share_proc *bo_share_own_entry(bo_share_slot *s, unsigned idx, uint32_t gen);

#endif
