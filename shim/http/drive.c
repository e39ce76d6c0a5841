/*
 * drive.c: where a retry of the http room waits (exchange.h's heading):
 * the program's blocking read, its poll or select, its event loop; and
 * the mode a read judges an answer in (a non-blocking read that left a
 * throttle for the program's poll, then met it again: an event loop's
 * when the socket is in an epoll set, else nobody's).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bo_http.h"
#include "bo_time.h"
#include "call/call.h"
#include "core/core.h"
#include "http/exchange.h"
#include "http/exchange_int.h"
#include "http/record.h"
#include "http/retry.h"
#include "http/sockwait.h"

/* ---- the drivers: the program's read, its poll, its event loop ----------------- */

/* A blocking read drives a retry to its end, waiting inside the read as the
 * program's own blocking read would: 0, or EINTR (a signal without
 * SA_RESTART: the retry is abandoned, its answer handed back at once). */
static int drive_blocking(bo_hconn *c)
{
    int64_t io_bound = bo_core_now_ns() + HX_IO_NS;

    while (c->st == BO_HC_RETRY) {
        hx_need need;
        int64_t now = bo_core_now_ns();
        if (bo_hx_step(c, now, &need))
            break;
        if (need.fd_ev != 0 || need.xfd >= 0) {
            int64_t until = c->call.run.deadline_ns < io_bound ? c->call.run.deadline_ns : io_bound;
            if (bo_hs_wait_fd(need.xfd >= 0 ? need.xfd : c->fd,
                              need.xfd >= 0 ? need.x_ev : need.fd_ev, until) != 0 &&
                bo_core_now_ns() >= until) {
                bo_hx_abandon(c);
                break;
            }
            continue;
        }
        bo_core_busy = 0;
        int rc = bo_run_wait_until(c->call.dest, need.until);
        bo_core_busy = 1;
        if (rc == EINTR) {
            bo_hx_abandon(c);
            return EINTR;
        }
    }
    return 0;
}

/* An event loop's write the pace holds back (not the window: a loop's
 * concurrent requests are its own): until the pace's time or the server's
 * quota's, when within what a loop's retry may take (HX_LOOP_NS; past it
 * the program's own deadline may come first); else 0.  Only on a
 * kept-alive connection: a loop that reuses its connections handles a
 * write's EAGAIN (libuv, asyncio, Java's selector); one that writes once
 * on a fresh socket when it polls writable may take EAGAIN for a failure
 * (tests/helpers/harm_epoll.c does). */
static int64_t loop_pace(bo_hconn *c, int64_t now)
{
    if (!c->pace.sent)
        return 0;
    int64_t t = bo_run_pace_ns(c->call.dest, now), quota = c->call.run.quota_hold_ns;
    if (quota > t)
        t = quota;
    return t > now && t - now <= HX_LOOP_NS ? t : 0;
}

int bo_hx_write_waits(bo_hconn *c, int64_t now, bool dontwait, int64_t *until, bool *loop)
{
    const bo_config *cfg = bo_core_config();
    bo_step st = bo_hx_admit_step(c, now, BO_NS_PER_S, until);
    *loop = false;
    if (st != BO_STEP_WAIT)
        return st == BO_STEP_GO ? 0 : -1;
    /* A TLS library's write is not held back: the pace's EAGAIN is a plain
     * socket's, whose program polls it (requests, urllib with a timeout) or
     * waits for it in its event loop (no EPOLLOUT until the pace's time:
     * bo_hc_pace_mask). */
    if (!c->tls && !c->pace.go && bo_hs_nonblocking(c->fd)) {
        bo_hx_waits where = bo_hx_writer(c);
        if (!dontwait && where == BO_HX_WAITS_UNSEEN)
            return EAGAIN;
        int64_t t;
        if (where == BO_HX_WAITS_IN_LOOP && (t = loop_pace(c, now)) != 0) {
            *until = t;
            *loop = true;
            return EAGAIN;
        }
    }
    /* An event loop's request never waits inside the call that sends it:
     * it goes now, counted in the window (its retries wait their turn
     * outside the program's calls); nor does one the server's quota holds
     * past the socket's send timeout, the program's deadline for it (a
     * prediction past it is not waited for). */
    int64_t t = bo_hs_sndtimeo(c->fd), quota = c->call.run.quota_hold_ns;
    if (dontwait || bo_hs_nonblocking(c->fd) || (t > 0 && quota > now + t))
        return bo_hx_admit_now(c, now) ? 0 : -1;
    /* The window, the pace or another call's Retry-After holds the
     * destination: a blocking write waits as a blocking send would. */
    int64_t bound = t > 0 ? t
                          : (cfg->max_time_ms > 0 ? cfg->max_time_ms : cfg->cap_ms) * BO_NS_PER_MS;
    bo_core_busy = 0;
    int a = bo_hx_admit_intr(c, now + bound);
    bo_core_busy = 1;
    return a == EINTR ? EINTR : a == 0 ? 0 : -1;
}

