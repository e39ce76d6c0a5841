/*
 * xfer.h: one libcurl transfer's call, as a state machine driven step by
 * step, within the libcurl room (xfer.c): curl_easy_perform (easy.c)
 * drives it in blocking mode, the multi hooks (multi.c) from the program's
 * own loop.
 *
 *     bo_curl_xfer_begin          once, before the first admission;
 *     bo_run_admit_wait or bo_run_admit_step  until admitted (call.h);
 *     bo_curl_xfer_attempt        just before the attempt starts;
 *     ... the attempt runs (perform, or the multi handle's loop) ...
 *     bo_curl_xfer_done           classifies and completes: retry at
 *                                 *until_ns (upload rewound), or done;
 *     bo_curl_xfer_end            once: commits the held bytes of the
 *                                 attempt that stands, returns its code.
 */
#ifndef BO_CURL_XFER_H
#define BO_CURL_XFER_H

#include <stdbool.h>
#include <stdint.h>

#include "bo_engine.h"
#include "libcurl/handle.h"

typedef struct bo_curl_xfer {
    bo_curl_rec *rec;
    bo_block *sd;
    bo_call call;
    uint64_t id;
    unsigned inflight;
    int64_t deadline;        /* the program's CURLOPT_TIMEOUT, absolute; INT64_MAX none */
    long start_pos;          /* of a FILE * upload, -1: none */
    bool rewindable;
    uint64_t key;            /* the logical request (method and URL), 0: none */
    char idem[BO_IDEM_VALUE_SIZE]; /* the Idempotency-Key the shim added ("": none) */
    uint64_t idem_body;      /* the fingerprint of the body it was made for (0: not known) */
    int answer_code;         /* the retried attempt had an answer to keep (kept.h): its
                                CURLcode; -1: none */
} bo_curl_xfer;

/* The record of h made by `real` when its calls are managed, else NULL
 * (an unmanaged handle's record is set to pass its bytes through). */
bo_curl_rec *bo_curl_managed_rec(const bo_curl_real *real, void *h);

void bo_curl_xfer_begin(bo_curl_xfer *x, bo_curl_rec *rec);
void bo_curl_xfer_attempt(bo_curl_xfer *x);
bool bo_curl_xfer_done(bo_curl_xfer *x, int code, int64_t *until_ns);
int bo_curl_xfer_end(bo_curl_xfer *x, int code);
/* The call ends without its result (cancelled): nothing held reaches the program. */
void bo_curl_xfer_drop(bo_curl_xfer *x);
/* The program's progress callback, asked while the call waits: non-zero cancels. */
int bo_curl_xfer_tick(bo_curl_xfer *x);
/* The same, for a waiter (call.h's tick) whose data is the record. */
int bo_curl_ask_progress(void *rec);

#endif
