/*
 * share_poison: writes into the host-wide state file what the library never
 * leaves there, as a bug, another build or a hand could (the file is
 * writable by every process of the user), for the harm suite of what the
 * library holds (tests/integration/test_harm_owned.sh).
 *
 *   share_poison KEY     (XDG_RUNTIME_DIR: the test's directory)
 *
 * Every slot with KEY, under its lock: the window 0, its threshold -1e308,
 * the pace NaN with its next send an hour ahead, the destination's next
 * admission an hour ahead.  Prints "poisoned N" (slots); exit 1 when the
 * file is not there or not this build's.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "share_file.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: share_poison KEY (XDG_RUNTIME_DIR set)\n");
        return 2;
    }
    bo_share_file *f = share_file_map();
    if (f == NULL)
        return 1;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t hour = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec + 3600LL * 1000000000LL;
    unsigned n = 0;
    for (unsigned i = 0; i < f->hiwater && i < BO_SHARE_SLOTS; i++) {
        bo_share_slot *s = &f->slots[i];
        if (!s->used || strcmp(s->key, argv[1]) != 0)
            continue;
        int rc = pthread_mutex_lock(&s->mu);
        if (rc == EOWNERDEAD)
            pthread_mutex_consistent(&s->mu);
        s->d.window.cwnd = 0;
        s->d.window.ssthresh = -1e308;
        s->d.window.rate_limit_hz = NAN;
        s->d.window.next_send_ns = hour;
        s->d.next_send_ns = hour;
        pthread_mutex_unlock(&s->mu);
        n++;
    }
    printf("poisoned %u\n", n);
    return 0;
}
