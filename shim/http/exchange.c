/*
 * exchange.c: one request and its answer on a connection, as a call of the
 * engine (exchange.h), in the order a request lives them:
 *
 *   bo_hx_write_before  a transport's write hook enters: a request's start
 *                       is admitted (bo_hx_begin) before a byte goes, and
 *                       the bytes to write in place of the program's (the
 *                       shim's Idempotency-Key line in them) are handed out;
 *   bo_hx_write_after   the bytes the real write took: read and kept while
 *                       the request may be sent again (bo_hx_sent), or the
 *                       connection given up when it failed under them;
 *   bo_hx_read_before   a transport's read hook enters: the answer judged
 *                       when it comes, a throttle retried where the program
 *                       waits (bo_hx_read: drive.c, retry.c);
 *   bo_hx_read_held     the bytes held for the program, served first;
 *   bo_hx_read_after    what the program read of the answer that stands,
 *                       followed to its end (bo_hx_consumed): IDLE again.
 *
 * Each transport (sock.c, ssl.c, gnutls.c) keeps only its real calls and
 * the mapping of these verdicts to its own errors.  The record's life and
 * its one state setter are record.c's, the call's call.c's, the key's
 * key.c's, the answer's judging and the retry's steps retry.c's, where the
 * steps wait drive.c's and waiter.c's (exchange_int.h).  Whatever cannot
 * be done for sure passes through as it is.
 */
#include "http/exchange.h"
#include "http/exchange_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "bo_ratelimit.h"
#include "bo_time.h"
#include "call/call.h"
#include "core/core.h"
#include "http/sockwait.h"

/* The kept request: its head, its body up to the cap, the shim's key line. */
#define HX_KEPT_MAX (BO_HTTP_HEAD_MAX + BO_HTTP_BODY_CAP + 1024)

/* ---- the write path ----------------------------------------------------------- */

