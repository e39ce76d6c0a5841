/*
 * retry.h: how long the exchange may wait (its bounds, in one place), an
 * answer judged (judge.c) and a throttle retried step by step (retry.c),
 * within the http room, for the files that drive them (drive.c, where the
 * steps wait; waiter.c) and each other.
 */
#ifndef BO_HTTP_RETRY_H
#define BO_HTTP_RETRY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "bo_time.h"
#include "call/call.h"
#include "http/conn.h"

/*
 * ---- how long the exchange may wait: the bounds, in one place ----
 *
 * A retry waits only where the program waits, never past the program's own
 * bound (its read's SO_RCVTIMEO, its poll's timeout, its loop's HX_LOOP_NS
 * or next timer, less HX_MARGIN_NS: bo_hx_before), BACKOFF_CAP_MS or BACKOFF_MAX_TIME_MS
 * (the engine's).  Within that:
 */
/* the rest of a throttle's head, or of the small body that lets it be taken
 * out whole, once its first bytes came; past it the answer passes through */
#define HX_MORE_NS (1000 * BO_NS_PER_MS)
/* a poll's or loop's next look at a throttle's head still arriving in pieces */
#define HX_PIECE_NS (2 * BO_NS_PER_MS)
/* a blocking read's retry: its connect, handshake and send, when the call
 * has no deadline */
#define HX_IO_NS (30 * BO_NS_PER_S)
/* the most of an event loop's time a retry takes (from the throttle to the
 * request sent again): a loop's retry lives across its turns, and the
 * program's own deadline for the request (a wait_for, an abort signal)
 * is hidden behind its other timers (waiter.c) */
#define HX_LOOP_NS (2000 * BO_NS_PER_MS)
/* the least time a retry leaves before the end of the program's wait (a
 * tenth of what is left if more): the program's own timer must find the
 * answer there */
#define HX_MARGIN_NS (50 * BO_NS_PER_MS)
/* a retry's admission asked again at least so often while a poll or a loop
 * drives it (call/'s step for every non-blocking driver) */
#define HX_ADMIT_NS BO_POLL_ADMIT_NS
/* the requests whose socket the program closed unseen, and the answers
 * left unread, swept at most so often (an event loop's wait) */
#define HX_SWEEP_NS (1000 * BO_NS_PER_MS)

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
    MODE_LOOP,  /* its event loop (epoll), across its turns (bo_hx_waiter) */
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

/* The retry must be abandoned by `end` at the latest (an event loop's wait
 * that ends sooner than the retry's bound). */
void bo_hx_retry_bound(bo_hconn *c, int64_t end);

/* May this connection be redialled (a new connection for a retry)?  Not
 * over GnuTLS (bo_hx_io.same_only), not over TLS when the certificate the
 * program accepted is not known: a redial talks only to the verified peer. */
bool bo_hx_may_redial(const bo_hconn *c);

/*
 * The engine retries the attempt just completed (its answer, looked at in
 * c->x.peek, `total` bytes when whole; none when it closed or failed first):
 * take it over.  The answer is taken out of the connection whole into the
 * held bytes (an abandoned retry still gives it to the program), the
 * connection kept when it can carry the request again, else a new one to
 * be made when the time comes (an event loop's fd holds a quiet stand-in
 * meanwhile).  loop: the program waits in an event loop; give_up: its wait
 * ends then.  0: RETRY (or PASS, abandoned at once); -1: nothing was taken,
 * the answer stands.
 */
int bo_hx_take_over(bo_hconn *c, bool answered, size_t total, bool loop, int64_t give_up);

/*
 * One step of a retry under way, never waiting.  True when the record left
 * RETRY (SENT, PASS when abandoned, NONE when its socket is gone); false
 * with *need what it waits for.
 */
bool bo_hx_step(bo_hconn *c, int64_t now, hx_need *need);

/* The call ended with no answer of its own after its request went out
 * again: the last real answer it met stands (false: there is none). */
bool bo_hx_fallback_stands(bo_hconn *c);
/* When the request sent again has met no answer for too long (INT64_MAX:
 * not such a request), and what is done then: the call ends on the last
 * real answer it met. */
int64_t bo_hx_stall_at(const bo_hconn *c);
void bo_hx_stalled(bo_hconn *c);

/* The retry ends before its request went out again: the answer it met is
 * the program's (counted: a give-up the admission counted already). */
void bo_hx_abandon(bo_hconn *c);
void bo_hx_abandon_counted(bo_hconn *c, bool counted);

#endif
