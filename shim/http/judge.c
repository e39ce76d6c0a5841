/*
 * judge.c: the answer of an attempt judged, within the http room
 * (exchange_int.h's bo_hx_judge), in the order of its steps:
 *
 *   1. read the answer: looked at as far as it came (nothing consumed),
 *      its head parsed (bo_http): an interim answer goes at once, a head
 *      still in pieces is waited for where the program would wait;
 *   2. classify it (bo_classify, as a libcurl answer is, its rate-limit
 *      headers read by bo_answer_quota_spent);
 *   3. may this place retry it: where the program waits for it (a
 *      non-blocking read asks, bo_hx_waiter), whether the throttle came
 *      whole, whether the request can be sent again here (kept, not shut,
 *      a new connection allowed: bo_hx_may_redial);
 *   4. bound the deadline by the program's own (a blocking read's
 *      SO_RCVTIMEO, its poll's timeout; a loop's: bo_hx_waiter);
 *   5. complete the attempt: the engine says whether it is retried; a
 *      retry is taken over (retry.c), or the answer stands.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <time.h>

#include "bo_classify.h"
#include "bo_ratelimit.h"
#include "bo_time.h"
#include "call/call.h"
#include "core/core.h"
#include "http/exchange_int.h"
#include "http/record.h"
#include "http/retry.h"
#include "http/sockwait.h"

/* One answer as the judging sees it. */
typedef struct hx_answer {
    ssize_t n;          /* bytes looked at in c->x.peek; 0: closed first; < 0: failed (e) */
    int e;
    bool answered;      /* n > 0 */
    int status, code;   /* its final status (0: none); a failure's libcurl code */
    int64_t now;        /* when it was looked at */
    int64_t ra_ns;      /* its Retry-After (-1: none) */
    size_t total;       /* its whole length, once known to be among the bytes looked at */
    bo_rl_headers rl;   /* its head's rate-limit headers (read once the head is whole) */
} hx_answer;

/* What a step says besides a judging (hx_judged): go on to the next step,
 * or look at the answer again (more of it came). */
enum { HX_GO_ON = -1, HX_LOOK_AGAIN = -2 };

/* Is the whole answer (its head read into m, n bytes looked at in peek)
 * among the bytes looked at?  Its length in *total.  A close-delimited
 * answer never is (its end is the close). */
bool bo_hx_whole(const bo_hconn *c, const bo_http_msg *m, ssize_t n, size_t *total)
{
    if (m->framing == BO_HTTP_FRAMING_CLOSE || m->framing == BO_HTTP_FRAMING_TUNNEL)
        return false;
    bo_http_msg b = *m;
    size_t used;
    if (bo_http_feed(&b, c->x.peek + m->head_len, (size_t)n - m->head_len, &used) != BO_HTTP_DONE)
        return false;
    *total = m->head_len + used;
    return true;
}

static bool whole_now(bo_hconn *c, hx_answer *a)
{
    return a->answered && bo_hx_whole(c, c->x.resp, a->n, &a->total);
}

/* A read's mode once it matters: its socket's O_NONBLOCK asked (a clean
 * answer, the common case, never needs it: a system call saved a read). */
static hx_mode settle(const bo_hconn *c, hx_mode mode)
{
    if (mode != MODE_READ)
        return mode;
    return bo_hs_nonblocking(c->fd) ? MODE_NONE : MODE_BLOCK;
}

/*
 * More of the answer than the n bytes looked at, for a blocking read that
 * waits for the rest of a head or of a throttle's body: looked at again
 * until more came, the peer closed or until_ns.  A plain socket's peeked
 * bytes stay readable, so its POLLIN tells nothing new: the wait is short
 * sleeps (50 us, doubling to 2 ms), the peer's close seen by POLLRDHUP.
 * Returns the bytes looked at now (n when nothing more came).
 */
static ssize_t look_more(bo_hconn *c, ssize_t n, int64_t until_ns)
{
    int64_t pause = 50 * 1000;
    for (;;) {
        ssize_t k = c->io->look(c, false);
        if (k > n)
            return k;
        struct pollfd p = {.fd = c->fd, .events = POLLRDHUP};
        if (bo_core_sys_poll(&p, 1, 0) > 0 &&
            (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL))) {
            k = c->io->look(c, false);
            return k > n ? k : n;
        }
        int64_t now = bo_core_now_ns();
        if (now >= until_ns)
            return n;
        if (pause > until_ns - now)
            pause = until_ns - now;
        struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)pause};
        nanosleep(&ts, NULL);
        if (pause < 2 * BO_NS_PER_MS)
            pause *= 2;
    }
}

