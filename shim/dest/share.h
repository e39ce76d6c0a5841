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
 *   reap           give back the leases of dead processes.
 * The counts (bo_share_counts) are written by dest/block.c under the lock.
 * Its files, each on those below it: every destination's views, `backoff
 * --status` and `--reset` (share_status.c); the slots (share.c, this
 * header); the processes' entries, leases and the slot's lock
 * (share_entry.c: idle, detach, lock, leases, waiting and reap are
 * declared in share_entry.h, included here); the file (share_file.c); its
 * layout (share_layout.h).
 */
#ifndef BO_DEST_SHARE_H
#define BO_DEST_SHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bo_budget.h"
#include "bo_config.h"
#include "dest/share_entry.h"
#include "dest/share_layout.h"

/* A destination nobody used for this long starts fresh (tests reuse ports). */
#define BO_SHARE_STALE_NS (60 * 1000000000LL)
/* `backoff --status`: a process told to wait this recently still waits. */
#define BO_SHARE_WAIT_SEEN_NS (1000 * 1000000LL)

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

/*
 * The idle block is used again: under the slot's lock, when the slot still
 * holds this attachment (gen) and this process's entry, the entry turns
 * busy (and a slot nobody used for BO_SHARE_STALE_NS starts fresh); false:
 * the attachment is gone (evicted, reset, its entry taken), attach anew.
 */
bool bo_share_reuse(bo_share_slot *s, unsigned idx, uint32_t gen, const bo_config *cfg);


/* Under the lock: release it, wait for a completion (when the window has
 * no room: completions make it) or until_ns, relock. */
void bo_share_wait(bo_share_slot *s, unsigned idx, int64_t until_ns);
/* Under the lock: wake as many of the calls waiting for room, of every
 * process, as the window has room for (first come, first woken). */
void bo_share_wake(bo_share_slot *s);
/* Under the lock: a completed attempt's news for --status. */
void bo_share_note(bo_share_slot *s, bool success, bool throttle, int64_t now_ns);

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

/* Under the slot's lock (`backoff --reset`, a slot handed to a key): the
 * counts start from zero (wait_ns is added to without the lock); the
 * state starts as new (leases, if any, stay counted). */
void bo_share_counts_clear(bo_share_slot *s);
void bo_share_fresh_state(bo_share_slot *s, const bo_config *cfg, int64_t now_ns);

#endif
