/*
 * exchange_int.h: what the http room's exchange files share (exchange.c:
 * the records' life, the one state setter, the call and the request;
 * retry.c: an answer judged and a retry's steps; drive.c: where the steps
 * wait).  Not for the transports or the hooks: exchange.h is theirs.
 */
#ifndef BO_HTTP_EXCHANGE_INT_H
#define BO_HTTP_EXCHANGE_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "bo_classify.h"
#include "bo_ratelimit.h"
#include "http/conn.h"
#include "http/fdtab.h"

/* ---- exchange.c ---- */

/* The one place a record's state changes (and bo_hc_active follows). */
void bo_hx_set_state(bo_hconn *c, bo_hc_state st);
/* Retries under way in an event loop (c->loop), counted by bo_hx_set_state. */
extern int bo_hx_loop_retries;
/* bo_hc_active follows the record (an answer delivered, say). */
void bo_hx_update_active(bo_hconn *c);
/* Back to NONE, nothing in flight, nothing held (the record's lock held). */
void bo_hx_reset(bo_hconn *c);
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
/* The answer stands: PASS, followed to its end. */
void bo_hx_stands(bo_hconn *c);
/* bo_http_parse_response's line callback: bo_rl_header_line. */
void bo_hx_rl_line(void *ctx, const char *line, size_t len);

/* ---- drive.c ---- */

/* Where the program of a non-blocking read waits for its answer. */
typedef enum bo_hx_waits {
    BO_HX_WAITS_IN_LOOP, /* an event loop (the socket in an epoll set): *deadline its
                            next timer, less a margin */
    BO_HX_WAITS_UNSEEN,  /* nowhere the hooks see yet (a poll may follow) */
    BO_HX_WAITS_PASSED   /* an event loop that serves connections, or whose thread has
                            not waited yet (its timers unknown): its answers pass */
} bo_hx_waits;
bo_hx_waits bo_hx_waiter(const bo_hconn *c, int64_t *deadline);

/* Does the program wait for c's socket in a poll or select of its own (not
 * in an event loop's epoll set, not a server's)?  Then a write the pace
 * holds back can wait there (bo_hx_begin, bo_hx_poll_before). */
bool bo_hx_polls_itself(const bo_hconn *c);

/* The end of a program's wait, less the margin a retry leaves before it
 * (the program's own timer must find the answer there). */
int64_t bo_hx_before(int64_t now, int64_t deadline);

/* ---- retry.c ---- */

/* What a retry under way waits for: a time, events on the fd, on another fd. */
typedef struct hx_need {
    int64_t until;
    short fd_ev;   /* 0: nothing on the fd */
    int xfd;
    short x_ev;
} hx_need;

/* Where the program waits for the answer being judged (exchange.h). */
typedef enum hx_mode {
    MODE_BLOCK, /* its blocking read: look and wait inside it */
    MODE_POLL,  /* its poll or select naming the fd, until a deadline */
    MODE_LOOP,  /* its event loop (epoll), until the loop's next timer */
    MODE_NONE,  /* a non-blocking read: where its program waits is asked at a
                   throttle (bo_hx_waiter) */
    MODE_NOTE,  /* judged where no retry is made (an answer left unread: it stands) */
    MODE_READ   /* the program's read, blocking or not as its socket says: asked
                 * when it matters (hx_settle), BLOCK or NONE from then on */
} hx_mode;

typedef enum hx_judged {
    J_NOTHING,  /* nothing to say yet (EAGAIN, a head in pieces, deferred) */
    J_STANDS,   /* the answer stands: PASS */
    J_RETRYING, /* a retry is under way: RETRY */
    J_OFF,      /* the connection is left alone (the read meets what is there) */
    J_ERR       /* the read fails with *err */
} hx_judged;

/*
 * Judge the answer of the attempt in flight (SENT), as far as it came:
 * mode and deadline say where the program waits for it and until when
 * (a retry whose wait and one more attempt do not fit is not made).
 */
hx_judged bo_hx_judge(bo_hconn *c, hx_mode mode, int64_t deadline, int *err);

/* Is the whole answer whose head is m among the n bytes looked at (peek)?
 * Its length in *total. */
bool bo_hx_whole(const bo_hconn *c, const bo_http_msg *m, ssize_t n, size_t *total);

/*
 * One step of a retry under way, never waiting.  True when the record left
 * RETRY (SENT, PASS when abandoned, NONE when its socket is gone); false
 * with *need what it waits for.
 */
bool bo_hx_step(bo_hconn *c, int64_t now, hx_need *need);

/* The retry ends before its request went out again: the answer it met is
 * the program's (counted: a give-up the admission counted already). */
void bo_hx_abandon(bo_hconn *c);
void bo_hx_abandon_counted(bo_hconn *c, bool counted);

#endif
