/*
 * redis: the fleet backend (BACKOFF_SHARE=redis://...).  The host-wide
 * state (share.c) stays authoritative for admission; Redis
 * adds the fleet's part of each destination (aimd only): a fleet window of
 * leases with expiry and a fleet pace, kept by one Lua script (EVALSHA) that
 * reads Redis's own clock (TIME).  One round trip per admission step and one
 * per completion, each bounded by the URL's timeout_ms (BO_REDIS_TIMEOUT_MS,
 * 20 ms, by default); no answer in time, a
 * connection refused or reset, a script lost: this process goes on with the
 * host-wide state alone at once, says so once under BACKOFF_VERBOSE, and
 * tries to reconnect after 1 s (doubling up to 30 s).  A connection belongs
 * to one process: a child after fork() makes its own.
 */
#ifndef BO_DEST_REDIS_H
#define BO_DEST_REDIS_H

#include <stdbool.h>
#include <stdint.h>

#include "bo_classify.h"
#include "bo_config.h"
#include "dest/dest.h"

/* Once, before the first destination is used (the table calls it): read
 * REDISCLI_AUTH and arm the backend when cfg says redis (nothing connects
 * before the first admission). */
void bo_redis_init(const bo_config *cfg);

/* The fleet applies to this process's calls (cheap: one load). */
bool bo_redis_active(void);

/*
 * One admission step for destination key at now_ns (CLOCK_MONOTONIC):
 * BO_FLEET_GO, *lease holds the fleet lease; BO_FLEET_WAIT, ask again at
 * *until_ns with *ticket, the call's place in the fleet's queue (first
 * come, first served: the asks of the calls ahead come sooner);
 * BO_FLEET_ALONE, no answer: go on the host-wide state alone (*lease = 0).
 */
bo_fleet_answer bo_redis_admit(const char *key, int64_t now_ns, uint64_t *lease,
                               uint64_t *ticket, int64_t *until_ns);

/* The leased attempt ended (outcome as classified) or never ran (cancel): lease
 * goes back, the fleet window and pace learn from it; *lease is cleared. */
void bo_redis_complete(const char *key, uint64_t *lease, const bo_outcome *outcome);
void bo_redis_cancel(const char *key, uint64_t *lease);
/* A call that stops waiting for the fleet (deadline, cap, signal) leaves its
 * place in the queue (else it is dropped 150 ms after its last ask); *ticket
 * is cleared. */
void bo_redis_leave_queue(const char *key, uint64_t *ticket);

/* Fork (the one list in fork/fork.c): its locks are leaves; the child frees
 * its copy of the parent's connection and connects anew as itself. */
void bo_redis_prepare_fork(void);
void bo_redis_parent_fork(void);
void bo_redis_child_fork(void);

#endif
