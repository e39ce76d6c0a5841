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
 * its bytes are kept (bo_hx_key_line: request.c puts it there).
 */
#include <stdlib.h>
#include <string.h>

#include "bo_idem.h"
#include "core/core.h"
#include "http/exchange_int.h"

void bo_hx_key_begin(bo_hconn *c, const char *buf, size_t len, const bo_lineage *prev)
{
    const bo_http_msg *s = &c->x.req;
    char line[BO_IDEM_LINE_SIZE + 2];
    uint64_t body = 0;

    if (!bo_core_config()->idempotency_key || !bo_idem_wants_key(s->method_text, s->idem) ||
        s->head_len < 4 || s->head_len > len)
        return;
    if (s->framing == BO_HTTP_FRAMING_NONE)
        body = bo_idem_body_fp("", 0);
    else if (s->framing == BO_HTTP_FRAMING_LENGTH && len - s->head_len >= s->content_length)
        body = bo_idem_body_fp(buf + s->head_len, (size_t)s->content_length);
    bo_idem_key_for(prev != NULL ? prev->idem : NULL, prev != NULL ? prev->idem_body : 0, body,
                    bo_core_rng_unique(), c->key.value);
    size_t l = bo_idem_header_line(c->key.value, line, sizeof line - 2);
    if (l >= sizeof line - 2)
        return;
    memcpy(line + l, "\r\n", 2);
    l += 2;
    size_t need = len + l;
    if (need > c->key.inj_cap) {
        char *n = realloc(c->key.inj, need);
        if (n == NULL)
            return;
        c->key.inj = n;
        c->key.inj_cap = need;
    }
    size_t at = s->head_len - 2; /* before the blank line */
    memcpy(c->key.inj, buf, at);
    memcpy(c->key.inj + at, line, l);
    memcpy(c->key.inj + at + l, buf + at, len - at);
    c->key.inj_len = need;
    c->key.inj_off = 0;
    c->key.inj_at = at;
    c->key.inj_line = l;
    c->key.body = body;
    c->key.keyed = true;
}

/* The program's bytes among the first x bytes of c->key.inj. */
static size_t inj_prog(const bo_hconn *c, size_t x)
{
    if (x <= c->key.inj_at)
        return x;
    return x <= c->key.inj_at + c->key.inj_line ? c->key.inj_at : x - c->key.inj_line;
}

const char *bo_hx_inject(const bo_hconn *c, size_t n, size_t *len)
{
    if (c->key.inj_off >= c->key.inj_len || c->st != BO_HC_REQ)
        return NULL;
    size_t p = inj_prog(c, c->key.inj_off) + n; /* the program's last byte of this write */
    size_t end = p < c->key.inj_at ? p : p + c->key.inj_line; /* with the line when it is reached */
    if (end > c->key.inj_len)
        end = c->key.inj_len;
    *len = end - c->key.inj_off;
    return c->key.inj + c->key.inj_off;
}

size_t bo_hx_injected(bo_hconn *c, size_t w)
{
    size_t before = inj_prog(c, c->key.inj_off);
    c->key.inj_off += w;
    if (c->key.inj_off > c->key.inj_len)
        c->key.inj_off = c->key.inj_len;
    return inj_prog(c, c->key.inj_off) - before;
}

const char *bo_hx_key_line(const bo_hconn *c, char *line, size_t cap, size_t *len)
{
    if (!c->key.keyed || c->key.added || !c->x.kept_ok || c->x.req.head_len < 4 ||
        c->x.req.head_len > c->x.kept_len || cap < 3)
        return NULL;
    size_t l = bo_idem_header_line(c->key.value, line, cap - 2);
    if (l >= cap - 2)
        return NULL;
    memcpy(line + l, "\r\n", 2);
    *len = l + 2;
    return line;
}

void bo_hx_key_kept(bo_hconn *c)
{
    c->key.added = true;
}
