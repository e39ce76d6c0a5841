/*
 * fuzz_http: bo_http's reader fed arbitrary bytes as a request or as a
 * response (the input's first byte chooses, and the request method a
 * response answers), whole and split.  Promises checked (ASan catches a
 * read past any piece: each piece is fed from its own exactly sized copy):
 *   - no call takes more bytes than it was given, and the bytes taken add
 *     up to the message's total;
 *   - the same answer, fields and body counts whether the message is fed
 *     whole, in two pieces at an offset from the input, or one byte at a
 *     time (short inputs);
 *   - bo_http_parse_response over the whole buffer agrees with the pieces
 *     on the head, and hands its callback exactly the final head's field
 *     lines, each inside the head and ending in LF, never the status line
 *     or the empty line;
 *   - what a done head says is coherent: the head within BO_HTTP_HEAD_MAX,
 *     a request framed NONE, LENGTH or CHUNKED, no keep-alive after a
 *     close-delimited body or a tunnel, a request kept only when it is no
 *     CONNECT, Upgrade or Expect and its body is within the cap, a status
 *     of 100 to 999 that is not an interim one, method and host
 *     NUL-terminated within their arrays, a Retry-After of -1 or more.
 */
#include <stdlib.h>
#include <string.h>

#include "bo_http.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct reading {
    bo_http_rc rc;
    size_t used;
    bo_http_msg m;
} reading;

static void check(int ok)
{
    if (!ok)
        abort();
}

/* Feeds s[0..len) in pieces ending at cuts[], each from its own copy. */
static void read_pieces(const char *s, size_t len, bool response, bo_http_method rm,
                        const size_t *cuts, size_t ncuts, reading *r)
{
    size_t at = 0;
    if (response)
        bo_http_msg_response(&r->m, rm);
    else
        bo_http_msg_request(&r->m);
    r->used = 0;
    r->rc = BO_HTTP_NEED_MORE;
    for (size_t k = 0; k <= ncuts; k++) {
        size_t end = k < ncuts ? cuts[k] : len;
        size_t n = end - at, u = (size_t)-1;
        char *piece = malloc(n ? n : 1);
        check(piece != NULL);
        memcpy(piece, s + at, n);
        r->rc = bo_http_feed(&r->m, piece, n, &u);
        free(piece);
        check(u <= n);
        if (r->rc == BO_HTTP_DONE || r->rc == BO_HTTP_NEED_MORE)
            r->used += u;
        else
            check(u == 0);
        at = end;
    }
    if (r->rc == BO_HTTP_DONE || r->rc == BO_HTTP_NEED_MORE)
        check(r->m.total == r->used);
}

static void same(const reading *a, const reading *b)
{
    const bo_http_msg *x = &a->m, *y = &b->m;
    check(a->rc == b->rc && x->err == y->err);
    check(x->head_done == y->head_done && x->done == y->done && x->head_len == y->head_len);
    if (a->rc == BO_HTTP_DONE || a->rc == BO_HTTP_NEED_MORE) {
        check(a->used == b->used);
        check(x->body.wire == y->body.wire && x->body.data == y->body.data);
        check(x->body.chunks == y->body.chunks);
    }
    check(x->minor == y->minor && x->framing == y->framing);
    check(x->content_length == y->content_length && x->chunked == y->chunked);
    check(x->keep_alive == y->keep_alive && x->conn_close == y->conn_close);
    check(x->method == y->method && strcmp(x->method_text, y->method_text) == 0);
    check(x->target_hash == y->target_hash && x->target_len == y->target_len);
    check(strcmp(x->host, y->host) == 0 && x->host_long == y->host_long);
    check(x->upgrade == y->upgrade && x->expect == y->expect && x->keep == y->keep);
    check(x->idem == y->idem);
    check(x->status == y->status && x->interim == y->interim);
    check(x->retry_after_delta == y->retry_after_delta);
    check(x->retry_after_date == y->retry_after_date);
}

