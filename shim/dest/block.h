/*
 * block.h: what the table (table.c) asks of a block (block.c), within the
 * destination room: its making, its retirement, its state after a fork,
 * and its part of the stats.
 */
#ifndef BO_DEST_BLOCK_H
#define BO_DEST_BLOCK_H

#include "dest/dest.h"

/* A new block's state: mutex, condition variable, a fresh bo_dest; its own
 * backend until it is attached. */
void bo_block_init(bo_block *b, const bo_config *cfg);
/* The block's home: attached to slot s as entry idx of generation gen (the
 * host-wide backend), or (s NULL) its own state.  Only where no call uses
 * the block's lock as the other backend's (refs 0 to 1, refs 0, a fork
 * child, or under mu for a block waiting for an entry). */
void bo_block_set_slot(bo_block *b, struct bo_share_slot *s, unsigned idx, uint32_t gen);
/* Just before an evicted block is freed (under its mutex): its counts and
 * largest window still count in the stats at exit. */
void bo_block_retire(bo_block *b);
/* In a fork child: nothing of the parent's in flight, no counts, locks and
 * condition variable made anew. */
void bo_block_child(bo_block *b);
/* In a fork child: the evicted blocks' counts were the parent's. */
void bo_block_child_retired(void);
/* One block's part of the totals (under its shard lock), and the evicted ones'. */
void bo_block_sum(bo_block *b, bo_block_totals *t, uint64_t *best, int64_t until_ns);
void bo_block_sum_retired(bo_block_totals *t);

#endif
