/*
 * retry.c: an answer judged and a throttle retried, within the http room
 * (exchange_int.h): the answer looked at as far as it came and judged by
 * policies/ (bo_http, bo_classify, the engine through call/); a retry
 * taken over (the answer held whole for the program in case it is
 * abandoned) and taken step by step without ever waiting: the engine's
 * wait and the admission, a new connection, the handshake, the request
 * sent again.  Where the steps wait is the drivers' (drive.c).
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bo_classify.h"
#include "bo_ratelimit.h"
#include "bo_time.h"
#include "call/call.h"
#include "call/report.h"
#include "core/core.h"
#include "http/exchange.h"
#include "http/exchange_int.h"
#include "http/redial.h"
#include "http/sockwait.h"

/* How long the rest of a throttle's head, or of the small body that lets
 * it be taken out whole, may take once its first bytes came; past it the
 * answer passes through. */
#define HX_MORE_NS (1000 * BO_NS_PER_MS)

/* ---- a retry under way ------------------------------------------------------- */

/*
 * The retry ends before its request went out again (its time ran out, a
 * signal, no new connection, a peer the program did not verify): the
 * answer it met, held whole, is the program's, as it came.  Whatever the
 * fd holds now is made readable for it (an event loop is woken by that,
 * not by the held bytes): a stand-in is ended, a new connection shut down
 * (it is not the program's to use), a same-connection retry's quiet
 * socket shut for reading when an event loop waits on it.
 */
void bo_hx_abandon_counted(bo_hconn *c, bool counted)
{
    bool answered = c->answered;
    bool swapped = c->step == BO_HC_STEP_SHAKE || c->step == BO_HC_STEP_SEND;
    if (c->in_call && !c->admitted && !counted)
        bo_run_abandoned(c->dest); /* the call ends failed (an admitted one: drop_call) */
    bo_hx_drop_call(c, true);
    if (c->park_fd >= 0)
        bo_hr_unpark(c);
    else if (swapped && !c->same_conn)
        (void)bo_core_sys_shutdown(c->fd, SHUT_RDWR);
    else if (c->loop)
        (void)bo_core_sys_shutdown(c->fd, SHUT_RD);
    bo_hr_release(c);
    if (!answered || bo_hc_held_left(c) == 0) {
        bo_hx_off(c);
        return;
    }
    c->deliver = true;
    bo_hx_stands(c);
}

void bo_hx_abandon(bo_hconn *c)
{
    bo_hx_abandon_counted(c, false);
}

/*
 * One step of a retry under way, never waiting: the engine's wait and the
 * admission, a new connection, the handshake, the request sent again.
 * True when the record left RETRY (SENT: the request is out again; PASS:
 * abandoned, the answer is the program's; NONE: its socket is gone); false
 * with *need what it waits for.
 */
