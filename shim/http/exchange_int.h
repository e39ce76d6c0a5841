/*
 * exchange_int.h: what the http room's exchange files share (exchange.h is
 * the transports' and the hooks'): exchange.c's and request.c's request,
 * call.c's call, key.c's key, drive.c's and waiter.c's waits (record.c:
 * record.h; the bounds of the waits, judge.c and retry.c: retry.h).
 */
#ifndef BO_HTTP_EXCHANGE_INT_H
#define BO_HTTP_EXCHANGE_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "bo_budget.h"
#include "bo_classify.h"
#include "bo_ratelimit.h"
#include "bo_time.h"
#include "call/call.h"
#include "http/retry.h"
#include "http/conn.h"
#include "http/held.h"
#include "http/exchange.h"
#include "http/fdtab.h"

/* ---- exchange.c (the paths), request.c (the request and its answer) ---- */

/*
 * A write of buf (len bytes) on an IDLE connection: the start of a request
 * whose whole head is in buf; dontwait: the call may not wait.  0: its
 * first attempt is admitted (REQ); EINTR, EAGAIN: nothing written (the
 * write path's ERR); -1: the hooks leave the request alone (the connection
 * stays followed when only this request is left alone).
 */
int bo_hx_begin(bo_hconn *c, const char *buf, size_t len, bool dontwait);
/* A request opens with buf, its whole head: read (bo_hx_sent reads on
 * after it), its answer to come judged anew: 0, or -1 (not one to keep: its
 * head not in buf, not HTTP/1.x, a tunnel, an Expect).  _kept: kept from its
 * first byte (false: followed, never sent again). */
int bo_hx_request_open(bo_hconn *c, const char *buf, size_t len);
static inline void bo_hx_request_kept(bo_hconn *c, bool kept)
{
    c->x.kept_len = 0;
    c->x.kept_ok = kept;
}
/* n bytes of the request went out (REQ): read, kept. */
void bo_hx_sent(bo_hconn *c, const char *buf, size_t n);
/* n more bytes of the kept request (_insert: at `at`, the key's line): 0,
 * or -1 (past the cap, no memory: kept_ok false for _insert). */
int bo_hx_keep_append(bo_hconn *c, const char *buf, size_t n);
int bo_hx_keep_insert(bo_hconn *c, size_t at, const char *buf, size_t n);
/* An answer to be judged anew (a request begins, or goes out again). */
void bo_hx_answer_anew(bo_hconn *c);
/* What the last exchange left of the request (its shutdowns, a deferred
 * throttle, its kept bytes) forgotten: the group's setter for record.c. */
static inline void bo_hx_request_forget(bo_hconn *c)
{
    c->x.shut_wr = c->x.shut_rd = c->x.deferred = false;
    c->x.kept_len = 0;
}
/* The program consumed n bytes of the answer that stands (PASS; n 0: the
 * peer closed), held bytes included. */
void bo_hx_consumed(bo_hconn *c, const char *buf, size_t n);
/* The answer stands: PASS, followed to its end. */
void bo_hx_stands(bo_hconn *c);
/* bo_http_parse_response's line callback: bo_rl_header_line. */
void bo_hx_rl_line(void *ctx, const char *line, size_t len);

/* ---- call.c ---- */

/* The destination of request s: the connection's last one when it went to
 * the same Host (a reference kept in the record: no key made, no lookup),
 * else its block from the table (a new reference), remembered.  NULL when
 * the request is not one to manage. */
bo_block *bo_hx_destination(bo_hconn *c, const bo_config *cfg, const bo_http_msg *s);
/* The call of the request begins on b: true when it continues the
 * program's earlier try of the same logical request (*prev). */
bool bo_hx_start_call(bo_hconn *c, bo_block *b, int64_t now, bo_lineage *prev);
/* The call group's setters for the others: the attempt admitted; the call
 * and the destination cache dropped (a reset); left to the parent (a fork
 * child). */
static inline void bo_hx_admitted(bo_hconn *c)
{
    c->call.admitted = true;
}
/* The engine's moves on the call: an admission step (bo_run_admit_step),
 * at once (bo_run_admit_now), a blocking one (bo_run_admit_intr); is it
 * waiting for its retry's time (else due now: admitted next); its deadline
 * bounded (the sooner wins). */
static inline bo_step bo_hx_admit_step(bo_hconn *c, int64_t now, int64_t max_wait_ns,
                                       int64_t *until)
{
    return bo_run_admit_step(c->call.dest, &c->call.run, now, &c->call.inflight, max_wait_ns,
                             until);
}
bool bo_hx_admit_now(bo_hconn *c, int64_t now);
int bo_hx_admit_intr(bo_hconn *c, int64_t deadline);
bool bo_hx_call_waits(bo_hconn *c, int64_t now);
void bo_hx_call_bound(bo_hconn *c, int64_t deadline);
void bo_hx_call_forget(bo_hconn *c);
void bo_hx_call_disown(bo_hconn *c);
/* The call ends before its request went out (the pace holds it back, a
 * signal): the logical request it continues stays as it was for the
 * program's next write of it. */
