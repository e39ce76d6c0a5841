/*
 * multi.h: the multi hooks' records, within the libcurl room (multi.c).
 * A transfer added to a managed multi handle has a record that says where
 * its call is in the real multi handle; its multi handle's counts of
 * waiting and running transfers follow from those states, changed in one
 * place (bo_multi_move), as libcurl's own multi.c changes its handles'
 * states through one function.
 */
#ifndef BO_CURL_MULTI_H
#define BO_CURL_MULTI_H

#include <stdbool.h>
#include <stdint.h>

#include "libcurl/xfer.h"

/*
 * The phases of the engine seen from the real multi handle:
 *   X_ADMIT, X_RUN, X_RETRY   ADMIT (not yet added), ATTEMPT (added),
 *                             WAIT until its time (removed);
 *   X_PASS                    a transfer the shim does not manage (added);
 *   X_DONE                    finished while added;
 *   X_DETACHED                finished while not added.
 * Pending (counted in running_handles by the shim): X_ADMIT, X_RETRY.
 * Active (in the real multi, not finished): X_RUN, X_PASS.
 */
typedef enum bo_xstate {
    BO_X_PASS = 0,
    BO_X_ADMIT,
    BO_X_RUN,
    BO_X_RETRY,
    BO_X_DONE,
    BO_X_DETACHED
} bo_xstate;

typedef struct bo_mxfer {
    CURL *h;
    struct bo_mxfer *hnext;  /* the handle index */
    struct bo_multi_rec *owner;
    struct bo_mxfer *next;   /* the multi's transfers */
    struct bo_mxfer *qnext;  /* the message queue */
    bo_xstate state;
    bool queued;
    bo_curl_xfer x;
    int64_t until;           /* X_ADMIT, X_RETRY: when to act */
    int64_t tick_at;         /* next ask of the progress callback */
    int code;                /* CURLcode of the last attempt */
    CURLMsg msg;             /* the program's copy, valid until the transfer is removed */
} bo_mxfer;

typedef struct bo_multi_rec {
    CURLM *m;
    bo_curl_real *real;
    struct bo_multi_rec *hnext;
    bo_mxfer *xfers;
    bo_mxfer *qhead, *qtail;
    int nqueued;
    int npending;            /* X_ADMIT + X_RETRY: still running for the program */
    int nactive;             /* X_RUN + X_PASS: in the real multi, not finished */
    int64_t next_due;        /* earliest `until` of the pending (INT64_MAX: none) */
    int in_real;             /* inside a real call: callbacks run, nothing is removed */
    /* CURLMOPT_TIMERFUNCTION */
    curl_multi_timer_callback timer_fn;
    void *timer_data;
    int64_t curl_timer_at;   /* libcurl's timer, absolute; -1: none */
    int64_t told_at;         /* the program's timer as last set; -1: none, -2: never set */
    bo_mxfer *spare;         /* removed transfers' records, kept for the next ones (qnext) */
    int nspare;
} bo_multi_rec;

/*
 * The one change of a transfer's state: npending and nactive follow, and a
 * pending state's time `until` (ignored otherwise) brings next_due forward.
 * A transfer leaving its multi handle moves to X_DETACHED first.
 */
void bo_multi_move(bo_multi_rec *r, bo_mxfer *x, bo_xstate st, int64_t until);

/* curl_easy_cleanup(h) is about to free h: forget it in every multi record. */
void bo_multi_easy_gone(void *h);

/* The wrapper of hooked multi function fn (BO_CURL_M_FIRST ...) bound to
 * slot's copy. */
void *bo_multi_wrapper(int slot, int fn);

#endif
