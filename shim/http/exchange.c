/*
 * exchange.c: one request and its answer on a connection, as a call of the
 * engine (exchange.h): the one write path and the one read path every
 * transport (sock.c, ssl.c, gnutls.c) makes its calls through, in the order
 * a request lives them:
 *
 *   bo_hx_write_before  a write hook enters the record (the same socket?
 *                       the transport's claim adopts a new one); a write
 *                       that starts a request begins it (bo_hx_begin): its
 *                       head read and kept (request.c), its destination and
 *                       call (call.c), its first attempt admitted where the
 *                       write may wait (bo_hx_write_waits, drive.c), the
 *                       shim's key (key.c), all before a byte goes; the
 *                       bytes to write in place of the program's (the key's
 *                       line in them) handed out;
 *   bo_hx_write_after   the bytes the real write took: read and kept while
 *                       the request may be sent again (bo_hx_sent), or the
 *                       connection given up when it failed under them;
 *   bo_hx_read_before   a read hook enters: the answer judged when it comes
 *                       (judge.c: read, classify, may it be retried here,
 *                       bound, complete), a throttle retried step by step
 *                       (retry.c) where the program waits (bo_hx_read,
 *                       drive.c; its poll and its event loop: bo_hx_poll_*,
 *                       bo_hx_drive);
 *   bo_hx_read_held     the bytes held for the program, served first;
 *   bo_hx_read_after    what the program read of the answer that stands,
 *                       followed to its end (bo_hx_consumed): IDLE again.
 *
 * Each transport keeps only its real calls and the mapping of these
 * verdicts to its own errors.  The record's state and life are record.c's.
 * Dependencies run one way: this file calls the others, none calls it.
 * Whatever cannot be done for sure passes through as it is.
 */
#include "http/exchange.h"
#include "http/exchange_int.h"
#include "http/record.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "bo_ratelimit.h"
#include "bo_time.h"
#include "call/call.h"
#include "core/core.h"
#include "http/sockwait.h"

/* ---- the write path ----------------------------------------------------------- */

bo_hx_verdict bo_hx_write_before(bo_hconn *c, bo_hx_wr *w)
{
    w->saved = errno;
    w->err = 0;
    w->again = false;
    w->buf = w->iovcnt > 0 ? w->iov[0].iov_base : NULL;
    w->len = w->iovcnt > 0 ? w->iov[0].iov_len : 0;
    if (bo_core_busy || c->st == BO_HC_OFF)
        return BO_HX_OFF;
    if (!bo_hc_trylock(c)) {
        if (__atomic_load_n(&c->pace.owner, __ATOMIC_RELAXED) != NULL) {
            w->err = errno = EAGAIN; /* a held write: a wait hook steps it meanwhile */
            return BO_HX_ERR;
        }
        bo_hc_mark_shared(c); /* two threads on one connection: the holder gives it up */
        return BO_HX_OFF;
    }
    bo_core_busy = 1;
    if (c->st != BO_HC_NONE && c->st != BO_HC_REQ)
        (void)bo_hx_same_socket(c); /* another socket on that number: the record starts anew */
    if (!w->claim(c, w) || c->st == BO_HC_OFF) {
        bo_core_busy = 0;
        bo_hx_leave(c);
        errno = w->saved;
        return BO_HX_OFF;
    }
    switch (c->st) {
    case BO_HC_IDLE:
        if (w->buf == NULL || !bo_hx_request_start(w->buf, w->len)) {
            bo_hx_off(c);
            break;
        }
        int b = bo_hx_begin(c, w->buf, w->len, w->dontwait);
        if (b == EINTR || b == EAGAIN) {
            /* EINTR: a signal ended the admission's wait; EAGAIN: the pace
             * holds the write back for the program's poll.  Nothing is
             * written. */
            bo_core_busy = 0;
            bo_hx_leave(c);
            w->err = errno = b;
            return BO_HX_ERR;
        }
        break;
    case BO_HC_REQ:
        break;
    default: /* SENT, PASS, RETRY: another request before the answer was read whole */
        bo_hx_off(c);
        break;
    }
    size_t ilen = 0;
    const char *ib = c->st == BO_HC_REQ ? bo_hx_inject(c, w->len, &ilen) : NULL;
    if (ib != NULL) {
        w->buf = ib;
        w->len = ilen;
    }
    errno = w->saved;
    return BO_HX_PASS;
}