bool bo_hx_step(bo_hconn *c, int64_t now, hx_need *need)
{
    const bo_hx_io *io = c->io;
    bool first_shake = false;

    need->until = INT64_MAX;
    need->fd_ev = 0;
    need->xfd = -1;
    need->x_ev = 0;
    if (bo_hc_identity(c->fd) != c->ino) {
        bo_hx_reset(c); /* the program closed the socket without a hook seeing it */
        return true;
    }
    for (;;) {
        switch (c->step) {
        case BO_HC_STEP_WAIT: {
            if (c->same_conn && !io->idle(c)) {
                /* the peer closed, or sent more, while the retry waited */
                c->same_conn = false;
                if (io->same_only || (c->loop && bo_hr_park(c) != 0)) {
                    bo_hx_abandon(c);
                    return true;
                }
            }
            if (c->call.phase == BO_PHASE_WAIT && !bo_call_due(&c->call, now)) {
                if (c->call.until_ns >= c->give_up_ns) {
                    bo_hx_abandon(c);
                    return true;
                }
                need->until = c->call.until_ns;
                return false;
            }
            int64_t until;
            bo_step s = bo_run_admit_step(c->dest, &c->call, now, &c->inflight,
                                          BO_POLL_ADMIT_NS, &until);
            if (s == BO_STEP_GIVE_UP || (s == BO_STEP_WAIT && until >= c->give_up_ns)) {
                bo_hx_abandon_counted(c, s == BO_STEP_GIVE_UP); /* (a give-up is counted as one) */
                return true;
            }
            if (s == BO_STEP_WAIT) {
                need->until = until;
                return false;
            }
            c->admitted = true;
            c->resend_off = 0;
            if (c->async) /* the time the program's own wait spent on the retry */
                bo_report_waited(c->dest, now - c->wait_from_ns);
            if (c->same_conn) {
                c->step = BO_HC_STEP_SEND;
            } else if (bo_hr_dial(c) == 0) {
                c->step = BO_HC_STEP_DIAL;
            } else {
                bo_hx_abandon(c); /* (the admitted attempt never ran: given back) */
                return true;
            }
            break;
        }
        case BO_HC_STEP_DIAL: {
            int d = bo_hr_dial_done(c);
            if (d == 0) {
                need->xfd = c->dial_fd;
                need->x_ev = POLLOUT;
                need->until = c->give_up_ns;
                return false;
            }
            if (d < 0 || bo_hr_swap(c) != 0) {
                bo_hx_abandon(c);
                return true;
            }
            c->step = io->shake != NULL ? BO_HC_STEP_SHAKE : BO_HC_STEP_SEND;
            if (c->step == BO_HC_STEP_SEND)
                break;
            first_shake = true; /* the handshake starts now, in the SHAKE step */
            __attribute__((fallthrough));
        }
        case BO_HC_STEP_SHAKE: {
            short ev = 0;
            int r = io->shake(c, first_shake, &ev);
            first_shake = false;
            if (r < 0) {
                bo_hx_abandon(c);
                return true;
            }
            if (r == 0) {
                need->fd_ev = ev;
                need->until = c->give_up_ns;
                return false;
            }
            c->step = BO_HC_STEP_SEND;
            break;
        }
        case BO_HC_STEP_SEND: {
            short ev = POLLOUT;
            while (c->resend_off < c->kept_len) {
                ssize_t w = io->put(c, c->kept + c->resend_off, c->kept_len - c->resend_off, &ev);
                if (w > 0) {
                    c->resend_off += (size_t)w;
                } else if (w < 0 && errno == EINTR) {
                    continue;
                } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                    need->fd_ev = ev;
                    need->until = c->give_up_ns;
                    return false;
                } else {
                    break;
                }
            }
            if (c->resend_off < c->kept_len) {
                /* the connection failed under the retry: once more on a new one */
                if (c->same_conn && c->resend_off == 0 && !io->same_only &&
                    (!c->tls || c->peer_id_known) && bo_hr_dial(c) == 0) {
                    c->same_conn = false;
                    c->step = BO_HC_STEP_DIAL;
                    break;
                }
                bo_hx_abandon(c);
                return true;
            }
            if (c->shut_wr)
                /* as the program left its first connection */
                (void)bo_core_sys_shutdown(c->fd, SHUT_WR);
            /* the retried answer is gone for good: the retry's is judged next */
            c->held_len = c->held_off = 0;
            c->first_byte_ns = 0;
            c->deferred = false;
            c->resp.status = 0;
            bo_hx_set_state(c, BO_HC_SENT);
            return true;
        }
        }
    }
}

/*
 * The engine retries the attempt just completed (its answer, n bytes,
 * looked at in c->peek and its head read into c->resp; none when it
 * closed or failed first): take it over.  The answer is taken out of the
 * connection whole into the held bytes (so that an abandoned retry still
 * gives it to the program), the connection kept when it can carry the
 * request again, else a new one to be made when the time comes (an event
 * loop's fd holds a quiet stand-in meanwhile).  0: RETRY; -1: nothing was
 * taken, the answer stands.
 */
static int take_over(bo_hconn *c, bool answered, size_t total, bool loop, int64_t give_up)
{
    const bo_hx_io *io = c->io;
    bool keep = answered && c->resp.keep_alive && !c->shut_wr;

    /* a retry that would need a new connection where none may be made
     * takes nothing: the answer stands as it came */
    if (!keep && (io->same_only || (c->tls && !c->peer_id_known)))
        return -1;
    if (answered && io->hold(c, total) != 0)
        return -1; /* (what a transport read ahead stays held for the program) */
    c->answered = answered;
    c->same_conn = keep && bo_hc_held_left(c) == total && io->idle(c);
    c->loop = loop;
    c->step = BO_HC_STEP_WAIT;
    c->resend_off = 0;
    c->give_up_ns = give_up;
    c->async = give_up != INT64_MAX || loop;
    c->wait_from_ns = bo_core_now_ns();
    c->deferred = false;
    bo_hx_set_state(c, BO_HC_RETRY);
    if (!c->same_conn &&
        (io->same_only || (c->tls && !c->peer_id_known) || (loop && bo_hr_park(c) != 0)))
        bo_hx_abandon(c); /* no new connection may be made after all: it stands */
    return 0;
}