bo_hx_verdict bo_hx_write_before(bo_hconn *c, bo_hx_wr *w)
{
    w->saved = errno;
    w->err = 0;
    w->again = false;
    w->buf = w->iovcnt > 0 ? w->iov[0].iov_base : NULL;
    w->len = w->iovcnt > 0 ? w->iov[0].iov_len : 0;
    if (bo_core_busy || c->st == BO_HC_OFF || !bo_hx_enter(c))
        return BO_HX_OFF;
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

void bo_hx_forget_exchange(bo_hconn *c)
{
    bo_hc_held_drop(c);
    bo_hc_pace_release(c, false);
    c->x.shut_wr = c->x.shut_rd = c->x.deferred = false;
    c->x.kept_len = 0;
}

void bo_hx_answer_anew(bo_hconn *c)
{
    bo_hc_held_drop(c);
    c->x.first_byte_ns = 0;
    c->x.deferred = false;
    c->x.resp.status = 0;
}

void bo_hx_shutdown(int fd, int how)
{
    bo_hconn *c = bo_hc_get(fd);

    if (c == NULL || c->st < BO_HC_REQ || !bo_hc_trylock(c))
        return;
    if (how == SHUT_WR || how == SHUT_RDWR)
        c->x.shut_wr = true;
    if (how == SHUT_RD || how == SHUT_RDWR)
        c->x.shut_rd = true;
    __atomic_store_n(&c->busy, 0, __ATOMIC_RELEASE);
}

int bo_hx_keep_insert(bo_hconn *c, size_t at, const char *buf, size_t n)
{
    if (bo_hx_keep_append(c, buf, n) != 0) { /* room at the end, then moved into place */
        c->x.kept_ok = false;
        return -1;
    }
    memmove(c->x.kept + at + n, c->x.kept + at, c->x.kept_len - n - at);
    memcpy(c->x.kept + at, buf, n);
    return 0;
}

int bo_hx_keep_append(bo_hconn *c, const char *buf, size_t n)
{
    if (c->x.kept_len + n > HX_KEPT_MAX)
        return -1;
    if (c->x.kept_len + n > c->x.kept_cap) {
        size_t cap = c->x.kept_cap ? c->x.kept_cap : 4096;
        while (cap < c->x.kept_len + n)
            cap *= 2;
        if (cap > HX_KEPT_MAX)
            cap = HX_KEPT_MAX;
        char *k = realloc(c->x.kept, cap);
        if (k == NULL)
            return -1;
        c->x.kept = k;
        c->x.kept_cap = cap;
    }
    memcpy(c->x.kept + c->x.kept_len, buf, n);
    c->x.kept_len += n;
    return 0;
}

/* The request goes as the program wrote it, followed (so that the next one
 * on the connection is known) but no call of the engine. */
static int unmanaged(bo_hconn *c)
{
    c->x.kept_len = 0;
    c->x.kept_ok = false;
    bo_hx_set_state(c, BO_HC_REQ);
    return -1;
}

int bo_hx_begin(bo_hconn *c, const char *buf, size_t len, bool dontwait)
{
    const bo_config *cfg = bo_core_config();
    bo_http_msg *s = &c->x.req;
    size_t used;
    int64_t now, until = 0;

    if (cfg == NULL || !cfg->http_hook)
        goto off;
    if (c->x.peek == NULL && (c->x.peek = malloc(BO_HC_PEEK_MAX)) == NULL)
        goto off;
    /* The head is read here, before it is written: bo_hx_sent goes on after it. */
    bo_http_msg_request(s);
    if (bo_http_feed_head(s, buf, len, &used) != BO_HTTP_DONE ||
        (s->keep != BO_HTTP_KEEP_OK && s->keep != BO_HTTP_KEEP_BODY_CAP))
        goto off; /* its head not in this write, not HTTP/1.x, a tunnel or an Expect */
    c->x.fed_ahead = used;
    c->x.shut_wr = c->x.shut_rd = false;
    bo_hx_answer_anew(c);
    bo_block *b = bo_hx_destination(c, cfg, s);
    if (b == NULL)
        goto off;
    now = bo_core_now_ns();
    bo_lineage prev;
    bool continues = bo_hx_start_call(c, b, now, &prev);
    bo_hx_key_none(c);
    int w = bo_hx_write_waits(c, now, dontwait, &until); /* where the write waits (drive.c) */
    if (w == EAGAIN || w == EINTR) {
        /* held back for the program's poll (its poll shows the socket
         * writable when the pace says, bo_hx_poll_before, and its next write
         * is this one again), or a signal ended the wait: nothing written */
        bo_hx_withdraw_call(c);
        if (w == EAGAIN)
            bo_hc_pace_hold(c, until);
        bo_hx_set_state(c, BO_HC_IDLE);
        return w;
    }
    if (w != 0) {
        bo_hx_end_call(c, false);
        return unmanaged(c); /* no slot in time: this request goes as the program sent it */
    }
    bo_hx_admitted(c);
    bo_hc_pace_release(c, false);
    c->x.kept_len = 0;
    c->x.kept_ok = s->keep == BO_HTTP_KEEP_OK; /* a body over the cap is sent once, never again */
    bo_hx_key_begin(c, buf, len, continues ? &prev : NULL);
    bo_hx_set_state(c, BO_HC_REQ);
    return 0;
off:
    bo_hx_off(c);
    return -1;
}

void bo_hx_sent(bo_hconn *c, const char *buf, size_t n)
{
    size_t used = 0, ahead = n < c->x.fed_ahead ? n : c->x.fed_ahead;

    if (c->st != BO_HC_REQ || n == 0)
        return;
    /* the head's bytes were read already (bo_hx_begin): the rest is read now */
    c->x.fed_ahead -= ahead;
    bo_http_rc rc = bo_http_feed(&c->x.req, buf + ahead, n - ahead, &used);
    used += ahead;
    bo_http_keep k = c->x.req.keep;
    if (rc == BO_HTTP_NOT_HTTP || rc == BO_HTTP_TOO_LARGE ||
        (k != BO_HTTP_KEEP_OK && k != BO_HTTP_KEEP_BODY_CAP)) {
        bo_hx_off(c); /* pipelined, a tunnel, an Expect: not ours */
        return;
    }
    if (c->x.kept_ok && (k != BO_HTTP_KEEP_OK || bo_hx_keep_append(c, buf, used) != 0))
        c->x.kept_ok = false; /* over the cap: sent once, never again */
    bo_hx_key_keep(c);
    if (rc == BO_HTTP_DONE)
        bo_hx_set_state(c, BO_HC_SENT);
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

/* ---- the answer that stands -------------------------------------------------- */

void bo_hx_rl_line(void *ctx, const char *line, size_t len)
{
    (void)bo_rl_header_line(ctx, line, len);
}

/* The answer stands: the program reads it, the hooks follow it to its end
 * (from the head read at the judging when it was whole: its bytes are
 * skipped, the body read; else from the answer's first byte). */
void bo_hx_stands(bo_hconn *c)
{
    const bo_http_msg *m = &c->x.resp;
    if (m->head_done && m->rc != BO_HTTP_NOT_HTTP && m->rc != BO_HTTP_TOO_LARGE) {
        c->x.resp_skip = c->x.resp.head_len;
    } else {
        bo_http_msg_response(&c->x.resp, c->x.req.method);
        c->x.resp_skip = 0;
    }
    c->x.deferred = false;
    bo_hx_set_state(c, BO_HC_PASS);
}

void bo_hx_consumed(bo_hconn *c, const char *buf, size_t n)
{
    size_t used = 0, skip = 0;
    bo_http_rc rc;

    if (c->st != BO_HC_PASS)
        return;
    if (n == 0) {
        rc = bo_http_eof(&c->x.resp); /* the peer closed */
    } else {
        /* the head's bytes read at the judging, then the body */
        skip = n < c->x.resp_skip ? n : c->x.resp_skip;
        c->x.resp_skip -= skip;
        if (c->x.resp_skip > 0)
            return;
        rc = bo_http_feed(&c->x.resp, buf + skip, n - skip, &used);
    }
    if (rc == BO_HTTP_NEED_MORE)
        return;
    if (rc != BO_HTTP_DONE || skip + used < n || c->x.resp.framing == BO_HTTP_FRAMING_TUNNEL)
        bo_hx_off(c); /* not HTTP after all, more than one answer, or a tunnel */
    else
        bo_hx_set_state(c, BO_HC_IDLE);
}
