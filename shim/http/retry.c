/*
 * retry.c: a throttle retried, within the http room (exchange_int.h): the
 * retry taken over (the answer held whole for the program in case it is
 * abandoned) and taken step by step without ever waiting, each step a
 * function of its own: the engine's wait and the admission (WAIT), a new
 * connection (DIAL), the handshake of the program's TLS object on it
 * (SHAKE), the request sent again (SEND).  The second machine (c->rt.step)
 * changes in one place (set_step); whether a connection may be redialled
 * is one rule (bo_hx_may_redial).  The answer's judging is judge.c's,
 * where the steps wait drive.c's.
 */
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>

#include "call/call.h"
#include "call/report.h"
#include "core/core.h"
#include "http/exchange_int.h"
#include "http/record.h"
#include "http/retry.h"
#include "http/redial.h"

/* ---- the rules ------------------------------------------------------------------ */

bool bo_hx_may_redial(const bo_hconn *c)
{
    /* GnuTLS does not handshake a used session again; a TLS redial must show
     * the very certificate the program accepted, so its digest must be known;
     * a connection through a proxy's tunnel (a CONNECT went first) goes where
     * the proxy took it, which a new connection to the proxy would not */
    return !c->io->same_only && (!c->tls || c->peer_id_known) &&
           bo_hc_mark_of(c->fd) != BO_HC_MARK_TUNNEL;
}

/* The one place the retry's step changes. */
static void set_step(bo_hconn *c, bo_hc_step step)
{
    c->rt.step = step;
}

void bo_hx_retry_bound(bo_hconn *c, int64_t end)
{
    if (end < c->rt.give_up_ns)
        c->rt.give_up_ns = end;
}

/* ---- taken over, abandoned ---------------------------------------------------------- */

int bo_hx_take_over(bo_hconn *c, bool answered, size_t total, bool loop, int64_t give_up)
{
    const bo_hx_io *io = c->io;
    bool keep = answered && c->x.resp->keep_alive && !c->x.shut_wr;

    /* a retry that would need a new connection where none may be made
     * takes nothing: the answer stands as it came */
    if (!keep && !bo_hx_may_redial(c))
        return -1;
    if (answered && io->hold(c, total) != 0)
        return -1; /* (what a transport read ahead stays held for the program) */
    c->rt.answered = answered;
    c->rt.total = answered ? total : 0;
    c->rt.resent_ns = 0;
    c->rt.same_conn = keep && bo_hc_held_left(c) == total && io->idle(c);
    c->rt.loop = loop;
    set_step(c, BO_HC_STEP_WAIT);
    c->rt.resend_off = 0;
    c->rt.give_up_ns = give_up;
    c->rt.async = give_up != INT64_MAX || loop;
    c->rt.wait_from_ns = bo_core_now_ns();
    bo_hx_set_state(c, BO_HC_RETRY);
    if (!c->rt.same_conn && (!bo_hx_may_redial(c) || (loop && bo_hr_park(c) != 0)))
        bo_hx_abandon(c); /* no new connection may be made after all: it stands */
    return 0;
}

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
    bool answered = c->rt.answered;
    bool swapped = c->rt.step == BO_HC_STEP_SHAKE || c->rt.step == BO_HC_STEP_SEND;
    if (c->call.begun && !c->call.admitted && !counted)
        bo_run_abandoned(c->call.dest); /* the call ends failed (an admitted one: drop_call) */
    bo_hx_drop_call(c, true);
    if (c->rt.park_fd >= 0)
        bo_hr_unpark(c);
    else if (swapped && !c->rt.same_conn)
        (void)bo_core_sys_shutdown(c->fd, SHUT_RDWR);
    else if (c->rt.loop)
        (void)bo_core_sys_shutdown(c->fd, SHUT_RD);
    bo_hr_release(c);
    if (!answered || bo_hc_held_left(c) == 0) {
        if (!bo_hx_fallback_stands(c))
            bo_hx_off(c);
        return;
    }
    bo_hc_held_deliver(c);
    bo_hx_stands(c);
}

/*
 * The call ended with no answer of its own after its request went out
 * again (a close, a reset, no new connection, a stall): the last real
 * answer it met (rt.fb) is the program's, as the program alone would have
 * had it.  The connection it was sent on again is shut down (the program
 * must not send its next request on it).  False when there is none.
 */