/* ---- judging an answer ------------------------------------------------------- */

/* Is the whole answer (its head read into m, n bytes looked at in peek)
 * among the bytes looked at?  Its length in *total.  A close-delimited
 * answer never is (its end is the close). */
bool bo_hx_whole(const bo_hconn *c, const bo_http_msg *m, ssize_t n, size_t *total)
{
    if (m->framing == BO_HTTP_FRAMING_CLOSE || m->framing == BO_HTTP_FRAMING_TUNNEL)
        return false;
    bo_http_msg b = *m;
    size_t used;
    if (bo_http_feed(&b, c->peek + m->head_len, (size_t)n - m->head_len, &used) != BO_HTTP_DONE)
        return false;
    *total = m->head_len + used;
    return true;
}

static bool whole_now(bo_hconn *c, ssize_t n, size_t *total)
{
    return bo_hx_whole(c, &c->resp, n, total);
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

/*
 * Judge the answer of the attempt in flight (SENT), as far as it came:
 * mode and deadline say where the program waits for it and until when
 * (a retry whose wait and one more attempt do not fit is not made).
 */
hx_judged bo_hx_judge(bo_hconn *c, hx_mode mode, int64_t deadline, int *err)
{
    const bo_hx_io *io = c->io;
    bo_rl_headers rl;
    int64_t until;

    if (!c->in_call || !c->admitted) {
        bo_hx_stands(c); /* a request the hooks only follow */
        return J_STANDS;
    }
    for (;;) {
        ssize_t n = io->look(c, mode == MODE_BLOCK || mode == MODE_READ);
        int status = 0, code = BO_CURLE_OK, e = errno;
        bool answered = n > 0;
        int64_t now = bo_core_now_ns();
        size_t total = 0;

        if (n < 0 && (e == EAGAIN || e == EWOULDBLOCK || e == EINTR)) {
            *err = e; /* nothing yet: the program polls, or its signal came */
            return J_NOTHING;
        }
        if (answered) {
            if (c->first_byte_ns == 0)
                c->first_byte_ns = now;
            bo_rl_headers_reset(&rl);
            bo_http_rc rc = bo_http_parse_response(c->peek, (size_t)n, c->req.method, &c->resp,
                                                   bo_hx_rl_line, &rl);
            if (rc == BO_HTTP_NOT_HTTP || rc == BO_HTTP_TOO_LARGE) {
                bo_hx_off(c);
                return J_OFF;
            }
            status = c->resp.status;
            if (c->resp.interim > 0 || (status >= 100 && status < 200 && status != 101)) {
                /* an interim answer (103 Early Hints, 102 Processing) goes to
                 * the program at once; the exchange is followed as it stands */
                bo_outcome ok = {BO_VERDICT_SUCCESS, BO_SIGNAL_NONE, false, BO_CAUSE_NONE};
                (void)bo_hx_complete(c, ok, status, BO_CURLE_OK, -1, NULL, &until);
                bo_http_msg_response(&c->resp, c->req.method);
                c->resp_skip = 0;
                c->deferred = false;
                bo_hx_set_state(c, BO_HC_PASS);
                return J_STANDS;
            }
            if (rc == BO_HTTP_NEED_MORE) {
                bool final = status >= 200;
                bo_outcome so_far = bo_hx_classify(c, status, BO_CURLE_OK, NULL);
                if (final && so_far.verdict != BO_VERDICT_RETRY) {
                    (void)bo_hx_complete(c, so_far, status, BO_CURLE_OK, -1, NULL, &until);
                    bo_hx_stands(c); /* not a throttle: its head is not needed whole */
                    return J_STANDS;
                }
                if (n < BO_HC_PEEK_MAX && now - c->first_byte_ns < HX_MORE_NS) {
                    if ((mode = settle(c, mode)) != MODE_BLOCK) {
                        *err = EAGAIN; /* the rest is on its way */
                        return J_NOTHING;
                    }
                    if (look_more(c, n, c->first_byte_ns + HX_MORE_NS) > n)
                        continue;
                }
                if (!final) { /* no status in time: an answer the hooks cannot read */
                    bo_hx_off(c);
                    return J_OFF;
                }
                /* a throttle whose head does not come whole: it stands */
                bo_outcome fin = {BO_VERDICT_FINAL, BO_SIGNAL_NONE, false, BO_CAUSE_NONE};
                (void)bo_hx_complete(c, fin, status, BO_CURLE_OK, -1, NULL, &until);
                bo_hx_stands(c);
                return J_STANDS;
            }
        } else {
            /* closed or failed before any byte of an answer */
            code = n == 0 ? BO_CURLE_GOT_NOTHING : BO_CURLE_RECV_ERROR;
        }
        bo_outcome o = bo_hx_classify(c, status, code, answered ? &rl : NULL);
        int64_t ra = answered ? bo_http_retry_after_ns(&c->resp, bo_core_wall_ns() / BO_NS_PER_S)
                              : -1;
        if (o.verdict == BO_VERDICT_RETRY) {
            if (!bo_hx_same_socket(c))
                return J_OFF; /* another socket on that number: not this request's answer */
            mode = settle(c, mode);
        }
        if (o.verdict == BO_VERDICT_RETRY && mode == MODE_NONE) {
            /* A non-blocking read: where does its program wait? */
            switch (bo_hx_waiter(c, &deadline)) {
            case BO_HX_WAITS_IN_LOOP:
                mode = MODE_LOOP;
                c->loop_late = deadline == INT64_MAX;
                break;
            case BO_HX_WAITS_UNSEEN:
                if (!c->deferred) {
                    /* not in an event loop's set: the answer is left where
                     * it is, once, for the program's poll (which judges it
                     * then) or its next read */
                    c->deferred = true;
                    *err = EAGAIN;
                    return J_NOTHING;
                }
                break;
            case BO_HX_WAITS_PASSED:
                break;
            }
        }
        if (o.verdict == BO_VERDICT_RETRY) {
            if (answered && !whole_now(c, n, &total) && mode == MODE_BLOCK) {
                /* the body of a throttle on its way: a moment for it */
                while (!whole_now(c, n, &total) && n < BO_HC_PEEK_MAX) {
                    ssize_t k = look_more(c, n, c->first_byte_ns + HX_MORE_NS);
                    if (k <= n)
                        break;
                    n = k;
                }
            } else if (answered && (mode == MODE_POLL || mode == MODE_LOOP) &&
                       !whole_now(c, n, &total) && n < BO_HC_PEEK_MAX &&
                       now - c->first_byte_ns < HX_MORE_NS) {
                /* the same where the program polls: nothing for it yet, the
                 * throttle is judged whole when the rest comes (a server
                 * writes its head and its body apart) */
                *err = EAGAIN;
                return J_NOTHING;
            }
            if (!c->kept_ok || c->shut_rd || mode == MODE_NONE || mode == MODE_NOTE ||
                (answered && !whole_now(c, n, &total)) ||
                (c->shut_wr && (c->tls || io->same_only)) ||
                (io->same_only && !(answered && c->resp.keep_alive)))
                o.verdict = BO_VERDICT_FINAL; /* it cannot be sent again, or not here */
            if (mode == MODE_BLOCK && c->call.deadline_ns == INT64_MAX) {
                int64_t t = bo_hs_rcvtimeo(c->fd); /* a wait never outlasts the read's timeout */
                if (t > 0)
                    deadline = now + t;
            }
            if (deadline < c->call.deadline_ns)
                bo_call_set_deadline(&c->call, deadline);
        }
        bool again = bo_hx_complete(c, o, status, code, ra, answered ? &rl : NULL, &until);
        if (again && take_over(c, answered, total, mode == MODE_LOOP,
                               mode == MODE_BLOCK ? INT64_MAX : deadline) == 0)
            return c->st == BO_HC_RETRY ? J_RETRYING : J_STANDS;
        if (again) { /* it could not be taken over: the call ends on the answer it met */
            bo_run_abandoned(c->dest);
            bo_hx_end_call(c, true);
        }
        if (answered) {
            bo_hx_stands(c);
            return J_STANDS;
        }
        bo_hx_off(c);
        if (n == 0)
            return J_OFF; /* the program's read meets the close itself */
        *err = e;
        return J_ERR;
    }
}

