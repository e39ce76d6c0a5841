/*
 * share_status.h: every host-wide destination as its processes share it
 * (share_status.c): the views the metrics render (dest/metrics.c,
 * BACKOFF_METRICS_FILE), and `backoff --status`/`--reset` (the wrapper).
 */
#ifndef BO_DEST_SHARE_STATUS_H
#define BO_DEST_SHARE_STATUS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "bo_config.h"
#include "dest/share_layout.h"

/*
 * One destination's figures for the metrics (dest/metrics.c), read under
 * its slot's lock: the counts, and the gauges of the moment (the window,
 * the pace in sends a second, 0: none; the attempts in flight; the
 * processes using it now and those attached idle, dead ones reaped first;
 * the last throttle's and success's age, -1: never).
 */
typedef struct bo_share_view {
    char key[BO_SHARE_KEY_LEN];
    bo_share_counts counts;
    double window, pace_hz;
    unsigned in_flight, busy, idle, holding, waiting;
    int64_t throttle_age_ns, success_age_ns;
} bo_share_view;

/*
 * The used slots of f (NULL: the user's file, mapped for the call; the
 * wrapper) as views, in slot order, in an array the caller frees (*views
 * NULL and *n 0 when there are none).  Each slot's lock is waited for until
 * until_ns (CLOCK_MONOTONIC; 0: no bound).  Returns 0; 1 when there is no
 * file (f NULL); 2 with the reason in why when the file cannot be read, a
 * lock was not taken in time or memory ran out (nothing returned).
 */
int bo_share_views(bo_share_file *f, bo_share_view **views, size_t *n, int64_t until_ns,
                   char *why, size_t whylen);

/* backoff --status / --reset (wrapper/wrapper.c): 0 ok, 1 nothing shared, 2 error. */
int bo_share_status(FILE *out);
int bo_share_reset(FILE *out, const bo_config *cfg);

#endif
