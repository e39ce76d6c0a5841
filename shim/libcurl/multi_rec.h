/*
 * multi_rec.h: the multi hooks' records, within the libcurl room
 * (multi_rec.c).  A transfer added to a managed multi handle has a record
 * that says where its call is in the real multi handle; its multi handle's
 * counts of waiting and running transfers follow from those states,
 * changed in one place (bo_multi_move), as libcurl's own multi.c changes
 * its handles' states through one function.  A multi handle's record and
 * its transfers' are its thread's alone (libcurl's rule); the table of
 * records and the index of transfers by easy handle have one leaf lock.
 */
#ifndef BO_CURL_MULTI_REC_H
#define BO_CURL_MULTI_REC_H

#include <stdbool.h>
#include <stdint.h>

#include "core/core.h"
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


/* Pending (counted in running_handles by the shim) and active states. */
static inline bool bo_xstate_pending(bo_xstate st)
{
    return st == BO_X_ADMIT || st == BO_X_RETRY;
}

static inline bool bo_xstate_active(bo_xstate st)
{
    return st == BO_X_RUN || st == BO_X_PASS;
}

/*
 * The one change of a transfer's state: npending and nactive follow, and a
 * pending state's time `until` (ignored otherwise) brings next_due forward.
 * A transfer leaving its multi handle moves to X_DETACHED first.  Inline,
 * as the other small steps below: every hook of a transfer takes several.
 */
static inline void bo_multi_move(bo_multi_rec *r, bo_mxfer *x, bo_xstate st, int64_t until)
{
    r->npending += (int)bo_xstate_pending(st) - (int)bo_xstate_pending(x->state);
    r->nactive += (int)bo_xstate_active(st) - (int)bo_xstate_active(x->state);
    x->state = st;
    if (bo_xstate_pending(st)) {
        x->until = until;
        if (until < r->next_due)
            r->next_due = until;
    }
}

/*
 * The table's figures a lookup reads first (multi_rec.c): its records (0
 * lets every call through at once), a count of removals that makes the
 * threads' cached last answers stale, and each thread's last answer.
 */
extern __attribute__((visibility("hidden"))) int bo_multi_nrecs;
extern __attribute__((visibility("hidden"))) uint64_t bo_multi_gen;
extern BO_TLS __attribute__((visibility("hidden"))) const CURLM *bo_multi_tl_m;
extern BO_TLS __attribute__((visibility("hidden"))) bo_multi_rec *bo_multi_tl_rec;
extern BO_TLS __attribute__((visibility("hidden"))) uint64_t bo_multi_tl_gen;
/* The record of m from the table, under its lock, cached for the thread. */
bo_multi_rec *bo_multi_rec_lookup(const CURLM *m);

/* The record of multi handle m (the thread's last answer first); NULL: none.
 * bo_multi_rec_of: only when it is the one of libcurl copy real. */
static inline bo_multi_rec *bo_multi_rec_find(const CURLM *m)
{
    if (__atomic_load_n(&bo_multi_nrecs, __ATOMIC_ACQUIRE) == 0 || m == NULL)
        return NULL;
    uint64_t gen = __atomic_load_n(&bo_multi_gen, __ATOMIC_ACQUIRE);
    if (m == bo_multi_tl_m && gen == bo_multi_tl_gen && bo_multi_tl_rec != NULL)
        return bo_multi_tl_rec;
    return bo_multi_rec_lookup(m);
}

static inline bo_multi_rec *bo_multi_rec_of(bo_curl_real *real, CURLM *m)
{
    bo_multi_rec *r = bo_multi_rec_find(m);
    return r != NULL && r->real == real ? r : NULL;
}
/* A new record for m, in the table; NULL: no memory. */
bo_multi_rec *bo_multi_rec_new(bo_curl_real *real, CURLM *m);
/* Out of the table (its multi handle is cleaned up), then freed with its
 * spare transfer records once its transfers are forgotten. */
void bo_multi_rec_remove(bo_multi_rec *r);
void bo_multi_rec_free(bo_multi_rec *r);

/* A transfer's record, zeroed: a spare one of r's, else a new one; given
 * back to r's spares (at most a few, the rest freed). */
bo_mxfer *bo_mxfer_new(bo_multi_rec *r);
void bo_mxfer_free(bo_multi_rec *r, bo_mxfer *x);

/* The record of easy handle h in r; NULL: none. */
static inline bo_mxfer *bo_mxfer_find(bo_multi_rec *r, const CURL *h)
{
    bo_mxfer *x;
    for (x = r->xfers; x != NULL && x->h != h; x = x->next) {
    }
    return x;
}
/* The index of the transfers by easy handle, for curl_easy_cleanup (which
 * may come without curl_multi_remove_handle): x in, x out (it must be
 * there), and the transfer of easy handle h in any managed multi handle. */
void bo_mxfer_index_add(bo_mxfer *x);
void bo_mxfer_index_del(bo_mxfer *x);
bo_mxfer *bo_mxfer_of_easy(const void *h);

/* The messages for the program: x's (a copy: libcurl's does not survive the
 * transfer's removal) queued, taken out again, and the next one read. */
void bo_multi_queue(bo_multi_rec *r, bo_mxfer *x, CURLMSG kind, int code);
void bo_multi_unqueue(bo_multi_rec *r, bo_mxfer *x);
CURLMsg *bo_multi_next_msg(bo_multi_rec *r, int *left);

/* The sooner of libcurl's timeout t (-1: none) and the shim's next deadline. */
long bo_multi_clamp_ms(const bo_multi_rec *r, long t);
/* A socket_action program's timer: told the sooner of libcurl's and the
 * shim's when that changed; bo_multi_timer_cb is the one libcurl calls
 * (CURLMOPT_TIMERFUNCTION, its data the record). */
int bo_multi_tell_timer(bo_multi_rec *r);
int bo_multi_timer_cb(CURLM *m, long timeout_ms, void *ud);

#endif