bo_hx_verdict bo_hx_read(bo_hconn *c, int blocking, int *err)
{
    if (c->st == BO_HC_REQ) {
        bo_hx_off(c); /* a read in the middle of a request: the server answered early */
        return BO_HX_OFF;
    }
    /* Another socket on that number (the old one closed with the system
     * call)?  Asked where it matters, before a throttle is acted on
     * (bo_hx_judge) and at the next request (the write hook), not at every
     * read: a clean answer passes either way. */
    if (c->st == BO_HC_RETRY && !bo_hx_same_socket(c))
        return BO_HX_OFF;
    for (;;) {
        if (c->st == BO_HC_RETRY) {
            if (blocking == BO_HX_ASK)
                blocking = !bo_hs_nonblocking(c->fd);
            if (blocking) {
                if (drive_blocking(c) == EINTR && c->st != BO_HC_PASS) {
                    *err = EINTR;
                    return BO_HX_ERR;
                }
            } else {
                hx_need need;
                if (!bo_hx_step(c, bo_core_now_ns(), &need)) {
                    *err = EAGAIN; /* the retry's answer is not here yet */
                    return BO_HX_ERR;
                }
            }
            continue;
        }
        if (c->st != BO_HC_SENT)
            return c->st == BO_HC_OFF || c->st == BO_HC_NONE ? BO_HX_OFF : BO_HX_PASS;
        /* a non-blocking read's mode is decided at a throttle (bo_hx_waiter) */
        hx_mode mode = blocking == BO_HX_ASK ? MODE_READ : blocking ? MODE_BLOCK : MODE_NONE;
        switch (bo_hx_judge(c, mode, INT64_MAX, err)) {
        case J_NOTHING:
        case J_ERR:
            return BO_HX_ERR;
        case J_OFF:
            return BO_HX_OFF;
        case J_STANDS:
            return BO_HX_PASS;
        case J_RETRYING:
            break; /* a step at once: it may go out right away */
        }
    }
}

/* A retry's request sent again in a poll's sight: its answer is waited for
 * until BACKOFF_CAP_MS after it went, or until the poll's own end (less the
 * margin), the sooner; then the last real answer stands (INT64_MAX: none
 * of that). */
static int64_t poll_stall_at(const bo_hconn *c, int64_t now, int64_t deadline)
{
    int64_t s = bo_hx_stall_at(c), end = bo_hx_before(now, deadline);
    return s != INT64_MAX && end < s ? end : s;
}