ssize_t bo_hx_write_after(bo_hconn *c, bo_hx_wr *w, ssize_t wrote, bool failed)
{
    int e = errno;
    ssize_t n = wrote;
    const char *first = w->iovcnt > 0 ? w->iov[0].iov_base : NULL;

    if (c->st == BO_HC_REQ && wrote > 0) {
        size_t k = (size_t)wrote;
        if (w->buf != first) { /* the key's line was in the bytes written */
            size_t in_first = k < w->len ? k : w->len;
            n = (ssize_t)(bo_hx_injected(c, in_first) + (k - in_first));
        }
        /* the program's bytes that went, in order, to the request's reader */
        size_t left = (size_t)n;
        for (int i = 0; i < w->iovcnt && left > 0 && c->st == BO_HC_REQ; i++) {
            size_t m = w->iov[i].iov_len < left ? w->iov[i].iov_len : left;
            bo_hx_sent(c, w->iov[i].iov_base, m);
            left -= m;
        }
    } else if (c->st == BO_HC_REQ && wrote < 0 && failed) {
        bo_hx_off(c); /* the connection failed under the request */
    }
    if (wrote > 0 && n == 0) {
        /* only the key line's bytes went: a call that may wait writes on, one
         * that may not says it would block (the rest of the line goes first
         * next time) */
        if (!w->dontwait && !bo_hs_nonblocking(c->fd))
            w->again = true;
        else
            w->err = e = EAGAIN;
        n = w->again ? 0 : -1;
    }
    bo_core_busy = 0;
    bo_hx_leave(c);
    errno = e;
    return n;
}

/* ---- the request ------------------------------------------------------------ */

/* The request goes as the program wrote it, followed (so that the next one
 * on the connection is known) but no call of the engine. */
static int unmanaged(bo_hconn *c)
{
    bo_hx_request_kept(c, false);
    bo_hx_set_state(c, BO_HC_REQ);
    return -1;
}

int bo_hx_begin(bo_hconn *c, const char *buf, size_t len, bool dontwait)
{
    const bo_config *cfg = bo_core_config();
    int64_t now, until = 0;
    bo_block *b;

    if (cfg == NULL || !cfg->http_hook || bo_hx_request_open(c, buf, len) != 0 ||
        (b = bo_hx_destination(c, cfg, &c->x.req)) == NULL)
        goto off;
    now = bo_core_now_ns();
    bo_lineage prev;
    bool continues = bo_hx_start_call(c, b, now, &prev);
    bo_hx_key_none(c);
    bool loop;
    int w = bo_hx_write_waits(c, now, dontwait, &until, &loop); /* where it waits (drive.c) */
    if (w == EAGAIN || w == EINTR) {
        /* held back for the program's poll (its poll shows the socket
         * writable when the pace says, bo_hx_poll_before, and its next write
         * is this one again), or a signal ended the wait: nothing written */
        int64_t quota = c->call.run.quota_hold_ns;
        bo_hx_withdraw_call(c);
        if (w == EAGAIN)
            bo_hc_pace_hold(c, until, quota, loop);
        bo_hx_set_state(c, BO_HC_IDLE);
        return w;
    }
    if (w != 0) {
        bo_hx_end_call(c, false);
        return unmanaged(c); /* no slot in time: this request goes as the program sent it */
    }
    bo_hx_admitted(c);
    bo_hc_pace_unmask(c); /* (a loop's write that did not wait for its EPOLLOUT) */
    bo_hc_pace_release(c, false);
    bo_hc_pace_sent(c);
    bo_hx_request_kept(c, c->x.req.keep == BO_HTTP_KEEP_OK); /* over the cap: sent once */
    bo_hx_key_begin(c, buf, len, continues ? &prev : NULL);
    bo_hx_set_state(c, BO_HC_REQ);
    return 0;
off:
    bo_hx_off(c);
    return -1;
}

/* ---- the read path ------------------------------------------------------------ */

bo_hx_verdict bo_hx_read_before(bo_hconn *c, bo_hx_rd *r)
{
    r->saved = errno;
    r->err = 0;
    if (bo_core_busy || (c->st < BO_HC_REQ && bo_hc_held_left(c) == 0))
        return BO_HX_OFF;
    if (!bo_hc_trylock(c)) {
        if (c->st == BO_HC_RETRY && r->n > 0 && (r->dontwait || bo_hs_nonblocking(c->fd))) {
            r->err = errno = EAGAIN; /* a wait hook takes the retry a step meanwhile */
            return BO_HX_ERR;
        }
        bo_hc_mark_shared(c); /* two threads on one connection: the holder gives it up */
        return BO_HX_OFF;
    }
    bo_core_busy = 1;
    if (c->st >= BO_HC_REQ && c->st != BO_HC_PASS && r->n > 0 &&
        bo_hx_read(c, r->dontwait ? 0 : BO_HX_ASK, &r->err) == BO_HX_ERR) {
        bo_core_busy = 0;
        bo_hx_leave(c);
        errno = r->err;
        return BO_HX_ERR;
    }
    errno = r->saved;
    return BO_HX_PASS;
}

size_t bo_hx_read_held(bo_hconn *c, const bo_hx_rd *r)
{
    return bo_hc_held_take(c, r->buf, r->n, r->peek);
}

void bo_hx_read_after(bo_hconn *c, const bo_hx_rd *r, size_t got, bool eof)
{
    int e = errno;
    if (!r->peek && (got > 0 || eof))
        bo_hx_consumed(c, r->buf, got);
    bo_core_busy = 0;
    bo_hx_leave(c);
    errno = e;
}