/* Is the program's bound for the rest of the answer not past yet (its first
 * byte came less than HX_MORE_NS ago, and it fits the bytes looked at)? */
static bool more_may_come(const bo_hconn *c, const hx_answer *a)
{
    return a->n < BO_HC_PEEK_MAX && a->now - c->x.first_byte_ns < HX_MORE_NS;
}

/* The attempt completed where no retry is asked for, the answer standing. */
static hx_judged stands_as(bo_hconn *c, bo_outcome o, int status)
{
    int64_t until;
    (void)bo_hx_complete(c, o, status, BO_CURLE_OK, -1, NULL, &until);
    bo_hx_stands(c);
    return J_STANDS;
}

/* ---- 1. read the answer ----------------------------------------------------------- */

/*
 * A head not whole yet (its status may have come): an answer that is not a
 * throttle stands at once (its head is not needed whole); the rest of a
 * throttle's is waited for where the program waits (a blocking read: a
 * moment here; else the program's next read or poll), then it stands.
 */
static int head_in_pieces(bo_hconn *c, hx_mode *mode, hx_answer *a, int *err)
{
    bool final = a->status >= 200;
    bo_outcome so_far = bo_hx_classify(c, a->status, BO_CURLE_OK, NULL);
    if (final && so_far.verdict != BO_VERDICT_RETRY)
        return stands_as(c, so_far, a->status);
    if (more_may_come(c, a)) {
        if ((*mode = settle(c, *mode)) != MODE_BLOCK) {
            *err = EAGAIN; /* the rest is on its way */
            return J_NOTHING;
        }
        if (look_more(c, a->n, c->x.first_byte_ns + HX_MORE_NS) > a->n)
            return HX_LOOK_AGAIN;
    }
    if (!final) { /* no status in time: an answer the hooks cannot read */
        bo_hx_off(c);
        return J_OFF;
    }
    /* a throttle whose head does not come whole: it stands */
    bo_outcome fin = {BO_VERDICT_FINAL, BO_SIGNAL_NONE, false, BO_CAUSE_NONE};
    return stands_as(c, fin, a->status);
}

/*
 * A retry's request sent again, read by a blocking read: its answer is
 * waited for until BACKOFF_CAP_MS after it went, or the read's own
 * SO_RCVTIMEO (less the margin), the sooner; then the call ends on the last
 * real answer it met (bo_hx_stalled: the program alone had it at once).
 */
static bool blocking_stall(bo_hconn *c, hx_mode *mode)
{
    int64_t stall = bo_hx_stall_at(c);
    if (stall == INT64_MAX || (*mode = settle(c, *mode)) != MODE_BLOCK ||
        (c->io->pending != NULL && c->io->pending(c)))
        return false;
    int64_t now = bo_core_now_ns(), t = bo_hs_rcvtimeo(c->fd);
    if (t > 0 && bo_hx_before(now, now + t) < stall)
        stall = bo_hx_before(now, now + t);
    /* looked at without waiting (the socket's own flags set back after: a
     * TLS socket's readable bytes may be a record that carries no answer, a
     * session ticket, which a blocking look would read, then wait past the
     * bound), until something comes or the bound */
    int fl = fcntl(c->fd, F_GETFL);
    if (fl < 0 || fcntl(c->fd, F_SETFL, fl | O_NONBLOCK) != 0)
        return false;
    bool came = false;
    for (;;) {
        if (c->io->look(c, false) >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
            came = true; /* something came (or the close): judged as it is */
            break;
        }
        if (bo_hs_wait_fd(c->fd, POLLIN, stall) != 0 && bo_core_now_ns() >= stall)
            break;
    }
    (void)fcntl(c->fd, F_SETFL, fl);
    if (came)
        return false;
    bo_hx_stalled(c);
    return true;
}

/* Step 1: the answer as far as it came.  HX_GO_ON: its head read whole, or
 * none came (closed, failed); else what the judging says now. */