short bo_hx_poll_before(bo_hconn *c, short ev, int64_t now, int64_t deadline, short *fd_ev,
                        int *xfd, short *x_ev, int64_t *until)
{
    *fd_ev = ev;
    *xfd = -1;
    *x_ev = 0;
    *until = INT64_MAX;
    if (c->pace.until != 0 && (ev & POLLOUT)) {
        /* a write the pace held back (bo_hx_begin): writable at the pace's
         * time, or while the program's poll still has time to write; at
         * once when the server's quota holds it past the poll's time (a
         * prediction past the program's deadline is not waited for) */
        int64_t end = bo_hx_before(now, deadline);
        if (now < c->pace.until && now < end && c->pace.quota <= end) {
            short rest = (short)(ev & ~POLLOUT);
            *fd_ev = rest != 0 ? rest : -1;
            *until = c->pace.until < end ? c->pace.until : end;
            return 0;
        }
        bo_hc_pace_release(c, now < c->pace.until); /* its time ran out first: it goes now */
    }
    if ((c->st == BO_HC_SENT || c->st == BO_HC_RETRY) && !bo_hx_same_socket(c))
        return 0;
    if (c->st == BO_HC_RETRY) {
        hx_need need;
        if (c->rt.loop || !bo_hx_step(c, now, &need)) {
            if (c->rt.loop) { /* an event loop's retry met in a poll: its own needs */
                need.until = now + HX_PIECE_NS;
                need.fd_ev = 0;
                need.xfd = -1;
            }
            *fd_ev = need.fd_ev != 0 ? need.fd_ev : -1;
            *xfd = need.xfd;
            *x_ev = need.x_ev;
            *until = need.until < c->rt.give_up_ns ? need.until : c->rt.give_up_ns;
            if (*until > deadline)
                *until = deadline;
            return 0;
        }
    }
    if (c->st == BO_HC_SENT && c->x.first_byte_ns != 0 && (ev & POLLIN)) {
        /* a throttle's head arriving in pieces: looked at again shortly */
        *fd_ev = -1;
        *until = now + HX_PIECE_NS;
        return 0;
    }
    if (c->st == BO_HC_SENT && (ev & POLLIN))
        *until = poll_stall_at(c, now, deadline); /* a retry's answer that may not come */
    if ((c->st == BO_HC_PASS || c->held.deliver) && bo_hc_held_left(c) > 0 && (ev & POLLIN))
        return POLLIN; /* an answer held for the program: readable now */
    return 0;
}

short bo_hx_poll_after(bo_hconn *c, short ev, short rev, short xrev, int64_t deadline)
{
    int err = 0;
    int64_t now = bo_core_now_ns();

    (void)xrev;
    if (c->st == BO_HC_RETRY && !c->rt.loop) {
        hx_need need;
        if (!bo_hx_step(c, now, &need)) {
            if (now >= c->rt.give_up_ns || now >= deadline)
                bo_hx_abandon(c); /* the program's wait ends: it gets the answer it met */
            else
                return 0;
        }
    }
    if (c->st == BO_HC_SENT && (ev & POLLIN) &&
        ((rev & (POLLIN | POLLHUP | POLLERR | POLLRDHUP)) || c->x.first_byte_ns != 0 ||
         (c->io->pending != NULL && c->io->pending(c)))) {
        switch (bo_hx_judge(c, MODE_POLL, bo_hx_before(now, deadline), &err)) {
        case J_NOTHING:
            return 0;
        case J_RETRYING:
            return bo_hx_poll_after(c, ev, 0, 0, deadline);
        default:
            break;
        }
        rev |= POLLIN;
    }
    if (c->st == BO_HC_SENT && (ev & POLLIN) && now >= poll_stall_at(c, now, deadline)) {
        bo_hx_stalled(c); /* the program's wait ends first: the answer it would have had */
        rev |= POLLIN;
    }
    if (c->st == BO_HC_RETRY)
        return 0;
    if ((c->st == BO_HC_PASS || c->held.deliver) && bo_hc_held_left(c) > 0 && (ev & POLLIN))
        rev |= POLLIN;
    return rev & (short)(ev | POLLHUP | POLLERR | POLLNVAL);
}

/* The event-loop drive's gathering (bo_hx_drive). */
typedef struct drive_ctx {
    int64_t now, until, loop_deadline;
    int *fds;
    short *evs;
    int n, max;
    bool sweep;
} drive_ctx;

static int64_t g_last_sweep;

/*
 * The sweep of a request in flight: one whose socket the program closed
 * without a hook seeing it frees its place; an answer that came whole and
 * that the program has not read for HX_SWEEP_NS ends its attempt (it
 * stands, where it is: a peek consumes nothing), so that its place in the
 * window is freed whenever the program comes to it.
 */
