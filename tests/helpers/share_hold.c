/*
 * share_hold: holds a lock of the host-wide state file (shim_share.h) until
 * it is killed, so that a test can SIGKILL a process that holds it.
 *
 *   share_hold slot KEY   the lock of KEY's slot (the first one with KEY)
 *   share_hold file       the file's own lock (slot allocation)
 *
 * Prints "locked" once it holds the lock, then sleeps.  Exit 1 when the file
 * or the slot is not there.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../shim/shim_share.h"

int main(int argc, char **argv)
{
    char path[PATH_MAX];
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    pthread_mutex_t *mu = NULL;

    if (argc < 2 || xdg == NULL) {
        fprintf(stderr, "usage: share_hold slot KEY | file (XDG_RUNTIME_DIR set)\n");
        return 2;
    }
    snprintf(path, sizeof path, "%s/backoff.shm", xdg);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        perror(path);
        return 1;
    }
    bo_share_file *f = mmap(NULL, sizeof *f, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (f == MAP_FAILED || f->magic != BO_SHARE_MAGIC || f->version != BO_SHARE_VERSION ||
        f->file_size != sizeof *f || f->dest_size != sizeof(bo_dest)) {
        fprintf(stderr, "%s: not this build's state file\n", path);
        return 1;
    }
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