static int read_answer(bo_hconn *c, hx_mode *mode, hx_answer *a, int *err)
{
    if (blocking_stall(c, mode))
        return c->st == BO_HC_PASS ? J_STANDS : J_OFF;
    a->n = c->io->look(c, *mode == MODE_BLOCK || *mode == MODE_READ);
    a->e = errno;
    a->answered = a->n > 0;
    a->status = 0;
    a->code = BO_CURLE_OK;
    a->now = bo_core_now_ns();
    a->total = 0;
    if (a->n < 0 && (a->e == EAGAIN || a->e == EWOULDBLOCK || a->e == EINTR)) {
        *err = a->e; /* nothing yet: the program polls, or its signal came */
        return J_NOTHING;
    }
    if (!a->answered) { /* closed or failed before any byte of an answer */
        a->code = a->n == 0 ? BO_CURLE_GOT_NOTHING : BO_CURLE_RECV_ERROR;
        return HX_GO_ON;
    }
    if (c->x.first_byte_ns == 0)
        c->x.first_byte_ns = a->now;
    bo_rl_headers_reset(&a->rl);
    bo_http_rc rc = bo_http_parse_response(c->x.peek, (size_t)a->n, c->x.req.method, c->x.resp,
                                           bo_hx_rl_line, &a->rl);
    if (rc == BO_HTTP_NOT_HTTP || rc == BO_HTTP_TOO_LARGE) {
        bo_hx_off(c);
        return J_OFF;
    }
    a->status = c->x.resp->status;
    if (c->x.resp->interim > 0 || (a->status >= 100 && a->status < 200 && a->status != 101)) {
        /* an interim answer (103 Early Hints, 102 Processing) goes to the
         * program at once; the exchange is followed as it stands */
        bo_outcome ok = {BO_VERDICT_SUCCESS, BO_SIGNAL_NONE, false, BO_CAUSE_NONE};
        int64_t until;
        (void)bo_hx_complete(c, ok, a->status, BO_CURLE_OK, -1, NULL, &until);
        bo_http_msg_response(c->x.resp, c->x.req.method);
        c->x.resp_skip = 0;
        c->x.deferred = false;
        bo_hx_set_state(c, BO_HC_PASS);
        return J_STANDS;
    }
    return rc == BO_HTTP_NEED_MORE ? head_in_pieces(c, mode, a, err) : HX_GO_ON;
}

/* ---- 3. may this place retry it ----------------------------------------------------- */

/*
 * A non-blocking read: where does its program wait?  In an event loop:
 * there, across its turns (bo_hx_waiter's bound); nowhere seen yet: the answer is left where
 * it is, once, for the program's poll (which judges it then) or its next
 * read; a server's loop, or a second look: nowhere (MODE_NONE).
 */
static int where_waits(bo_hconn *c, hx_mode *mode, int64_t *deadline, int *err)
{
    switch (bo_hx_waiter(c, deadline)) {
    case BO_HX_WAITS_IN_LOOP:
        *mode = MODE_LOOP; /* (across its turns: bo_hx_waiter's bound) */
        break;
    case BO_HX_WAITS_UNSEEN:
        if (!c->x.deferred) {
            c->x.deferred = true;
            *err = EAGAIN;
            return J_NOTHING;
        }
        break;
    case BO_HX_WAITS_PASSED:
        break;
    }
    return HX_GO_ON;
}

/* The body of a throttle on its way: a moment for it in a blocking read;
 * where the program polls, nothing for it yet (a server writes its head
 * and its body apart): judged whole when the rest comes. */
static int throttle_whole(bo_hconn *c, hx_mode mode, hx_answer *a, int *err)
{
    if (!a->answered || whole_now(c, a))
        return HX_GO_ON;
    if (mode == MODE_BLOCK) {
        while (a->n < BO_HC_PEEK_MAX) {
            ssize_t k = look_more(c, a->n, c->x.first_byte_ns + HX_MORE_NS);
            if (k <= a->n)
                break;
            a->n = k;
            if (whole_now(c, a))
                break;
        }
    } else if ((mode == MODE_POLL || mode == MODE_LOOP) && more_may_come(c, a)) {
        *err = EAGAIN;
        return J_NOTHING;
    }
    return HX_GO_ON;
}

/* Can the request be sent again from here: kept whole, its answer taken out
 * whole, the program waiting where a retry may wait, the connection not
 * shut for reading, and a connection to send it on (the same one, kept
 * alive, or a new one where one may be made; a half-closed request only on
 * a new plain one, with the same shutdown)? */