bool bo_hx_fallback_stands(bo_hconn *c)
{
    if (c->rt.fb_len == 0)
        return false;
    bo_hc_fallback_restore(c);
    if (bo_http_parse_response(c->held.buf, c->held.len, c->x.req.method, c->x.resp, NULL,
                               NULL) != BO_HTTP_DONE) {
        bo_hc_held_drop(c);
        bo_hx_off(c);
        return true;
    }
    if (c->rt.park_fd < 0)
        (void)bo_core_sys_shutdown(c->fd, SHUT_RDWR);
    bo_hc_held_deliver(c);
    bo_hx_stands(c);
    return true;
}

/*
 * The request sent again met no answer within the bound (resent_ns +
 * BACKOFF_CAP_MS, or the program's own wait's end): completed as a
 * timeout, never retried again (each stall would cost the bound), the
 * last real answer the program's.
 */
void bo_hx_stalled(bo_hconn *c)
{
    int64_t until;
    bo_outcome o = bo_hx_classify(c, 0, BO_CURLE_OPERATION_TIMEDOUT, NULL);
    if (c->call.begun && c->call.admitted &&
        bo_hx_complete(c, o, 0, BO_CURLE_OPERATION_TIMEDOUT, -1, NULL, &until)) {
        bo_run_abandoned(c->call.dest);
        bo_hx_end_call(c, true);
    }
    if (!bo_hx_fallback_stands(c))
        bo_hx_off(c);
}

int64_t bo_hx_stall_at(const bo_hconn *c)
{
    const bo_config *cfg = bo_core_config();
    if (c->st != BO_HC_SENT || c->rt.fb_len == 0 || c->rt.resent_ns == 0 || cfg == NULL)
        return INT64_MAX;
    return c->rt.resent_ns + (cfg->cap_ms > 0 ? cfg->cap_ms : 20000) * BO_NS_PER_MS;
}

void bo_hx_abandon(bo_hconn *c)
{
    bo_hx_abandon_counted(c, false);
}

/* ---- the steps ---------------------------------------------------------------------- */

/* What a step says: done (the record left RETRY), waiting (*need says for
 * what), or on to the next step at once. */
typedef enum hx_stepped { HX_DONE, HX_WAITING, HX_NEXT } hx_stepped;

/* The retry ends here, its answer the program's. */
static hx_stepped abandoned(bo_hconn *c)
{
    bo_hx_abandon(c);
    return HX_DONE;
}

/* The new connection for the admitted attempt failed (refused, unreachable:
 * an outage, or a server restarting): the attempt is completed as a connect
 * failure, and the engine says whether to try again (its wait, another
 * connection) or to end the call on the answer it met. */
static hx_stepped dial_failed(bo_hconn *c, int64_t now, hx_need *need)
{
    int64_t until;
    bo_outcome o = bo_hx_classify(c, 0, BO_CURLE_COULDNT_CONNECT, NULL);
    if (!bo_hx_complete(c, o, 0, BO_CURLE_COULDNT_CONNECT, -1, NULL, &until)) {
        bo_hx_abandon_counted(c, true);
        return HX_DONE;
    }
    set_step(c, BO_HC_STEP_WAIT);
    c->rt.wait_from_ns = now;
    need->until = until;
    return HX_WAITING;
}

/* WAIT: the engine's wait, then the admission; then the same connection,
 * or a new one started. */
static hx_stepped step_wait(bo_hconn *c, int64_t now, hx_need *need)
{
    if (c->rt.same_conn && !c->io->idle(c)) {
        /* the peer closed, or sent more, while the retry waited */
        c->rt.same_conn = false;
        if (!bo_hx_may_redial(c) || (c->rt.loop && bo_hr_park(c) != 0))
            return abandoned(c);
    }
    if (bo_hx_call_waits(c, now)) {
        if (c->call.run.until_ns >= c->rt.give_up_ns)
            return abandoned(c);
        need->until = c->call.run.until_ns;
        return HX_WAITING;
    }
    int64_t until;
    bo_step s = bo_hx_admit_step(c, now, HX_ADMIT_NS, &until);
    if (s == BO_STEP_GIVE_UP || (s == BO_STEP_WAIT && until >= c->rt.give_up_ns)) {
        bo_hx_abandon_counted(c, s == BO_STEP_GIVE_UP); /* (a give-up is counted as one) */
        return HX_DONE;
    }
    if (s == BO_STEP_WAIT) {
        need->until = until;
        return HX_WAITING;
    }
    bo_hx_admitted(c);
    c->rt.resend_off = 0;
    if (c->rt.async) /* the time the program's own wait spent on the retry */
        bo_report_waited(c->call.dest, now - c->rt.wait_from_ns);
    if (c->rt.same_conn) {
        set_step(c, BO_HC_STEP_SEND);
        return HX_NEXT;
    }
    if (bo_hr_dial(c) != 0)
        return errno == ECONNREFUSED || errno == ENETUNREACH || errno == EHOSTUNREACH
                   ? dial_failed(c, now, need)
                   : abandoned(c); /* (no socket: the admitted attempt never ran, given back) */
    set_step(c, BO_HC_STEP_DIAL);
    return HX_NEXT;
}