/* What a done head says must hang together. */
static void coherent(const bo_http_msg *m, size_t len)
{
    check(memchr(m->method_text, '\0', sizeof m->method_text) != NULL);
    check(memchr(m->host, '\0', sizeof m->host) != NULL && strlen(m->host) == m->host_len);
    if (!m->head_done)
        return;
    check(m->head_len > 0 && m->head_len <= BO_HTTP_HEAD_MAX && m->head_len <= len);
    if ((m->framing == BO_HTTP_FRAMING_CLOSE || m->framing == BO_HTTP_FRAMING_TUNNEL))
        check(!m->keep_alive);
    if (m->framing == BO_HTTP_FRAMING_LENGTH)
        check(m->has_content_length);
    if (m->framing == BO_HTTP_FRAMING_CHUNKED)
        check(m->chunked && !m->has_content_length);
    if (!m->is_response) {
        check(m->framing == BO_HTTP_FRAMING_NONE || m->framing == BO_HTTP_FRAMING_LENGTH ||
              m->framing == BO_HTTP_FRAMING_CHUNKED);
        check(m->method_text[0] != '\0');
        check(m->target_len > 0);
        if (m->keep == BO_HTTP_KEEP_OK) {
            check(m->method != BO_HTTP_METHOD_CONNECT && !m->upgrade && !m->conn_upgrade);
            check(!m->expect && m->body.wire <= BO_HTTP_BODY_CAP);
        }
    } else {
        check(m->status >= 100 && m->status <= 999);
        check(m->status >= 200 || m->status == 101);
        check(m->retry_after_delta >= -1 && m->retry_after_date >= -1);
        if (m->req_method == BO_HTTP_METHOD_HEAD || m->status == 204 || m->status == 304)
            check(m->framing == BO_HTTP_FRAMING_NONE);
    }
}

typedef struct lines_seen {
    const char *buf;
    size_t head_len;
    size_t next;      /* where the next line must start */
    unsigned count;
} lines_seen;

static void on_line(void *ctx, const char *line, size_t len)
{
    lines_seen *l = ctx;
    check(len >= 2 && line >= l->buf && (size_t)(line - l->buf) + len <= l->head_len);
    check(line[len - 1] == '\n' && line[0] != '\r' && line[0] != '\n');
    check(memchr(line, '\n', len - 1) == NULL);
    check(l->count == 0 || (size_t)(line - l->buf) == l->next);
    check(memchr(line, ':', len) != NULL);
    l->next = (size_t)(line - l->buf) + len;
    l->count++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in in = {data, size};
    unsigned mode = fuzz_u8(&in);
    size_t cut = (size_t)fuzz_u64(&in, 2);
    bool response = mode & 1;
    bo_http_method rm = (bo_http_method)((mode >> 1) % (BO_HTTP_METHOD_CONNECT + 1));
    const char *s = (const char *)in.p;
    size_t len = in.n;
    reading whole, two, bytes;

    read_pieces(s, len, response, rm, NULL, 0, &whole);
    coherent(&whole.m, len);
    if (whole.rc == BO_HTTP_DONE)
        check(whole.m.done && whole.used <= len);
    size_t c = len ? cut % (len + 1) : 0;
    read_pieces(s, len, response, rm, &c, 1, &two);
    same(&whole, &two);
    if (len <= 2048) {
        size_t *cuts = malloc((len + 1) * sizeof *cuts);
        check(cuts != NULL);
        for (size_t i = 0; i < len; i++)
            cuts[i] = i + 1;
        read_pieces(s, len, response, rm, cuts, len ? len - 1 : 0, &bytes);
        free(cuts);
        same(&whole, &bytes);
    }
    /* the peer closes: the same answer either way */
    bo_http_rc e1 = bo_http_eof(&whole.m), e2 = bo_http_eof(&two.m);
    check(e1 == e2 && whole.m.err == two.m.err);
    if (e1 == BO_HTTP_DONE)
        check(whole.m.done);

    if (response) {
        bo_http_msg m;
        lines_seen l = {NULL, 0, 0, 0};
        char *copy = malloc(len ? len : 1);
        check(copy != NULL);
        memcpy(copy, s, len);
        l.buf = copy;
        l.head_len = len;
        bo_http_rc rc = bo_http_parse_response(copy, len, rm, &m, on_line, &l);
        reading head;
        read_pieces(s, len, true, rm, NULL, 0, &head);
        if (rc == BO_HTTP_DONE) {
            check(head.m.head_done && m.head_len == head.m.head_len);
            check(m.status == head.m.status && m.framing == head.m.framing);
            /* the lines run from the status line's end to the empty line */
            if (l.count > 0)
                check(copy[l.next] == '\r' || copy[l.next] == '\n');
            check(bo_http_retry_after_s(&m, (int64_t)cut * 1000000) >= -1);
            int64_t ns = bo_http_retry_after_ns(&m, (int64_t)cut * 1000000);
            check(ns == -1 || ns > 0);
        } else {
            check(l.count == 0);
            check(rc == head.rc && m.err == head.m.err);
        }
        free(copy);
    }
    return 0;
}
