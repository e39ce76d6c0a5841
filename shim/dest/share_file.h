/*
 * share_file.h: the host-wide state file itself (share_file.c), for the
 * backend's other files: its path, mapping it (made or replaced as needed),
 * its robust locks and their repair, its hash chains of slots.  The slots'
 * own lock (bo_share_lock) is in share.h.
 */
#ifndef BO_DEST_SHARE_FILE_H
#define BO_DEST_SHARE_FILE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dest/share_layout.h"

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
/* The file's lock (slot and chunk allocation); a holder's death is repaired
 * (the hash chains and the pool's free list made anew) before it returns. */
void bo_share_lock_file(bo_share_file *f);

/* The hash chains of used slots (by key and configuration), under the file's lock. */
void bo_share_chain_link(bo_share_file *f, bo_share_slot *s);
void bo_share_chain_unlink(bo_share_file *f, bo_share_slot *s);
bo_share_slot *bo_share_chain_find(bo_share_file *f, const char *key, uint64_t h, uint64_t ch);

#endif