/* DIAL: the new connection made, moved onto the program's fd; then its
 * handshake (TLS) or the request. */
static hx_stepped step_dial(bo_hconn *c, int64_t now, hx_need *need)
{
    int d = bo_hr_dial_done(c);
    if (d == 0) {
        need->xfd = c->rt.dial_fd;
        need->x_ev = POLLOUT;
        need->until = c->rt.give_up_ns;
        return HX_WAITING;
    }
    if (d < 0)
        return dial_failed(c, now, need);
    if (bo_hr_swap(c) != 0)
        return abandoned(c);
    set_step(c, c->io->shake != NULL ? BO_HC_STEP_SHAKE : BO_HC_STEP_SEND);
    c->rt.shake_first = c->io->shake != NULL; /* the handshake starts now, in the SHAKE step */
    return HX_NEXT;
}

/* SHAKE: the program's TLS object handshaken on the new connection, done
 * only with the peer the program verified. */
static hx_stepped step_shake(bo_hconn *c, hx_need *need)
{
    short ev = 0;
    int r = c->io->shake(c, c->rt.shake_first, &ev);
    c->rt.shake_first = false;
    if (r < 0)
        return abandoned(c);
    if (r == 0) {
        need->fd_ev = ev;
        need->until = c->rt.give_up_ns;
        return HX_WAITING;
    }
    set_step(c, BO_HC_STEP_SEND);
    return HX_NEXT;
}

/* SEND: the kept request written again (once more on a new connection when
 * the same one fails under it at its first byte); then its answer is
 * judged as the first one was. */
static hx_stepped step_send(bo_hconn *c, hx_need *need)
{
    short ev = POLLOUT;
    while (c->rt.resend_off < c->x.kept_len) {
        size_t off = c->rt.resend_off;
        ssize_t w = c->io->put(c, c->x.kept + off, c->x.kept_len - off, &ev);
        if (w > 0) {
            c->rt.resend_off += (size_t)w;
        } else if (w < 0 && errno == EINTR) {
            continue;
        } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            need->fd_ev = ev;
            need->until = c->rt.give_up_ns;
            return HX_WAITING;
        } else {
            break;
        }
    }
    if (c->rt.resend_off < c->x.kept_len) {
        /* the connection failed under the retry: once more on a new one */
        if (c->rt.same_conn && c->rt.resend_off == 0 && bo_hx_may_redial(c) && bo_hr_dial(c) == 0) {
            c->rt.same_conn = false;
            set_step(c, BO_HC_STEP_DIAL);
            return HX_NEXT;
        }
        return abandoned(c);
    }
    if (c->x.shut_wr) /* as the program left its first connection */
        (void)bo_core_sys_shutdown(c->fd, SHUT_WR);
    /* the retried answer is out of the program's view for good, kept aside
     * as the call's last real one: the retry's is judged next */
    bo_hc_fallback_keep(c, c->rt.answered, c->rt.total);
    c->rt.resent_ns = bo_core_now_ns();
    bo_hx_answer_anew(c);
    bo_hx_set_state(c, BO_HC_SENT);
    return HX_DONE;
}

bool bo_hx_step(bo_hconn *c, int64_t now, hx_need *need)
{
    hx_stepped s;

    need->until = INT64_MAX;
    need->fd_ev = 0;
    need->xfd = -1;
    need->x_ev = 0;
    if (bo_hc_identity(c->fd) != c->ino) {
        bo_hx_reset(c); /* the program closed the socket without a hook seeing it */
        return true;
    }
    do {
        switch (c->rt.step) {
        case BO_HC_STEP_WAIT:
            s = step_wait(c, now, need);
            break;
        case BO_HC_STEP_DIAL:
            s = step_dial(c, now, need);
            break;
        case BO_HC_STEP_SHAKE:
            s = step_shake(c, need);
            break;
        default:
            s = step_send(c, need);
            break;
        }
    } while (s == HX_NEXT);
    return s == HX_DONE;
}
