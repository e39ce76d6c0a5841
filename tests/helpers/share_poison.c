/*
 * share_poison: writes instants far ahead into one destination's slot of the
 * host-wide state file (shim/dest/share.h), under the slot's lock, as a
 * process with another build, a bug or bad intent could: the values the
 * library reads from state others wrote, to check that none makes a wait
 * past BACKOFF_CAP_MS.
 *
 *   share_poison KEY SECONDS [window]   (XDG_RUNTIME_DIR: the test's directory)
 *
 * Sets, SECONDS from now (CLOCK_MONOTONIC, host-wide): the destination's
 * next admission (next_send_ns), the window's pace (next_send_ns, pacing
 * on), and a spent quota partition (its reset and next admission).  With
 * "window", also values no window ever holds: a window of 0, a threshold
 * of -1e308, a pace of NaN (tests/integration/test_harm_owned.sh).  Prints
 * "poisoned KEY"; exit 1 when the file or the slot is not there.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "share_file.h"

int main(int argc, char **argv)
{
    bo_share_slot *s = NULL;
    struct timespec ts;

    if (argc < 3 || argc > 4 || (argc == 4 && strcmp(argv[3], "window") != 0) ||
        getenv("XDG_RUNTIME_DIR") == NULL) {
        fprintf(stderr, "usage: share_poison KEY SECONDS [window] (XDG_RUNTIME_DIR set)\n");
        return 2;
    }
    bo_share_file *f = share_file_map();
    if (f == NULL)
        return 1;
    for (unsigned i = 0, n = bo_share_hiwater(f); i < n; i++)
        if (f->slots[i].used && strcmp(f->slots[i].key, argv[1]) == 0)
            s = &f->slots[i];
    if (s == NULL) {
        fprintf(stderr, "no slot for %s\n", argv[1]);
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t at = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec +
                 (int64_t)(atof(argv[2]) * 1e9);
    if (pthread_mutex_lock(&s->mu) == EOWNERDEAD)
        pthread_mutex_consistent(&s->mu);
    s->d.next_send_ns = at;
    s->d.window.improved = true;
    s->d.window.next_send_ns = at;
    bo_quota_slot *q = &s->d.quota.slot[0];
    q->used = true;
    q->reset_at_ns = at;
    q->next_ns = at;
    q->window_ns = 1000000000LL;
    q->avail = 0;
    q->last_remaining = 0;
    if (argc == 4) {
        s->d.window.cwnd = 0;
        s->d.window.ssthresh = -1e308;
        s->d.window.rate_limit_hz = NAN;
    }
    pthread_mutex_unlock(&s->mu);
    printf("poisoned %s\n", argv[1]);
    return 0;
}
