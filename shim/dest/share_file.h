/*
 * share_file.h: the host-wide state file itself (share_file.c), for the
 * backend's other files: this process's hold on it, its path, mapping it
 * (made or replaced as needed), its robust locks, its hash chains of slots.
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
 * This process's side of the host-wide state: its mapping of the file, the
 * descriptor that holds the file's shared flock for the process's life, the
 * configuration for repairs and stale resets, and the process as its
 * entries name it (pid, start time, a nonce of the library's image, since
 * exec keeps both).  Set once (share.c, bo_share_init), the identity again
 * in a fork child; `backoff --status`/`--reset` stand a mapping of their
 * own in for a walk.  Hidden: one load, not a GOT entry's two.
 */
typedef struct bo_share_this {
    bo_share_file *file;        /* NULL: process-local */
    int fd;                     /* file's descriptor; -1: none */
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
 * heading says; its descriptor, which holds the shared flock, goes to
 * bo_share_me.fd.  NULL with a reason in why (empty: nothing to say, e.g.
 * no file and create false); replaced: a bad file of ours was replaced
 * (its reason stays in why).
 */
bo_share_file *bo_share_map_file(bool create, char *why, size_t len, bool *replaced);

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
