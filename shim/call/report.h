/*
 * report.h: what the call room reports (report.c), for admit.c and
 * complete.c: the time waited on the program's behalf, and one trace row
 * per attempt.
 */
#ifndef BO_CALL_REPORT_H
#define BO_CALL_REPORT_H

#include <stdint.h>

#include "dest/dest.h"

/* Time waited on the program's behalf for a call to b (BACKOFF_STATS'
 * wait_ms, and b's host-wide count). */
void bo_report_waited(bo_block *b, int64_t ns);

/*
 * One trace row per attempt (BACKOFF_TRACE), written when it ends:
 *   t_ms       wall clock (ms since the epoch), so that processes sharing a
 *              file interleave correctly;
 *   dest       the destination key; call: the process's call number;
 *   attempt    1 for the first attempt of the call;
 *   outcome    success | retry | final (not retryable) | gave_up (retryable,
 *              but the attempt or time budget is spent);
 *   status     HTTP status or 0; curl_code: the CURLcode, or for connect()
 *              the errno of the attempt (0 when it connected);
 *   delay_ms   the wait before the next attempt (0 unless retry);
 *   cwnd, ssthresh  the window after this attempt's completion;
 *   inflight   attempts in flight to the destination when this one was
 *              admitted, itself included (what "one probe at a time" means).
 */
typedef struct bo_trace_row {
    const char *key;
    uint64_t call_id;
    unsigned attempt;
    const char *outcome;
    int status, code;
    int64_t delay_ns;
    double cwnd, ssthresh;
    unsigned inflight;
} bo_trace_row;

void bo_report_trace(const bo_trace_row *r);

#endif