static bool can_send_again(bo_hconn *c, hx_mode mode, hx_answer *a)
{
    if (!c->x.kept_ok || c->x.shut_rd || mode == MODE_NONE || mode == MODE_NOTE)
        return false;
    if (a->answered && !whole_now(c, a))
        return false;
    if (c->x.shut_wr && (c->tls || !bo_hx_may_redial(c)))
        return false;
    return bo_hx_may_redial(c) || (a->answered && c->x.resp->keep_alive);
}

/* Step 3: may the throttle be retried here?  HX_GO_ON with o's verdict
 * FINAL when it cannot be sent again here; else what the judging says now. */
static int retry_here(bo_hconn *c, hx_mode *mode, int64_t *deadline, hx_answer *a,
                      bo_outcome *o, int *err)
{
    int r;
    if (!bo_hx_same_socket(c))
        return J_OFF; /* another socket on that number: not this request's answer */
    if ((*mode = settle(c, *mode)) == MODE_NONE &&
        (r = where_waits(c, mode, deadline, err)) != HX_GO_ON)
        return r;
    if ((r = throttle_whole(c, *mode, a, err)) != HX_GO_ON)
        return r;
    if (!can_send_again(c, *mode, a))
        o->verdict = BO_VERDICT_FINAL;
    return HX_GO_ON;
}

/* ---- 4. bound the deadline ---------------------------------------------------------- */

/* A retry's wait never outlasts the program's: a blocking read's
 * SO_RCVTIMEO (when the call has no deadline), the poll's, the loop's
 * bound (bo_hx_waiter). */
static void bound_deadline(bo_hconn *c, hx_mode mode, int64_t deadline, int64_t now)
{
    if (mode == MODE_BLOCK && c->call.run.deadline_ns == INT64_MAX) {
        int64_t t = bo_hs_rcvtimeo(c->fd);
        if (t > 0)
            deadline = now + t;
    }
    bo_hx_call_bound(c, deadline);
}

/* ---- 5. complete ------------------------------------------------------------------ */

/* Step 5: the attempt completed with o: retried (taken over), or the answer
 * stands (or, when none came, the program's read meets the close or the
 * failure itself). */
static hx_judged complete_judged(bo_hconn *c, hx_mode mode, int64_t deadline, hx_answer *a,
                                 bo_outcome o, int *err)
{
    int64_t until;
    c->x.deferred = false;
    if (a->answered)
        bo_hc_fallback_drop(c); /* an answer of its own: the last real one now */
    bool again = bo_hx_complete(c, o, a->status, a->code, a->ra_ns, a->answered ? &a->rl : NULL,
                                &until);
    if (again && bo_hx_take_over(c, a->answered, a->total, mode == MODE_LOOP,
                                 mode == MODE_BLOCK ? INT64_MAX : deadline) == 0)
        return c->st == BO_HC_RETRY ? J_RETRYING : J_STANDS;
    if (again) { /* it could not be taken over: the call ends on the answer it met */
        bo_run_abandoned(c->call.dest);
        bo_hx_end_call(c, true);
    }
    if (a->answered) {
        bo_hx_stands(c);
        return J_STANDS;
    }
    if (bo_hx_fallback_stands(c))
        return J_STANDS; /* none of its own after a retry: the last real answer */
    bo_hx_off(c);
    if (a->n == 0)
        return J_OFF; /* the program's read meets the close itself */
    *err = a->e;
    return J_ERR;
}

hx_judged bo_hx_judge(bo_hconn *c, hx_mode mode, int64_t deadline, int *err)
{
    hx_answer a;
    int r;

    if (!c->call.begun || !c->call.admitted) {
        bo_hx_stands(c); /* a request the hooks only follow */
        return J_STANDS;
    }
    while ((r = read_answer(c, &mode, &a, err)) == HX_LOOK_AGAIN)
        ;
    if (r != HX_GO_ON)
        return (hx_judged)r;
    bo_outcome o = bo_hx_classify(c, a.status, a.code, a.answered ? &a.rl : NULL);
    a.ra_ns = a.answered ? bo_http_retry_after_ns(c->x.resp, bo_core_wall_ns() / BO_NS_PER_S) : -1;
    if (o.verdict == BO_VERDICT_RETRY) {
        if ((r = retry_here(c, &mode, &deadline, &a, &o, err)) != HX_GO_ON)
            return (hx_judged)r;
        bound_deadline(c, mode, deadline, a.now);
    }
    return complete_judged(c, mode, deadline, &a, o, err);
}
