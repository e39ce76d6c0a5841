/*
 * request.c: the request in flight and its answer, within the http room
 * (exchange_int.h): the exchange group's setters (conn.h's x) that the
 * paths and the retries share: the request read as the program writes it
 * and kept while it may be sent again (with the shim's key line in it), the
 * program's shutdowns, an answer to be judged anew, the answer that stands
 * followed to its end.  Below the paths (exchange.c), the judging and the
 * retries (judge.c, retry.c); above the record's setters (record.c).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "bo_idem.h"
#include "bo_ratelimit.h"
#include "http/exchange_int.h"
#include "http/record.h"

/* The kept request: its head, its body up to the cap, the shim's key line. */
#define HX_KEPT_MAX (BO_HTTP_HEAD_MAX + BO_HTTP_BODY_CAP + 1024)

/* ---- the request ------------------------------------------------------------ */

int bo_hx_request_open(bo_hconn *c, const char *buf, size_t len)
{
    bo_http_msg *s = &c->x.req;
    size_t used;

    if (c->x.resp == NULL && bo_hc_lend_answer(c) != 0)
        return -1;
    /* The head is read here, before it is written: bo_hx_sent goes on after it. */
    bo_http_msg_request(s);
    if (bo_http_feed_head(s, buf, len, &used) != BO_HTTP_DONE ||
        (s->keep != BO_HTTP_KEEP_OK && s->keep != BO_HTTP_KEEP_BODY_CAP))
        return -1; /* its head not in this write, not HTTP/1.x, a tunnel or an Expect */
    c->x.fed_ahead = used;
    c->x.shut_wr = c->x.shut_rd = false;
    c->rt.fb_len = 0; /* a new request: no answer of an earlier one stands for it */
    bo_hx_answer_anew(c);
    return 0;
}

int bo_hx_keep_append(bo_hconn *c, const char *buf, size_t n)
{
    if (c->x.kept_len + n > HX_KEPT_MAX)
        return -1;
    if (c->x.kept == NULL)
        c->x.kept = bo_hc_lend_grown(&c->x.kept_cap);
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
    char line[BO_IDEM_LINE_SIZE + 2];
    size_t l;
    if (bo_hx_key_line(c, line, sizeof line, &l) &&
        bo_hx_keep_insert(c, c->x.req.head_len - 2, line, l) == 0) /* before the blank line */
        bo_hx_key_kept(c);
    if (rc == BO_HTTP_DONE)
        bo_hx_set_state(c, BO_HC_SENT);
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

/* ---- the answer ------------------------------------------------------------- */

void bo_hx_answer_anew(bo_hconn *c)
{
    bo_hc_held_drop(c);
    c->x.first_byte_ns = 0;
    c->x.deferred = false;
    c->x.resp->status = 0;
}

void bo_hx_rl_line(void *ctx, const char *line, size_t len)
{
    (void)bo_rl_header_line(ctx, line, len);
}

/* The answer stands: the program reads it, the hooks follow it to its end
 * (from the head read at the judging when it was whole: its bytes are
 * skipped, the body read; else from the answer's first byte). */
void bo_hx_stands(bo_hconn *c)
{
    const bo_http_msg *m = c->x.resp;
    if (m->head_done && m->rc != BO_HTTP_NOT_HTTP && m->rc != BO_HTTP_TOO_LARGE) {
        c->x.resp_skip = c->x.resp->head_len;
    } else {
        bo_http_msg_response(c->x.resp, c->x.req.method);
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
        rc = bo_http_eof(c->x.resp); /* the peer closed */
    } else {
        /* the head's bytes read at the judging, then the body */
        skip = n < c->x.resp_skip ? n : c->x.resp_skip;
        c->x.resp_skip -= skip;
        if (c->x.resp_skip > 0)
            return;
        rc = bo_http_feed(c->x.resp, buf + skip, n - skip, &used);
    }
    if (rc == BO_HTTP_NEED_MORE)
        return;
    if (rc != BO_HTTP_DONE || skip + used < n || c->x.resp->framing == BO_HTTP_FRAMING_TUNNEL)
        bo_hx_off(c); /* not HTTP after all, more than one answer, or a tunnel */
    else
        bo_hx_set_state(c, BO_HC_IDLE);
}
