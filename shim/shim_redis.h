/*
 * shim_redis: the fleet backend (BACKOFF_SHARE=redis://..., issue 14).  The
 * host-wide state (shim_share.c) stays authoritative for admission; Redis
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
#ifndef BO_SHIM_REDIS_H
#define BO_SHIM_REDIS_H

#include <stdbool.h>
#include <stdint.h>

#include "bo_classify.h"
#include "bo_config.h"

/* After load_config: print cfg->share_warning, read REDISCLI_AUTH, arm the
 * backend when cfg says redis (nothing connects before the first call). */
void bo_redis_configure(const bo_config *cfg);

/* The fleet applies to this process's calls (cheap: one load). */
bool bo_redis_active(void);

typedef enum bo_redis_answer {
    BO_REDIS_GO = 0,     /* go: *lease holds the fleet lease */
    BO_REDIS_WAIT,       /* the fleet says wait: ask again at *until_ns with *ticket,
                            the call's place in the fleet's queue (first come, first
                            served: the asks of the calls ahead come sooner) */
    BO_REDIS_ALONE       /* no answer: go on the host-wide state alone (*lease = 0) */
} bo_redis_answer;

/* One admission step for destination key at now_ns (CLOCK_MONOTONIC). */
bo_redis_answer bo_redis_admit(const char *key, int64_t now_ns, uint64_t *lease,
                               uint64_t *ticket, int64_t *until_ns);

/* The leased attempt ended (outcome as classified) or never ran (cancel): lease
 * goes back, the fleet window and pace learn from it; *lease is cleared. */
void bo_redis_complete(const char *key, uint64_t *lease, const bo_outcome *outcome);
void bo_redis_cancel(const char *key, uint64_t *lease);
/* A call that stops waiting for the fleet (deadline, cap, signal) leaves its
 * place in the queue (else it is dropped 150 ms after its last ask); *ticket
 * is cleared. */
void bo_redis_leave_queue(const char *key, uint64_t *ticket);

/* Fork: the child drops (never uses, never frees) the parent's connection. */
void bo_redis_prepare_fork(void);
void bo_redis_parent_fork(void);
void bo_redis_child_fork(void);

#endif