void bo_hx_withdraw_call(bo_hconn *c);
/* The call ends: its logical request recorded for the program's next try. */
void bo_hx_end_call(bo_hconn *c, bool failed_retryable);
/* The call gives up where it stands (an admitted attempt's slot back). */
void bo_hx_drop_call(bo_hconn *c, bool failed_retryable);
/* The admitted attempt ended: completed; true: retry no sooner than *until. */
bool bo_hx_complete(bo_hconn *c, bo_outcome o, int status, int code, int64_t ra_ns,
                    const bo_rl_headers *rl, int64_t *until);
/* The facts bo_classify judges the attempt by; rl the rate-limit headers of
 * its whole head (NULL: not whole yet, bo_answer_quota_spent). */
bo_outcome bo_hx_classify(const bo_hconn *c, int status, int code, const bo_rl_headers *rl);

/* ---- key.c ---- */

/* The request carries no key of the shim's (a call begins). */
static inline void bo_hx_key_none(bo_hconn *c)
{
    c->key.keyed = c->key.added = false;
    c->key.inj_len = c->key.inj_off = 0;
}
/* The admitted request's key, when it gets one (its first write buf, len
 * bytes; prev: the logical request it continues, NULL none), after
 * bo_hx_key_none. */
void bo_hx_key_begin(bo_hconn *c, const char *buf, size_t len, const bo_lineage *prev);
/* While the key goes into the first write: the bytes to write in place of
 * the program's next n (NULL: the program's own); how many of the
 * program's bytes the w written stand for. */
const char *bo_hx_inject(const bo_hconn *c, size_t n, size_t *len);
size_t bo_hx_injected(bo_hconn *c, size_t w);
/* The key's line (CR LF ended, *len bytes, in line) for the kept request
 * once its head is kept whole (NULL: none); _kept: it is in. */
const char *bo_hx_key_line(const bo_hconn *c, char *line, size_t cap, size_t *len);
void bo_hx_key_kept(bo_hconn *c);

/* ---- drive.c ---- */

/*
 * The program's read on a connection whose request or answer is in flight
 * (REQ, SENT, RETRY; PASS passes).  blocking: 1 the read may wait (a
 * blocking socket without MSG_DONTWAIT; the program's own blocking read
 * waits as it would have), 0 it may not, BO_HX_ASK: the socket's
 * O_NONBLOCK says, asked only when it matters (not for a clean answer).
 * PASS: read as the program asked (held bytes first), the answer stands;
 * ERR: *err (EAGAIN: nothing yet; EINTR: a signal); OFF: read as the
 * program asked, the connection is left alone.
 */
#define BO_HX_ASK (-1)
bo_hx_verdict bo_hx_read(bo_hconn *c, int blocking, int *err);

/* Where the program of a non-blocking read waits for its answer. */
typedef enum bo_hx_waits {
    BO_HX_WAITS_IN_LOOP, /* an event loop (the socket in an epoll set): *deadline
                            HX_LOOP_NS away, or its next timer when later, less a
                            margin */
    BO_HX_WAITS_UNSEEN,  /* nowhere the hooks see yet (a poll may follow) */
    BO_HX_WAITS_PASSED   /* an event loop that serves connections, or whose thread has
                            not waited yet (its timers unknown): its answers pass */
} bo_hx_waits;
bo_hx_waits bo_hx_waiter(const bo_hconn *c, int64_t *deadline);

/*
 * The write side's wait, beside the read side's: the first attempt's
 * admission for a write that starts a request (bo_hx_begin).  A write the
 * program may not wait in (dontwait, O_NONBLOCK) goes at once, counted in
 * the window, unless its program polls the plain socket itself (a socket
 * with a timeout): then the pace holds it back for that poll (EAGAIN, *until
 * the pace's time); or waits for it in an event loop: then the pace alone
 * (not the window) holds it back, up to HX_LOOP_NS (EAGAIN, *loop); a
 * blocking write waits as a blocking send would (EINTR: a signal without
 * SA_RESTART), no longer than its SO_SNDTIMEO, BACKOFF_MAX_TIME_MS or
 * BACKOFF_CAP_MS.  0: admitted; -1: no slot in time.
 */
int bo_hx_write_waits(bo_hconn *c, int64_t now, bool dontwait, int64_t *until, bool *loop);

/* Where does the program wait for c's socket to be writable: in a poll or
 * select of its own (UNSEEN), in an event loop's epoll set (IN_LOOP), a
 * server's loop (PASSED)?  A write the pace holds back waits in the first
 * two (bo_hx_begin, bo_hx_poll_before, bo_hc_pace_mask). */
bo_hx_waits bo_hx_writer(const bo_hconn *c);

/* The end of a program's wait, less the margin a retry leaves before it
 * (the program's own timer must find the answer there). */
int64_t bo_hx_before(int64_t now, int64_t deadline);

#endif
