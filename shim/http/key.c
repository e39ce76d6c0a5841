/*
 * key.c: the shim's Idempotency-Key in a request of the http room
 * (BACKOFF_IDEMPOTENCY_KEY; exchange_int.h): bo_idem_wants_key, the rule
 * of both hook families, says which request gets one (a POST or PATCH
 * that says nothing of a key), from its first attempt on, so that a
 * failure after the server may have processed it (a reset, a 502) is
 * retried as for a request with a key, and the server replays its stored
 * answer.  The key is the program's previous try's when this call
 * continues one (bo_idem_key_for: for the same body, known when it is
 * whole in the first write), so that the program's own retry is one
 * request to the server too.  The line goes into the first write before
 * the head's blank line (the write path writes those bytes in place of the
 * program's: bo_hx_inject, bo_hx_injected) and into the kept request as
 * its bytes are kept (bo_hx_key_keep).
 */
#include <stdlib.h>
#include <string.h>

#include "bo_idem.h"
#include "core/core.h"
#include "http/exchange_int.h"

void bo_hx_key_none(bo_hconn *c)
{
    c->idem_keyed = c->idem_added = false;
    c->inj_len = c->inj_off = 0;
}

void bo_hx_key_begin(bo_hconn *c, const char *buf, size_t len, const bo_lineage *prev)
{
    const bo_http_msg *s = &c->req;
    char line[BO_IDEM_LINE_SIZE + 2];
    uint64_t body = 0;

    bo_hx_key_none(c);
    if (!bo_core_config()->idempotency_key || !bo_idem_wants_key(s->method_text, s->idem) ||
        s->head_len < 4 || s->head_len > len)
        return;
    if (s->framing == BO_HTTP_FRAMING_NONE)
        body = bo_idem_body_fp("", 0);
    else if (s->framing == BO_HTTP_FRAMING_LENGTH && len - s->head_len >= s->content_length)
        body = bo_idem_body_fp(buf + s->head_len, (size_t)s->content_length);
    bo_idem_key_for(prev != NULL ? prev->idem : NULL, prev != NULL ? prev->idem_body : 0, body,
                    bo_core_rng_unique(), c->idem);
    size_t l = bo_idem_header_line(c->idem, line, sizeof line - 2);
    if (l >= sizeof line - 2)
        return;
    memcpy(line + l, "\r\n", 2);
    l += 2;
    size_t need = len + l;
    if (need > c->inj_cap) {
        char *n = realloc(c->inj, need);
        if (n == NULL)
            return;
        c->inj = n;
        c->inj_cap = need;
    }
    size_t at = s->head_len - 2; /* before the blank line */
    memcpy(c->inj, buf, at);
    memcpy(c->inj + at, line, l);
    memcpy(c->inj + at + l, buf + at, len - at);
    c->inj_len = need;
    c->inj_off = 0;
    c->inj_at = at;
    c->inj_line = l;
    c->idem_body = body;
    c->idem_keyed = true;
}

/* The program's bytes among the first x bytes of c->inj. */
static size_t inj_prog(const bo_hconn *c, size_t x)
{
    if (x <= c->inj_at)
        return x;
    return x <= c->inj_at + c->inj_line ? c->inj_at : x - c->inj_line;
}

const char *bo_hx_inject(const bo_hconn *c, size_t n, size_t *len)
{
    if (c->inj_off >= c->inj_len || c->st != BO_HC_REQ)
        return NULL;
    size_t p = inj_prog(c, c->inj_off) + n; /* the program's last byte of this write */
    size_t end = p < c->inj_at ? p : p + c->inj_line; /* with the line when it is reached */
    if (end > c->inj_len)
        end = c->inj_len;
    *len = end - c->inj_off;
    return c->inj + c->inj_off;
}

size_t bo_hx_injected(bo_hconn *c, size_t w)
{
    size_t before = inj_prog(c, c->inj_off);
    c->inj_off += w;
    if (c->inj_off > c->inj_len)
        c->inj_off = c->inj_len;
    return inj_prog(c, c->inj_off) - before;
}

void bo_hx_key_keep(bo_hconn *c)
{
    char line[BO_IDEM_LINE_SIZE + 2];

    if (!c->idem_keyed || c->idem_added || !c->kept_ok || c->req.head_len < 4 ||
        c->req.head_len > c->kept_len)
        return;
    size_t l = bo_idem_header_line(c->idem, line, sizeof line - 2);
    memcpy(line + l, "\r\n", 2);
    l += 2;
    if (bo_hx_keep_append(c, line, l) != 0) { /* room at the end, then moved into place */
        c->kept_ok = false;
        return;
    }
    size_t at = c->req.head_len - 2; /* before the blank line */
    memmove(c->kept + at + l, c->kept + at, c->kept_len - l - at);
    memcpy(c->kept + at, line, l);
    c->idem_added = true;
}
