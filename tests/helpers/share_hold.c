/*
 * share_hold: holds a lock of the host-wide state file (shim/dest/share.h) until
 * it is killed, so that a test can SIGKILL a process that holds it.
 *
 *   share_hold slot KEY   the lock of KEY's slot (the first one with KEY)
 *   share_hold file       the file's own lock (slot allocation)
 *
 * Prints "locked" once it holds the lock, then sleeps.  Exit 1 when the file
 * or the slot is not there.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "share_file.h"

int main(int argc, char **argv)
{
    pthread_mutex_t *mu = NULL;

    if (argc < 2 || getenv("XDG_RUNTIME_DIR") == NULL) {
        fprintf(stderr, "usage: share_hold slot KEY | file (XDG_RUNTIME_DIR set)\n");
        return 2;
    }
    bo_share_file *f = share_file_map();
    if (f == NULL)
        return 1;
    if (strcmp(argv[1], "file") == 0) {
        mu = &f->mu;
    } else if (strcmp(argv[1], "slot") == 0 && argc == 3) {
        for (unsigned i = 0, n = bo_share_hiwater(f); i < n; i++)
            if (f->slots[i].used && strcmp(f->slots[i].key, argv[2]) == 0)
                mu = &f->slots[i].mu;
    }
    if (mu == NULL) {
        fprintf(stderr, "no such lock: %s %s\n", argv[1], argc > 2 ? argv[2] : "");
        return 1;
    }
    int rc = pthread_mutex_lock(mu);
    if (rc == EOWNERDEAD)
        pthread_mutex_consistent(mu);
    printf("locked\n");
    fflush(stdout);
    for (;;)
        pause();
}
