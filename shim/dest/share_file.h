/*
 * share_file.h: the host-wide state file itself (share_file.c), for the
 * backend's other files: this process's hold on it, its path, mapping it
 * (made or replaced as needed), the pages of a new slot or chunk, the guard
 * that makes a file shrunk under the mapping cost the sharing alone, its
 * robust locks, its hash chains of slots.
 */
#ifndef BO_DEST_SHARE_FILE_H
#define BO_DEST_SHARE_FILE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bo_config.h"
#include "dest/share_layout.h"

/*
 * This process's side of the host-wide state: its mapping of the file (no
 * descriptor is kept: the mapping holds the file's shared flock, see
 * share_file.c), the file's device and inode, the configuration for
 * repairs and stale resets, and the process as its entries name it (pid,
 * start time, a nonce of the library's image, since exec keeps both).  Set
 * once (share.c, bo_share_init), the identity again in a fork child;
 * `backoff --status`/`--reset` stand a mapping of their own in for a walk.
 * Hidden: one load, not a GOT entry's two.
 */
typedef struct bo_share_this {
    bo_share_file *file;        /* NULL: process-local */
    uint64_t dev, ino;          /* of the file mapped (a new page's reservation) */
    const bo_config *cfg;       /* atomic */
    uint64_t cfg_hash;          /* of cfg, made once */
    int32_t pid;
    uint64_t start, nonce;
} bo_share_this;
extern __attribute__((visibility("hidden"))) bo_share_this bo_share_me;

/* The file's path for this user: $XDG_RUNTIME_DIR/backoff.shm, else
 * /dev/shm/backoff-UID.shm; -1 when it does not fit. */
int bo_share_path(char *buf, size_t len);

/*
 * Map the user's file, creating or replacing it (create) as share_file.c's
 * heading says, guarded (bo_share_unmap undoes both); its descriptor is
 * closed before it returns, the mapping keeps the shared flock.  NULL with
 * a reason in why (empty: nothing to say, e.g. no file and create false);
 * replaced: a bad file of ours was replaced (its reason stays in why);
 * dev and ino (may be NULL): the file's.
 */
bo_share_file *bo_share_map_file(bool create, char *why, size_t len, bool *replaced,
                                 uint64_t *dev, uint64_t *ino);
void bo_share_unmap(bo_share_file *f);

/*
 * The pages of [at, at + len) of this process's mapping made real before
 * their first touch, so that a full tmpfs (or disk) is an error here, never
 * a SIGBUS in the program: false when there is no room (or the file at the
 * path is not the one mapped any more).  No descriptor outlives it.
 */
bool bo_share_reserve(bo_share_file *f, void *at, size_t len);

/*
 * The mapping was lost: the file shrank under it (someone truncated it)
 * and the SIGBUS its touch raised put zero memory of the process's own in
 * its place, or its header is not a state file's any more.  The process
 * goes on with its own state (share.c looks at every attach and reuse);
 * the first caller that sees it says so under BACKOFF_VERBOSE (true once).
 */
bool bo_share_lost(const bo_share_file *f);
bool bo_share_lost_first(void);
/* Set (by the guard's SIGBUS handler) once a mapping was lost. */
extern __attribute__((visibility("hidden"))) int bo_share_lost_flag;

/* Lock a robust mutex of the file, never waiting on it unseen for long: a
 * held lock is waited for in slices, each of which touches the mutex again
 * (a file truncated meanwhile is found then, never slept on for good).
 * pthread_mutex_lock's codes. */
int bo_share_mutex_lock(pthread_mutex_t *mu);
/* After pthread_mutex_timedlock gave rc: a lock taken from a dead holder
 * (EOWNERDEAD) is told to ThreadSanitizer, whose interceptor counts only
 * 0 as taken (nothing in other builds). */
void bo_share_timedlock_owned(pthread_mutex_t *mu, int rc);

/* A robust, process-shared mutex, made anew. */
void bo_share_mutex_init(pthread_mutex_t *mu);
/* After a lock of robust mutex mu failed with rc: its dead holder's state
 * repaired (repair(arg)), mu consistent and held: true; false (not held)
 * for any other error. */
bool bo_share_lock_mend(pthread_mutex_t *mu, int rc, void (*repair)(void *), void *arg);
/* The file's lock (slot and chunk allocation); a holder's death is repaired
 * (the hash chains and the pool's free list made anew) before it returns. */
void bo_share_lock_file(bo_share_file *f);

/* The hash chains of used slots (by key and configuration), under the file's lock. */
void bo_share_chain_link(bo_share_file *f, bo_share_slot *s);
void bo_share_chain_unlink(bo_share_file *f, bo_share_slot *s);
bo_share_slot *bo_share_chain_find(bo_share_file *f, const char *key, uint64_t h, uint64_t ch);

#endif
