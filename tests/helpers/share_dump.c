/*
 * share_dump: the entries of one destination's slot in the host-wide state
 * file (shim/dest/share.h), read under the slot's lock and without reaping
 * anything (`backoff --status` reaps dead processes first, so it cannot
 * tell an entry left behind from none).
 *
 *   share_dump KEY   (XDG_RUNTIME_DIR: the test's directory)
 *
 * Prints "entries N busy M" (entries in use, of which busy: a block of the
 * process in use, or a lease or a waiter), then one line per entry in use:
 * "pid P refs R inflight I waiters W".  "entries 0 busy 0" when KEY has no
 * slot.  Exit 1 when the file is not there or not this build's.
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
    if (argc != 2 || getenv("XDG_RUNTIME_DIR") == NULL) {
        fprintf(stderr, "usage: share_dump KEY (XDG_RUNTIME_DIR set)\n");
        return 2;
    }
    bo_share_file *f = share_file_map();
    if (f == NULL)
        return 1;
    for (unsigned i = 0, n = bo_share_hiwater(f); i < n; i++) {
        bo_share_slot *s = &f->slots[i];
        if (!s->used || strcmp(s->key, argv[1]) != 0)
            continue;
        if (pthread_mutex_lock(&s->mu) == EOWNERDEAD)
            pthread_mutex_consistent(&s->mu);
        unsigned entries = 0, busy = 0;
        for (unsigned j = 0; j < BO_SHARE_PROCS; j++) {
            bo_share_proc *p = &s->procs[j];
            entries += p->pid != 0;
            busy += p->pid != 0 && (p->refs != 0 || p->inflight != 0 || p->waiters != 0);
        }
        printf("entries %u busy %u\n", entries, busy);
        for (unsigned j = 0; j < BO_SHARE_PROCS; j++) {
            bo_share_proc *p = &s->procs[j];
            if (p->pid != 0)
                printf("pid %d refs %u inflight %u waiters %u\n", (int)p->pid,
                       (unsigned)p->refs, (unsigned)p->inflight, (unsigned)p->waiters);
        }
        pthread_mutex_unlock(&s->mu);
        return 0;
    }
    printf("entries 0 busy 0\n");
    return 0;
}