static void sweep_one(bo_hconn *c, int64_t now)
{
    size_t total;
    bo_http_msg m;
    int err = 0;

    if (bo_hc_identity(c->fd) != c->ino) {
        bo_hx_reset(c);
        return;
    }
    if (c->tls || !c->call.begun || !c->call.admitted ||
        now - c->call.run.attempt_ns <= HX_SWEEP_NS)
        return;
    ssize_t n = c->io->look(c, false);
    if (n > 0 &&
        bo_http_parse_response(c->x.peek, (size_t)n, c->x.req.method, &m, NULL, NULL) ==
            BO_HTTP_DONE &&
        bo_hx_whole(c, &m, n, &total))
        (void)bo_hx_judge(c, MODE_NOTE, now, &err); /* no retry: it stands */
}

/*
 * A retry of the loop's taken a step.  It lives across the loop's turns:
 * each wait returns at the program's own time, the socket quiet, and the
 * request goes out again from a later wait (its end: the take-over's
 * bound, HX_LOOP_NS).  What it waits for is gathered into d.
 */
static void loop_step(bo_hconn *c, drive_ctx *d)
{
    hx_need need;

    if (bo_hx_step(c, d->now, &need))
        return;
    if (d->now >= c->rt.give_up_ns) {
        bo_hx_abandon(c);
        return;
    }
    if (need.until < d->until)
        d->until = need.until;
    if (need.xfd >= 0 && d->n < d->max) {
        d->fds[d->n] = need.xfd;
        d->evs[d->n++] = need.x_ev;
    } else if (need.fd_ev != 0 && d->n < d->max) {
        d->fds[d->n] = c->fd;
        d->evs[d->n++] = need.fd_ev;
    }
}

/* An event loop's write held back for the pace: its EPOLLOUT kept out of
 * the loop until the time, then put back, the write let go (go: at once,
 * whatever the pace says by then). */
static void loop_hold(bo_hconn *c, drive_ctx *d)
{
    if (d->now < c->pace.until) {
        bo_hc_pace_mask(c);
        if (c->pace.until < d->until)
            d->until = c->pace.until;
        return;
    }
    bo_hc_pace_unmask(c);
    bo_hc_pace_release(c, true);
}

static void drive_one(bo_hconn *c, void *ud)
{
    drive_ctx *d = ud;
    const void *owner = __atomic_load_n(&c->pace.owner, __ATOMIC_RELAXED);

    /* a write another thread's loop holds back is that loop's to drive (its
     * program's write, meeting this thread's try, would give the connection
     * up: two threads on it) */
    if (!bo_hc_is_active(c) || (owner != NULL && owner != &bo_core_busy && !d->sweep) ||
        !bo_hc_trylock(c))
        return;
    if (c->pace.loop && bo_hx_same_socket(c))
        loop_hold(c, d);
    if (d->sweep && c->st == BO_HC_SENT)
        sweep_one(c, d->now);
    if (c->st == BO_HC_SENT && d->now >= bo_hx_stall_at(c))
        bo_hx_stalled(c); /* shut down: the loop is woken for the answer that stands */
    if (c->st == BO_HC_RETRY && c->rt.loop)
        loop_step(c, d);
    bo_hx_leave(c);
}

int bo_hx_drive(int64_t now, int64_t loop_deadline, int64_t *until, int *fds, short *evs,
                int max)
{
    drive_ctx d = {.now = now,
                   .until = INT64_MAX,
                   .loop_deadline = loop_deadline,
                   .fds = fds,
                   .evs = evs,
                   .max = max};

    int64_t last = __atomic_load_n(&g_last_sweep, __ATOMIC_RELAXED);
    if (now - last >= HX_SWEEP_NS) {
        __atomic_store_n(&g_last_sweep, now, __ATOMIC_RELAXED);
        last = now;
        d.sweep = true;
    }
    /* every record is looked at only for a sweep or a retry of the loop's
     * (a busy loop's waits cost one load each otherwise) */
    if (d.sweep || __atomic_load_n(&bo_hx_loop_retries, __ATOMIC_RELAXED) > 0)
        bo_hc_each(drive_one, &d);
    /* while requests are in flight the loop wakes for the next sweep */
    *until = d.until < last + HX_SWEEP_NS ? d.until : last + HX_SWEEP_NS;
    return d.n;
}

