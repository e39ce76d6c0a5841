/*
 * Unit tests for bo_http: requests as programs write them (what the hooks
 * may keep and replay, where a request ends), response heads (status,
 * framing by RFC 9112 section 6.3, interim 1xx, header lines for the
 * rate-limit reader, Retry-After), bodies (Content-Length, chunked with
 * extensions and trailers, close-delimited), the limits, and the same
 * answers whichever way a message is split: whole, one byte at a time,
 * and in two pieces at every offset.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bo_http.h"
#include "bo_idem.h"
#include "bo_ratelimit.h"

#define LEN(s) (sizeof(s) - 1)

/* ---- helpers ------------------------------------------------------------- */

/* A message fed in pieces (cuts: where each piece ends, ascending). */
typedef struct reading {
    bo_http_rc rc;
    size_t used;      /* bytes the message took, over all pieces */
    bo_http_msg m;
} reading;

static reading read_cut(const char *s, size_t len, bool response, bo_http_method rm,
                        const size_t *cuts, size_t ncuts)
{
    reading r;
    size_t at = 0;
    if (response)
        bo_http_msg_response(&r.m, rm);
    else
        bo_http_msg_request(&r.m);
    r.rc = BO_HTTP_NEED_MORE;
    r.used = 0;
    for (size_t k = 0; k <= ncuts; k++) {
        size_t end = k < ncuts ? cuts[k] : len;
        size_t u = 99999;
        r.rc = bo_http_feed(&r.m, s + at, end - at, &u);
        /* (plain ifs: every ck_assert is a write(2) of check's, and these
         * run millions of times) */
        if (u > end - at)
            ck_abort_msg("took %zu of %zu bytes", u, end - at);
        if (r.rc == BO_HTTP_DONE || r.rc == BO_HTTP_NEED_MORE)
            r.used += u;
        else if (u != 0)
            ck_abort_msg("took %zu bytes and failed", u);
        at = end;
    }
    return r;
}

static reading read_whole(const char *s, size_t len, bool response, bo_http_method rm)
{
    return read_cut(s, len, response, rm, NULL, 0);
}

static reading request(const char *s, size_t len)
{
    return read_whole(s, len, false, BO_HTTP_METHOD_OTHER);
}

/* The public fields of two readings are equal (the quick check). */
static bool equal(const reading *a, const reading *b)
{
    const bo_http_msg *x = &a->m, *y = &b->m;
    bool ok = a->rc == b->rc && x->err == y->err && x->head_done == y->head_done &&
              x->done == y->done && x->head_len == y->head_len && x->minor == y->minor &&
              x->framing == y->framing && x->content_length == y->content_length &&
              x->chunked == y->chunked && x->keep_alive == y->keep_alive &&
              x->conn_close == y->conn_close && x->conn_keep_alive == y->conn_keep_alive &&
              x->conn_upgrade == y->conn_upgrade && x->method == y->method &&
              strcmp(x->method_text, y->method_text) == 0 && x->target_hash == y->target_hash &&
              x->target_len == y->target_len && strcmp(x->host, y->host) == 0 &&
              x->host_long == y->host_long && x->upgrade == y->upgrade &&
              x->upgrade_websocket == y->upgrade_websocket && x->upgrade_h2c == y->upgrade_h2c &&
              x->expect == y->expect && x->expect_continue == y->expect_continue &&
              x->idem == y->idem && x->keep == y->keep &&
              x->status == y->status && x->interim == y->interim &&
              x->retry_after_delta == y->retry_after_delta &&
              x->retry_after_date == y->retry_after_date;
    if (a->rc == BO_HTTP_DONE || a->rc == BO_HTTP_NEED_MORE)
        ok = ok && a->used == b->used && x->total == y->total && x->total == a->used &&
             x->body.wire == y->body.wire && x->body.data == y->body.data &&
             x->body.chunks == y->body.chunks;
    return ok;
}

/* Everything public two readings must agree on: which field differs. */
static void same(const reading *a, const reading *b, const char *how)
{
    const bo_http_msg *x = &a->m, *y = &b->m;
    if (equal(a, b))
        return;
    ck_assert_msg(a->rc == b->rc, "%s: rc %d, whole %d", how, b->rc, a->rc);
    ck_assert_msg(x->err == y->err, "%s: err %s, whole %s", how, bo_http_err_name(y->err),
                  bo_http_err_name(x->err));
    if (a->rc == BO_HTTP_DONE || a->rc == BO_HTTP_NEED_MORE) {
        /* (after a failure the bytes taken mean nothing) */
        ck_assert_msg(a->used == b->used, "%s: used %zu, whole %zu", how, b->used, a->used);
        ck_assert_uint_eq(x->total, y->total);
        ck_assert_uint_eq(x->total, a->used);
    }
    ck_assert_int_eq(x->head_done, y->head_done);
    ck_assert_int_eq(x->done, y->done);
    ck_assert_uint_eq(x->head_len, y->head_len);
    ck_assert_uint_eq(x->minor, y->minor);
    ck_assert_int_eq(x->framing, y->framing);
    ck_assert_uint_eq(x->content_length, y->content_length);
    ck_assert_int_eq(x->chunked, y->chunked);
    ck_assert_int_eq(x->keep_alive, y->keep_alive);
    ck_assert_int_eq(x->conn_close, y->conn_close);
    ck_assert_int_eq(x->conn_keep_alive, y->conn_keep_alive);
    ck_assert_int_eq(x->conn_upgrade, y->conn_upgrade);
    ck_assert_int_eq(x->method, y->method);
    ck_assert_str_eq(x->method_text, y->method_text);
    ck_assert_uint_eq(x->target_hash, y->target_hash);
    ck_assert_uint_eq(x->target_len, y->target_len);
    ck_assert_str_eq(x->host, y->host);
    ck_assert_int_eq(x->host_long, y->host_long);
    ck_assert_int_eq(x->upgrade, y->upgrade);
    ck_assert_int_eq(x->upgrade_websocket, y->upgrade_websocket);
    ck_assert_int_eq(x->upgrade_h2c, y->upgrade_h2c);
    ck_assert_int_eq(x->expect, y->expect);
    ck_assert_int_eq(x->expect_continue, y->expect_continue);
    ck_assert_int_eq(x->idem, y->idem);
    ck_assert_msg(x->keep == y->keep, "%s: keep %s, whole %s", how, bo_http_keep_name(y->keep),
                  bo_http_keep_name(x->keep));
    ck_assert_int_eq(x->status, y->status);
    ck_assert_uint_eq(x->interim, y->interim);
    ck_assert_int_eq(x->retry_after_delta, y->retry_after_delta);
    ck_assert_int_eq(x->retry_after_date, y->retry_after_date);
    if (a->rc == BO_HTTP_DONE || a->rc == BO_HTTP_NEED_MORE) {
        ck_assert_uint_eq(x->body.wire, y->body.wire);
        ck_assert_uint_eq(x->body.data, y->body.data);
        ck_assert_uint_eq(x->body.chunks, y->body.chunks);
    }
    ck_abort_msg("%s: the readings differ", how);
}

/*
 * The reading of s whole, then one byte at a time, then in two pieces at
 * every offset, then in three pieces at every pair of offsets for short
 * messages: every reading must be the same, then the same after the peer
 * closes.
 */
static reading any_split(const char *s, size_t len, bool response, bo_http_method rm)
{
    reading whole = read_whole(s, len, response, rm);
    size_t *cuts = malloc((len + 1) * sizeof *cuts);
    ck_assert_ptr_nonnull(cuts);
    for (size_t i = 0; i < len; i++)
        cuts[i] = i + 1;
    reading r = read_cut(s, len, response, rm, cuts, len > 0 ? len - 1 : 0);
    same(&whole, &r, "one byte at a time");
    for (size_t c = 0; c <= len; c++) {
        cuts[0] = c;
        r = read_cut(s, len, response, rm, cuts, 1);
        if (!equal(&whole, &r)) {
            char how[64];
            snprintf(how, sizeof how, "cut at %zu", c);
            same(&whole, &r, how);
        }
    }
    if (len <= 300) {
        for (size_t c = 0; c <= len; c++) {
            for (size_t d = c; d <= len; d++) {
                cuts[0] = c;
                cuts[1] = d;
                r = read_cut(s, len, response, rm, cuts, 2);
                same(&whole, &r, "three pieces");
            }
        }
    }
    free(cuts);
    reading closed = whole;
    bo_http_rc e1 = bo_http_eof(&closed.m);
    r = read_cut(s, len, response, rm, NULL, 0);
    ck_assert_int_eq(bo_http_eof(&r.m), e1);
    ck_assert_int_eq(r.m.err, closed.m.err);
    return whole;
}

static reading request_split(const char *s, size_t len)
{
    return any_split(s, len, false, BO_HTTP_METHOD_OTHER);
}

static uint64_t fnv(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    return h;
}

/* ---- requests ------------------------------------------------------------- */

START_TEST(test_request_get)
{
    static const char s[] = "GET /item/1?size=64 HTTP/1.1\r\n"
                            "Host: 127.0.0.1:8080\r\n"
                            "User-Agent: python-requests/2.28.1\r\n"
                            "Accept-Encoding: gzip, deflate\r\n"
                            "Accept: */*\r\n"
                            "Connection: keep-alive\r\n\r\n";
    reading r = request_split(s, LEN(s));
    ck_assert_int_eq(r.rc, BO_HTTP_DONE);
    ck_assert_uint_eq(r.used, LEN(s));
    ck_assert(r.m.head_done && r.m.done);
    ck_assert_uint_eq(r.m.head_len, LEN(s));
    ck_assert_int_eq(r.m.method, BO_HTTP_METHOD_GET);
    ck_assert_str_eq(r.m.method_text, "GET");
    ck_assert_uint_eq(r.m.target_len, strlen("/item/1?size=64"));
    ck_assert_uint_eq(r.m.target_hash, fnv("/item/1?size=64"));
    ck_assert_uint_eq(r.m.minor, 1);
    ck_assert(r.m.has_host);
    ck_assert_str_eq(r.m.host, "127.0.0.1:8080");
    ck_assert_uint_eq(r.m.host_len, 14);
    ck_assert_int_eq(r.m.framing, BO_HTTP_FRAMING_NONE);
    ck_assert(r.m.keep_alive && r.m.conn_keep_alive && !r.m.conn_close);
    ck_assert_int_eq(r.m.keep, BO_HTTP_KEEP_OK);
}
END_TEST

START_TEST(test_request_lf_only_and_methods)
{
    static const char s[] = "DELETE /x HTTP/1.1\nHost:   h  \n\n";
    reading r = request_split(s, LEN(s));
    ck_assert_int_eq(r.rc, BO_HTTP_DONE);
    ck_assert_int_eq(r.m.method, BO_HTTP_METHOD_DELETE);
    ck_assert_str_eq(r.m.host, "h");
    static const char *const methods[] = {"GET",   "HEAD",  "POST",    "PUT",    "DELETE",
                                          "OPTIONS", "TRACE", "PATCH", "CONNECT", "PROPFIND",
                                          "get"};
    static const bo_http_method want[] = {
        BO_HTTP_METHOD_GET,    BO_HTTP_METHOD_HEAD,    BO_HTTP_METHOD_POST,
        BO_HTTP_METHOD_PUT,    BO_HTTP_METHOD_DELETE,  BO_HTTP_METHOD_OPTIONS,
        BO_HTTP_METHOD_TRACE,  BO_HTTP_METHOD_PATCH,   BO_HTTP_METHOD_CONNECT,
        BO_HTTP_METHOD_OTHER,  BO_HTTP_METHOD_OTHER};
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        char buf[128];
        int n = snprintf(buf, sizeof buf, "%s / HTTP/1.1\r\n\r\n", methods[i]);
        r = request(buf, (size_t)n);
        ck_assert_int_eq(r.rc, BO_HTTP_DONE);
        ck_assert_int_eq(r.m.method, want[i]);
        ck_assert_str_eq(r.m.method_text, methods[i]);
    }
}
END_TEST

START_TEST(test_request_content_length)
{
    static const char s[] = "POST /item/7 HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n"
                            "Idempotency-Key: 8e03978e-40d5-43e8-bc93-6894a57f9324\r\n\r\n"
                            "hello world";
    reading r = request_split(s, LEN(s));
    ck_assert_int_eq(r.rc, BO_HTTP_DONE);
    ck_assert_uint_eq(r.used, LEN(s));
    ck_assert_uint_eq(r.m.head_len, LEN(s) - 11);
    ck_assert_int_eq(r.m.framing, BO_HTTP_FRAMING_LENGTH);
    ck_assert_uint_eq(r.m.content_length, 11);
    ck_assert_uint_eq(r.m.body.data, 11);
    ck_assert_int_eq(r.m.idem, BO_IDEM_LINE_KEY);
    ck_assert_int_eq(r.m.method, BO_HTTP_METHOD_POST);
    ck_assert_int_eq(r.m.keep, BO_HTTP_KEEP_OK);
    /* the head alone: the body is still to come */
    r = request(s, LEN(s) - 1);
    ck_assert_int_eq(r.rc, BO_HTTP_NEED_MORE);
    ck_assert(r.m.head_done && !r.m.done);
    ck_assert_int_eq(bo_http_eof(&r.m), BO_HTTP_NOT_HTTP);
    ck_assert_int_eq(r.m.err, BO_HTTP_ERR_TRUNCATED);
    /* a list of one value repeated is that value (RFC 9110 section 8.6) */
    static const char l[] = "PUT / HTTP/1.1\r\nContent-Length: 3, 3\r\n"
                            "Content-Length: 3\r\n\r\nabc";
    r = request_split(l, LEN(l));
    ck_assert_int_eq(r.rc, BO_HTTP_DONE);
    ck_assert_uint_eq(r.m.content_length, 3);
    /* zero: done at the end of the head */
    static const char z[] = "POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n";
    r = request_split(z, LEN(z));
    ck_assert_int_eq(r.rc, BO_HTTP_DONE);
    ck_assert_uint_eq(r.used, LEN(z));
}
END_TEST

/*
 * What a request's Idempotency-Key fields say, read by bo_idem's one reader
 * (bo_idem_value_kind): an empty value is no key, as in a libcurl header
 * list (bo_idem_header_kind agrees line by line); a key wins over an empty
 * field wherever it stands; a value too long to keep is a key.
 */
START_TEST(test_request_idempotency_key)
{
    static const struct {
        const char *fields;
        bo_idem_line idem;
    } rows[] = {
        {"", BO_IDEM_LINE_OTHER},
        {"Idempotency-Key: 8e03978e-40d5-43e8-bc93-6894a57f9324\r\n", BO_IDEM_LINE_KEY},
        {"idempotency-key:abc\r\n", BO_IDEM_LINE_KEY},
        {"Idempotency-Key: \"\"\r\n", BO_IDEM_LINE_KEY}, /* an empty sf-string is a value */
        {"Idempotency-Key:\r\n", BO_IDEM_LINE_EMPTY},
        {"Idempotency-Key:   \r\n", BO_IDEM_LINE_EMPTY},
        {"Idempotency-Key:\t\r\n", BO_IDEM_LINE_EMPTY},
        {"Idempotency-Key:\r\nIdempotency-Key: k\r\n", BO_IDEM_LINE_KEY},
        {"Idempotency-Key: k\r\nIdempotency-Key:\r\n", BO_IDEM_LINE_KEY},
        {"X-Idempotency-Key: k\r\n", BO_IDEM_LINE_OTHER},
    };
    char s[1024];
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        int n = snprintf(s, sizeof s, "POST /o HTTP/1.1\r\nHost: h\r\n%sContent-Length: 0\r\n\r\n",
                         rows[i].fields);
        reading r = request_split(s, (size_t)n);
        ck_assert_int_eq(r.rc, BO_HTTP_DONE);
        ck_assert_msg(r.m.idem == rows[i].idem, "%s: %d, not %d", rows[i].fields, r.m.idem,
                      rows[i].idem);
        const char *nl = strstr(rows[i].fields, "\r\n");
        if (nl != NULL && strstr(nl + 2, "\r\n") == NULL) /* one line: the list's reader agrees */
            ck_assert_int_eq(bo_idem_header_kind(rows[i].fields, strlen(rows[i].fields)),
                             rows[i].idem);
    }
    /* a value past what the reader keeps is a key */
    char big[BO_HTTP_VALUE_MAX + 100];
    memset(big, 'k', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    int n = snprintf(s, sizeof s, "POST /o HTTP/1.1\r\nHost: h\r\nIdempotency-Key: %s\r\n\r\n",
                     big);
    reading r = request(s, (size_t)n);
    ck_assert_int_eq(r.rc, BO_HTTP_DONE);
    ck_assert_int_eq(r.m.idem, BO_IDEM_LINE_KEY);
}
END_TEST

START_TEST(test_request_chunked)
{
    static const char s[] = "POST /up HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                            "5;name=value;q=\"a b\"\r\nhello\r\n"
                            "1A\r\nabcdefghijklmnopqrstuvwxyz\r\n"
                            "000\r\n"
                            "Checksum: abc\r\nX-Trailer:  two words \r\n\r\n";
    reading r = request_split(s, LEN(s));
    ck_assert_int_eq(r.rc, BO_HTTP_DONE);
    ck_assert_uint_eq(r.used, LEN(s));
    ck_assert_int_eq(r.m.framing, BO_HTTP_FRAMING_CHUNKED);
    ck_assert(r.m.chunked);
    ck_assert_uint_eq(r.m.body.data, 5 + 26);
    ck_assert_uint_eq(r.m.body.chunks, 3);
    ck_assert_uint_eq(r.m.body.wire, LEN(s) - r.m.head_len);
    ck_assert_int_eq(r.m.keep, BO_HTTP_KEEP_OK);
    /* the last chunk without a trailer, bare LFs, a size padded with BWS */
    static const char t[] = "POST / HTTP/1.1\r\ntransfer-encoding: gzip, CHUNKED\r\n\r\n"
                            "3 ;x\nabc\n0\n\n";
    r = request_split(t, LEN(t));
    ck_assert_int_eq(r.rc, BO_HTTP_DONE);
    ck_assert_uint_eq(r.used, LEN(t));
    ck_assert_uint_eq(r.m.body.data, 3);
}
END_TEST

START_TEST(test_request_connection)
{
    reading r;
    static const char a[] = "GET / HTTP/1.1\r\nConnection: close\r\n\r\n";
    r = request(a, LEN(a));
    ck_assert(r.m.conn_close && !r.m.keep_alive);
    ck_assert_int_eq(r.m.keep, BO_HTTP_KEEP_OK);
    static const char b[] = "GET / HTTP/1.0\r\n\r\n";
    r = request(b, LEN(b));
    ck_assert_uint_eq(r.m.minor, 0);
    ck_assert(!r.m.keep_alive);
    static const char c[] = "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n";
    r = request(c, LEN(c));
    ck_assert(r.m.keep_alive);
    static const char d[] = "GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n";
    r = request(d, LEN(d));
    ck_assert(!r.m.keep_alive);
    static const char e[] = "GET / HTTP/1.1\r\nConnection: TE, foo\r\nConnection: close\r\n\r\n";
    r = request(e, LEN(e));
    ck_assert(!r.m.keep_alive);
}
END_TEST

/* The request is HTTP/1.x, but not one to keep and send again. */
static void not_kept(const char *s, size_t len, bo_http_keep why)
{
    reading r = request_split(s, len);
    ck_assert_msg(r.rc == BO_HTTP_DONE, "%.*s: rc %d err %s", (int)len, s, r.rc,
                  bo_http_err_name(r.m.err));
    ck_assert_msg(r.m.keep == why, "%.*s: keep %s, expected %s", (int)len, s,
                  bo_http_keep_name(r.m.keep), bo_http_keep_name(why));
}

START_TEST(test_request_not_kept)
{
    static const char connect[] = "CONNECT example.com:443 HTTP/1.1\r\n"
                                  "Host: example.com:443\r\n\r\n";
    not_kept(connect, LEN(connect), BO_HTTP_KEEP_CONNECT);
    static const char ws[] = "GET /chat HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\n"
                             "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\r\n";
    not_kept(ws, LEN(ws), BO_HTTP_KEEP_UPGRADE);
    reading r = request(ws, LEN(ws));
    ck_assert(r.m.upgrade && r.m.upgrade_websocket && r.m.conn_upgrade && !r.m.upgrade_h2c);
    static const char h2c[] = "GET / HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, HTTP2-Settings\r\n"
                              "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n";
    not_kept(h2c, LEN(h2c), BO_HTTP_KEEP_UPGRADE);
    r = request(h2c, LEN(h2c));
    ck_assert(r.m.upgrade_h2c && !r.m.upgrade_websocket);
    static const char up_only[] = "GET / HTTP/1.1\r\nConnection: upgrade\r\n\r\n";
    not_kept(up_only, LEN(up_only), BO_HTTP_KEEP_UPGRADE);
    static const char expect[] = "PUT /f HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n"
                                 "Expect: 100-Continue\r\n\r\nhello";
    not_kept(expect, LEN(expect), BO_HTTP_KEEP_EXPECT);
    r = request(expect, LEN(expect));
    ck_assert(r.m.expect && r.m.expect_continue);
    static const char expect2[] = "GET / HTTP/1.1\r\nExpect: something-else\r\n\r\n";
    not_kept(expect2, LEN(expect2), BO_HTTP_KEEP_EXPECT);
    r = request(expect2, LEN(expect2));
    ck_assert(r.m.expect && !r.m.expect_continue);
}
END_TEST

START_TEST(test_request_body_cap)
{
    static char buf[200000];
    int h = snprintf(buf, sizeof buf, "POST / HTTP/1.1\r\nContent-Length: %d\r\n\r\n",
                     BO_HTTP_BODY_CAP);
    memset(buf + h, 'x', BO_HTTP_BODY_CAP);
    reading r = request(buf, (size_t)h + BO_HTTP_BODY_CAP);
    ck_assert_int_eq(r.rc, BO_HTTP_DONE);
    ck_assert_int_eq(r.m.keep, BO_HTTP_KEEP_OK);
    h = snprintf(buf, sizeof buf, "POST / HTTP/1.1\r\nContent-Length: %d\r\n\r\n",
                 BO_HTTP_BODY_CAP + 1);
    memset(buf + h, 'x', BO_HTTP_BODY_CAP + 1);
    r = request(buf, (size_t)h + BO_HTTP_BODY_CAP + 1);
    ck_assert_int_eq(r.rc, BO_HTTP_DONE); /* read to its end all the same */
    ck_assert_uint_eq(r.used, (size_t)h + BO_HTTP_BODY_CAP + 1);
    ck_assert_int_eq(r.m.keep, BO_HTTP_KEEP_BODY_CAP);
    /* known at the end of the head */
    r = request(buf, (size_t)h);
    ck_assert_int_eq(r.rc, BO_HTTP_NEED_MORE);
    ck_assert_int_eq(r.m.keep, BO_HTTP_KEEP_BODY_CAP);
    /* chunked: kept until its bytes pass the cap, read to the end */
    h = snprintf(buf, sizeof buf, "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
    size_t n = (size_t)h;
    for (int i = 0; i < 20; i++) {
        n += (size_t)snprintf(buf + n, sizeof buf - n, "1000\r\n");
        memset(buf + n, 'y', 0x1000);
        n += 0x1000;
        n += (size_t)snprintf(buf + n, sizeof buf - n, "\r\n");
    }
    n += (size_t)snprintf(buf + n, sizeof buf - n, "0\r\n\r\n");
    bo_http_msg m;
    size_t u, at = 0, step = 4096;
    bo_http_msg_request(&m);
    bo_http_rc rc = BO_HTTP_NEED_MORE;
    bool kept_past_cap = false;
    while (at < n) {
        size_t k = n - at < step ? n - at : step;
        rc = bo_http_feed(&m, buf + at, k, &u);
        at += u;
        if (m.body.wire > BO_HTTP_BODY_CAP && m.keep == BO_HTTP_KEEP_OK)
            kept_past_cap = true;
        if (m.body.wire <= BO_HTTP_BODY_CAP)
            ck_assert_int_eq(m.keep, BO_HTTP_KEEP_OK);
    }
    ck_assert(!kept_past_cap);
    ck_assert_int_eq(rc, BO_HTTP_DONE);
    ck_assert_uint_eq(at, n);
    ck_assert_int_eq(m.keep, BO_HTTP_KEEP_BODY_CAP);
    ck_assert_uint_eq(m.body.data, 20 * 0x1000);
}
END_TEST

START_TEST(test_request_pipelined)
{
    static const char two[] = "GET /a HTTP/1.1\r\nHost: h\r\n\r\n"
                              "GET /b HTTP/1.1\r\nHost: h\r\n\r\n";
    size_t first = LEN(two) / 2;
    reading r = request_split(two, LEN(two));
    ck_assert_int_eq(r.rc, BO_HTTP_DONE);
    ck_assert_uint_eq(r.used, first);
    ck_assert_int_eq(r.m.keep, BO_HTTP_KEEP_PIPELINED);
    ck_assert_uint_eq(r.m.target_hash, fnv("/a"));
    /* the first alone is kept; a write after its end is pipelined */
    r = request(two, first);
    ck_assert_int_eq(r.m.keep, BO_HTTP_KEEP_OK);
    size_t u = 1;
    ck_assert_int_eq(bo_http_feed(&r.m, two + first, LEN(two) - first, &u), BO_HTTP_DONE);
    ck_assert_uint_eq(u, 0);
    ck_assert_int_eq(r.m.keep, BO_HTTP_KEEP_PIPELINED);
    /* an empty write after the end is nothing */
    r = request(two, first);
    ck_assert_int_eq(bo_http_feed(&r.m, two, 0, &u), BO_HTTP_DONE);
    ck_assert_int_eq(r.m.keep, BO_HTTP_KEEP_OK);
    /* a POST body followed by the next request */
    static const char post[] = "POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\n"
                               "okGET / HTTP/1.1\r\n\r\n";
    r = request_split(post, LEN(post));
    ck_assert_uint_eq(r.used, LEN(post) - LEN("GET / HTTP/1.1\r\n\r\n"));
    ck_assert_int_eq(r.m.keep, BO_HTTP_KEEP_PIPELINED);
}
END_TEST

/* Not an HTTP/1.x request (or not one safe to read): err says why. */
static void not_http(const char *s, size_t len, bo_http_err why)
{
    reading r = request_split(s, len);
    ck_assert_msg(r.rc == BO_HTTP_NOT_HTTP, "\"%.*s\": rc %d", (int)len, s, r.rc);
    ck_assert_msg(r.m.err == why, "\"%.*s\": err %s, expected %s", (int)len, s,
                  bo_http_err_name(r.m.err), bo_http_err_name(why));
}

START_TEST(test_request_not_http)
{
    static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    not_http(preface, LEN(preface), BO_HTTP_ERR_H2_PREFACE);
    /* known from its 12th byte on */
    reading r = request(preface, 12);
    ck_assert_int_eq(r.rc, BO_HTTP_NOT_HTTP);
    ck_assert_int_eq(r.m.err, BO_HTTP_ERR_H2_PREFACE);
    r = request(preface, 11);
    ck_assert_int_eq(r.rc, BO_HTTP_NEED_MORE);
    /* a TLS ClientHello: the first byte says it */
    static const char hello[] = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03";
    r = request(hello, 1);
    ck_assert_int_eq(r.rc, BO_HTTP_NOT_HTTP);
    ck_assert_int_eq(r.m.err, BO_HTTP_ERR_METHOD);
    static const char ssh[] = "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n";
    not_http(ssh, LEN(ssh), BO_HTTP_ERR_TARGET);
    static const char redis[] = "*1\r\n$4\r\nPING\r\n";
    not_http(redis, LEN(redis), BO_HTTP_ERR_METHOD);
    static const char crlf_first[] = "\r\nGET / HTTP/1.1\r\n\r\n";
    not_http(crlf_first, LEN(crlf_first), BO_HTTP_ERR_METHOD);
    static const char h12[] = "GET / HTTP/1.2\r\n\r\n";
    not_http(h12, LEN(h12), BO_HTTP_ERR_VERSION);
    static const char h2[] = "GET / HTTP/2.0\r\n\r\n";
    not_http(h2, LEN(h2), BO_HTTP_ERR_VERSION);
    static const char lower_v[] = "GET / http/1.1\r\n\r\n";
    not_http(lower_v, LEN(lower_v), BO_HTTP_ERR_VERSION);
    static const char h09[] = "GET /\r\n";
    not_http(h09, LEN(h09), BO_HTTP_ERR_TARGET);
    static const char two_sp[] = "GET  / HTTP/1.1\r\n\r\n";
    not_http(two_sp, LEN(two_sp), BO_HTTP_ERR_TARGET);
    static const char trail[] = "GET / HTTP/1.1 \r\n\r\n";
    not_http(trail, LEN(trail), BO_HTTP_ERR_VERSION);
    static const char ctl[] = "GET /a\x01 HTTP/1.1\r\n\r\n";
    not_http(ctl, LEN(ctl), BO_HTTP_ERR_TARGET);
    static const char bare_cr[] = "GET / HTTP/1.1\rHost: h\r\n\r\n";
    not_http(bare_cr, LEN(bare_cr), BO_HTTP_ERR_LINE_END);
    static const char bare_cr2[] = "GET / HTTP/1.1\r\nHost: h\r\r\n\r\n";
    not_http(bare_cr2, LEN(bare_cr2), BO_HTTP_ERR_LINE_END);
    static const char fold[] = "GET / HTTP/1.1\r\nX-A: 1\r\n  2\r\n\r\n";
    not_http(fold, LEN(fold), BO_HTTP_ERR_OBS_FOLD);
    static const char ws_first[] = "GET / HTTP/1.1\r\n Host: h\r\n\r\n";
    not_http(ws_first, LEN(ws_first), BO_HTTP_ERR_OBS_FOLD);
    static const char sp_colon[] = "GET / HTTP/1.1\r\nHost : h\r\n\r\n";
    not_http(sp_colon, LEN(sp_colon), BO_HTTP_ERR_FIELD_NAME);
    static const char no_colon[] = "GET / HTTP/1.1\r\nHost\r\n\r\n";
    not_http(no_colon, LEN(no_colon), BO_HTTP_ERR_FIELD_NAME);
    static const char nul[] = "GET / HTTP/1.1\r\nX: a\0b\r\n\r\n";
    not_http(nul, LEN(nul), BO_HTTP_ERR_FIELD_VALUE);
    static const char hosts[] = "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n";
    not_http(hosts, LEN(hosts), BO_HTTP_ERR_HOST);
    static const char te_cl[] = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
                                "Content-Length: 3\r\n\r\n";
    not_http(te_cl, LEN(te_cl), BO_HTTP_ERR_TE_AND_LENGTH);
    static const char te_last[] = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n";
    not_http(te_last, LEN(te_last), BO_HTTP_ERR_TRANSFER_ENCODING);
    static const char te_twice[] = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
                                   "Transfer-Encoding: chunked\r\n\r\n";
    not_http(te_twice, LEN(te_twice), BO_HTTP_ERR_TRANSFER_ENCODING);
    static const char te_10[] = "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n";
    not_http(te_10, LEN(te_10), BO_HTTP_ERR_TRANSFER_ENCODING);
    static const char te_empty[] = "POST / HTTP/1.1\r\nTransfer-Encoding: \r\n\r\n";
    not_http(te_empty, LEN(te_empty), BO_HTTP_ERR_TRANSFER_ENCODING);
    static const char cl_abc[] = "POST / HTTP/1.1\r\nContent-Length: abc\r\n\r\n";
    not_http(cl_abc, LEN(cl_abc), BO_HTTP_ERR_CONTENT_LENGTH);
    static const char cl_two[] = "POST / HTTP/1.1\r\nContent-Length: 5\r\n"
                                 "Content-Length: 6\r\n\r\n";
    not_http(cl_two, LEN(cl_two), BO_HTTP_ERR_CONTENT_LENGTH);
    static const char cl_list[] = "POST / HTTP/1.1\r\nContent-Length: 5, 6\r\n\r\n";
    not_http(cl_list, LEN(cl_list), BO_HTTP_ERR_CONTENT_LENGTH);
    static const char cl_sign[] = "POST / HTTP/1.1\r\nContent-Length: +5\r\n\r\n";
    not_http(cl_sign, LEN(cl_sign), BO_HTTP_ERR_CONTENT_LENGTH);
    static const char cl_big[] = "POST / HTTP/1.1\r\nContent-Length: 1234567890123456789\r\n\r\n";
    not_http(cl_big, LEN(cl_big), BO_HTTP_ERR_CONTENT_LENGTH);
    static const char cl_empty[] = "POST / HTTP/1.1\r\nContent-Length:\r\n\r\n";
    not_http(cl_empty, LEN(cl_empty), BO_HTTP_ERR_CONTENT_LENGTH);
    /* a chunked body that is not */
    static const char bad_chunk[] = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n";
    not_http(bad_chunk, LEN(bad_chunk), BO_HTTP_ERR_CHUNK_SIZE);
}
END_TEST

START_TEST(test_request_limits)
{
    static char buf[40000];
    /* a method of 31 bytes is one, 32 is not */
    memset(buf, 'M', 31);
    memcpy(buf + 31, " / HTTP/1.1\r\n\r\n", 15);
    reading r = request(buf, 46);
    ck_assert_int_eq(r.rc, BO_HTTP_DONE);
    ck_assert_int_eq(r.m.method, BO_HTTP_METHOD_OTHER);
    ck_assert_uint_eq(strlen(r.m.method_text), 31);
    memset(buf, 'M', 32);
    memcpy(buf + 32, " / HTTP/1.1\r\n\r\n", 15);
    r = request(buf, 47);
    ck_assert_int_eq(r.rc, BO_HTTP_NOT_HTTP);
    ck_assert_int_eq(r.m.err, BO_HTTP_ERR_METHOD);
    /* a line of BO_HTTP_LINE_MAX bytes (CRLF included) is read, one more is too long */
    size_t n = (size_t)snprintf(buf, sizeof buf, "GET /");
    size_t target = BO_HTTP_LINE_MAX - strlen("GET / HTTP/1.1\r\n");
    memset(buf + n, 'a', target);
    n += target;
    n += (size_t)snprintf(buf + n, sizeof buf - n, " HTTP/1.1\r\n\r\n");
    r = request(buf, n);
    ck_assert_int_eq(r.rc, BO_HTTP_DONE);
    ck_assert_uint_eq(r.m.target_len, target + 1);
    memmove(buf + 6, buf + 5, n - 5);
    r = request(buf, n + 1);
    ck_assert_int_eq(r.rc, BO_HTTP_TOO_LARGE);
    ck_assert_int_eq(r.m.err, BO_HTTP_ERR_LINE_TOO_LONG);
    /* the same for a field line whose value the reader keeps nowhere, and
     * for a response's reason phrase */
    n = (size_t)snprintf(buf, sizeof buf, "GET / HTTP/1.1\r\nX-Pad: ");
    size_t pad = BO_HTTP_LINE_MAX - strlen("X-Pad: \r\n");
    memset(buf + n, 'p', pad);
    n += pad;
    n += (size_t)snprintf(buf + n, sizeof buf - n, "\r\n\r\n");
    r = request(buf, n);
    ck_assert_int_eq(r.rc, BO_HTTP_DONE);
    memmove(buf + 24, buf + 23, n - 23);
    r = request(buf, n + 1);
    ck_assert_int_eq(r.rc, BO_HTTP_TOO_LARGE);
    ck_assert_int_eq(r.m.err, BO_HTTP_ERR_LINE_TOO_LONG);
    /* told as soon as the line passes the limit, before its end has come */
    n = (size_t)snprintf(buf, sizeof buf, "GET / HTTP/1.1\r\nX-Pad: ");
    memset(buf + n, 'p', BO_HTTP_LINE_MAX);
    r = request(buf, n + BO_HTTP_LINE_MAX);
    ck_assert_int_eq(r.rc, BO_HTTP_TOO_LARGE);
    ck_assert_int_eq(r.m.err, BO_HTTP_ERR_LINE_TOO_LONG);
    n = (size_t)snprintf(buf, sizeof buf, "HTTP/1.1 200 ");
    pad = BO_HTTP_LINE_MAX - strlen("HTTP/1.1 200 \r\n");
    memset(buf + n, 'o', pad);
    n += pad;
    n += (size_t)snprintf(buf + n, sizeof buf - n, "\r\nContent-Length: 0\r\n\r\n");
    r = read_whole(buf, n, true, BO_HTTP_METHOD_GET);
    ck_assert_int_eq(r.rc, BO_HTTP_DONE);
    ck_assert_int_eq(r.m.status, 200);
    memmove(buf + 14, buf + 13, n - 13);
    r = read_whole(buf, n + 1, true, BO_HTTP_METHOD_GET);
    ck_assert_int_eq(r.rc, BO_HTTP_TOO_LARGE);
    ck_assert_int_eq(r.m.err, BO_HTTP_ERR_LINE_TOO_LONG);
    /* a head of BO_HTTP_HEAD_MAX bytes is read, one more is too large */
    n = (size_t)snprintf(buf, sizeof buf, "GET / HTTP/1.1\r\n");
    while (n + 1000 < BO_HTTP_HEAD_MAX) {
        n += (size_t)snprintf(buf + n, sizeof buf - n, "X-Pad: ");
        memset(buf + n, 'p', 900);
        n += 900;
        n += (size_t)snprintf(buf + n, sizeof buf - n, "\r\n");
    }
    pad = BO_HTTP_HEAD_MAX - n - strlen("X: \r\n\r\n");
    n += (size_t)snprintf(buf + n, sizeof buf - n, "X: ");
    memset(buf + n, 'q', pad);
    n += pad;
    n += (size_t)snprintf(buf + n, sizeof buf - n, "\r\n\r\n");
    ck_assert_uint_eq(n, BO_HTTP_HEAD_MAX);
    r = request(buf, n);
    ck_assert_int_eq(r.rc, BO_HTTP_DONE);
    ck_assert_uint_eq(r.m.head_len, BO_HTTP_HEAD_MAX);
    memmove(buf + 20, buf + 19, n - 19);
    r = request(buf, n + 1);
    ck_assert_int_eq(r.rc, BO_HTTP_TOO_LARGE);
    ck_assert_int_eq(r.m.err, BO_HTTP_ERR_HEAD_TOO_LARGE);
    /* Host: 255 bytes kept, 256 noted as too long (the request is still read) */
    n = (size_t)snprintf(buf, sizeof buf, "GET / HTTP/1.1\r\nHost: ");
    memset(buf + n, 'h', 255);
    n += 255;
    n += (size_t)snprintf(buf + n, sizeof buf - n, "\r\n\r\n");
    r = request(buf, n);
    ck_assert_int_eq(r.rc, BO_HTTP_DONE);
    ck_assert_uint_eq(r.m.host_len, 255);
    ck_assert(!r.m.host_long);
    memmove(buf + 23, buf + 22, n - 22);
    r = request(buf, n + 1);
    ck_assert_int_eq(r.rc, BO_HTTP_DONE);
    ck_assert(r.m.has_host && r.m.host_long);
    ck_assert_uint_eq(r.m.host_len, 0);
    ck_assert_str_eq(r.m.host, "");
    /* a Content-Length value longer than the reader judges is refused */
    n = (size_t)snprintf(buf, sizeof buf, "POST / HTTP/1.1\r\nContent-Length: 5");
    for (int i = 0; i < 100; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, ", 5");
    n += (size_t)snprintf(buf + n, sizeof buf - n, "\r\n\r\nhello");
    r = request(buf, n);
    ck_assert_int_eq(r.rc, BO_HTTP_NOT_HTTP);
    ck_assert_int_eq(r.m.err, BO_HTTP_ERR_CONTENT_LENGTH);
    /* a long Connection list is taken for close */
    n = (size_t)snprintf(buf, sizeof buf, "GET / HTTP/1.1\r\nConnection: keep-alive");
    for (int i = 0; i < 100; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, ", x");
    n += (size_t)snprintf(buf + n, sizeof buf - n, "\r\n\r\n");
    r = request(buf, n);
    ck_assert_int_eq(r.rc, BO_HTTP_DONE);
    ck_assert(!r.m.keep_alive);
}
END_TEST

/* ---- responses ------------------------------------------------------------ */

typedef struct lines {
    char text[4096];
    size_t n;
    unsigned count;
} lines;

static void collect(void *ctx, const char *line, size_t len)
{
    lines *l = ctx;
    ck_assert_uint_lt(l->n + len, sizeof l->text);
    memcpy(l->text + l->n, line, len);
    l->n += len;
    l->text[l->n] = '\0';
    l->count++;
}

/*
 * bo_http_parse_response on every prefix of s: NEED_MORE (the callback
 * never called) until the head is whole, then the answer for all of s;
 * a failure, once there, stays for every longer prefix.
 */
static bo_http_rc parse_prefixes(const char *s, size_t len, bo_http_method rm, bo_http_msg *m,
                                 lines *l)
{
    bo_http_rc last = BO_HTTP_NEED_MORE;
    for (size_t k = 0; k <= len; k++) {
        memset(l, 0, sizeof *l);
        bo_http_rc rc = bo_http_parse_response(s, k, rm, m, collect, l);
        if (last == BO_HTTP_NEED_MORE && rc == BO_HTTP_NEED_MORE)
            ck_assert_uint_eq(l->count, 0);
        if (last != BO_HTTP_NEED_MORE)
            ck_assert_int_eq(rc, last);
        if (rc == BO_HTTP_DONE && last == BO_HTTP_NEED_MORE)
            ck_assert_uint_eq(m->head_len, k); /* done exactly where the head ends */
        last = rc;
    }
    return last;
}

START_TEST(test_response_200)
{
    static const char s[] = "HTTP/1.1 200 OK\r\nServer: x\r\nContent-Length: 5\r\n"
                            "Content-Type: text/plain\r\n\r\nhello";
    bo_http_msg m;
    lines l;
    ck_assert_int_eq(parse_prefixes(s, LEN(s), BO_HTTP_METHOD_GET, &m, &l), BO_HTTP_DONE);
    ck_assert_int_eq(m.status, 200);
    ck_assert_uint_eq(m.minor, 1);
    ck_assert_uint_eq(m.head_len, LEN(s) - 5);
    ck_assert_int_eq(m.framing, BO_HTTP_FRAMING_LENGTH);
    ck_assert_uint_eq(m.content_length, 5);
    ck_assert(m.keep_alive);
    ck_assert_uint_eq(l.count, 3);
    ck_assert_str_eq(l.text, "Server: x\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n");
    /* the body after the head, through the same message */
    size_t u;
    ck_assert_int_eq(bo_http_feed(&m, s + m.head_len, 3, &u), BO_HTTP_NEED_MORE);
    ck_assert_uint_eq(u, 3);
    ck_assert_int_eq(bo_http_feed(&m, s + m.head_len + 3, 2, &u), BO_HTTP_DONE);
    ck_assert(m.done);
    ck_assert_uint_eq(m.total, LEN(s));
    /* the same, fed whole and split anywhere */
    reading r = any_split(s, LEN(s), true, BO_HTTP_METHOD_GET);
    ck_assert_int_eq(r.rc, BO_HTTP_DONE);
    ck_assert_uint_eq(r.used, LEN(s));
    /* a status line without a reason phrase, LF line ends */
    static const char t[] = "HTTP/1.1 200\nContent-Length: 0\n\n";
    r = any_split(t, LEN(t), true, BO_HTTP_METHOD_GET);
    ck_assert_int_eq(r.rc, BO_HTTP_DONE);
    ck_assert_int_eq(r.m.status, 200);
    /* an empty reason phrase */
    static const char e[] = "HTTP/1.1 204 \r\n\r\n";
    r = any_split(e, LEN(e), true, BO_HTTP_METHOD_GET);
    ck_assert_int_eq(r.rc, BO_HTTP_DONE);
    ck_assert_int_eq(r.m.framing, BO_HTTP_FRAMING_NONE);
}
END_TEST

static void rl_line(void *ctx, const char *line, size_t len)
{
    bo_rl_header_line(ctx, line, len);
}

START_TEST(test_response_429_ratelimit)
{
    static const char s[] = "HTTP/1.1 429 Too Many Requests\r\n"
                            "Retry-After: 3\r\n"
                            "RateLimit-Limit: 20\r\n"
                            "RateLimit-Remaining: 0\r\n"
                            "RateLimit-Reset: 3\r\n"
                            "Content-Length: 9\r\n\r\n"
                            "rejected\n";
    bo_http_msg m;
    bo_rl_headers h;
    bo_rl_headers_reset(&h);
    ck_assert_int_eq(bo_http_parse_response(s, LEN(s), BO_HTTP_METHOD_GET, &m, rl_line, &h),
                     BO_HTTP_DONE);
    ck_assert_int_eq(m.status, 429);
    ck_assert_int_eq(bo_http_retry_after_s(&m, 1800000000), 3);
    bo_rl_quota q;
    ck_assert(bo_rl_headers_quota(&h, 1800000000LL * 1000000000LL, &q));
    ck_assert_int_eq(q.limit, 20);
    ck_assert_int_eq(q.remaining, 0);
    ck_assert_int_eq(q.reset_ns, 3 * 1000000000LL);
    /* the status is known before the head is whole */
    ck_assert_int_eq(bo_http_parse_response(s, 12, BO_HTTP_METHOD_GET, &m, NULL, NULL),
                     BO_HTTP_NEED_MORE);
    ck_assert_int_eq(m.status, 429);
    ck_assert_int_eq(bo_http_parse_response(s, 11, BO_HTTP_METHOD_GET, &m, NULL, NULL),
                     BO_HTTP_NEED_MORE);
    ck_assert_int_eq(m.status, 0);
    /* thrown away whole: the body after the head */
    size_t u;
    ck_assert_int_eq(bo_http_feed(&m, s, 0, &u), BO_HTTP_NEED_MORE); /* head not done */
    ck_assert_int_eq(bo_http_parse_response(s, LEN(s), BO_HTTP_METHOD_GET, &m, NULL, NULL),
                     BO_HTTP_DONE);
    ck_assert_int_eq(bo_http_feed(&m, s + m.head_len, LEN(s) - m.head_len, &u), BO_HTTP_DONE);
    ck_assert_uint_eq(u, 9);
    any_split(s, LEN(s), true, BO_HTTP_METHOD_GET);
}
END_TEST

START_TEST(test_response_interim)
{
    static const char s[] = "HTTP/1.1 100 Continue\r\n\r\n"
                            "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
                            "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 2\r\n"
                            "Connection: close\r\nContent-Length: 4\r\n\r\nbusy";
    bo_http_msg m;
    lines l;
    ck_assert_int_eq(parse_prefixes(s, LEN(s), BO_HTTP_METHOD_POST, &m, &l), BO_HTTP_DONE);
    ck_assert_int_eq(m.status, 503);
    ck_assert_uint_eq(m.interim, 2);
    ck_assert_uint_eq(m.head_len, LEN(s) - 4);
    ck_assert_uint_eq(l.count, 3); /* only the final head's lines */
    ck_assert_str_eq(l.text, "Retry-After: 2\r\nConnection: close\r\nContent-Length: 4\r\n");
    ck_assert(!m.keep_alive && m.conn_close);
    /* while the interim head is read, its status shows */
    ck_assert_int_eq(bo_http_parse_response(s, 20, BO_HTTP_METHOD_POST, &m, NULL, NULL),
                     BO_HTTP_NEED_MORE);
    ck_assert_int_eq(m.status, 100);
    ck_assert_int_eq(bo_http_parse_response(s, 26, BO_HTTP_METHOD_POST, &m, NULL, NULL),
                     BO_HTTP_NEED_MORE);
    ck_assert_int_eq(m.status, 0);
    ck_assert_uint_eq(m.interim, 1);
    reading r = any_split(s, LEN(s), true, BO_HTTP_METHOD_POST);
    ck_assert_int_eq(r.rc, BO_HTTP_DONE);
    ck_assert_uint_eq(r.used, LEN(s));
}
END_TEST

/* The framing of a response head s to a request of method rm. */
static bo_http_msg framing_of(const char *s, size_t len, bo_http_method rm, bo_http_rc want)
{
    bo_http_msg m;
    lines l;
    bo_http_rc rc = parse_prefixes(s, len, rm, &m, &l);
    ck_assert_msg(rc == want, "%s: rc %d, expected %d (err %s)", s, rc, want,
                  bo_http_err_name(m.err));
    any_split(s, len, true, rm);
    return m;
}

START_TEST(test_response_framing)
{
    bo_http_msg m;
    /* no body: HEAD, 204, 304, whatever the fields say */
    static const char head[] = "HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n";
    m = framing_of(head, LEN(head), BO_HTTP_METHOD_HEAD, BO_HTTP_DONE);
    ck_assert_int_eq(m.framing, BO_HTTP_FRAMING_NONE);
    ck_assert(m.keep_alive);
    reading r = read_whole(head, LEN(head), true, BO_HTTP_METHOD_HEAD);
    ck_assert_int_eq(r.rc, BO_HTTP_DONE);
    ck_assert_uint_eq(r.used, LEN(head));
    static const char nc[] = "HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n";
    m = framing_of(nc, LEN(nc), BO_HTTP_METHOD_DELETE, BO_HTTP_DONE);
    ck_assert_int_eq(m.framing, BO_HTTP_FRAMING_NONE);
    static const char nm[] = "HTTP/1.1 304 Not Modified\r\nContent-Length: abc\r\n\r\n";
    m = framing_of(nm, LEN(nm), BO_HTTP_METHOD_GET, BO_HTTP_DONE);
    ck_assert_int_eq(m.framing, BO_HTTP_FRAMING_NONE);
    /* tunnels: 101, a 2xx to CONNECT (done at the head's end) */
    static const char sw[] = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                             "Connection: Upgrade\r\n\r\n\x81\x05hello";
    m = framing_of(sw, LEN(sw), BO_HTTP_METHOD_GET, BO_HTTP_DONE);
    ck_assert_int_eq(m.framing, BO_HTTP_FRAMING_TUNNEL);
    ck_assert_int_eq(m.status, 101);
    ck_assert_uint_eq(m.interim, 0);
    ck_assert(!m.keep_alive);
    r = read_whole(sw, LEN(sw), true, BO_HTTP_METHOD_GET);
    ck_assert_int_eq(r.rc, BO_HTTP_DONE);
    ck_assert_uint_eq(r.used, LEN(sw) - 7);
    static const char co[] = "HTTP/1.1 200 Connection established\r\n\r\n";
    m = framing_of(co, LEN(co), BO_HTTP_METHOD_CONNECT, BO_HTTP_DONE);
    ck_assert_int_eq(m.framing, BO_HTTP_FRAMING_TUNNEL);
    m = framing_of(co, LEN(co), BO_HTTP_METHOD_GET, BO_HTTP_DONE);
    ck_assert_int_eq(m.framing, BO_HTTP_FRAMING_CLOSE);
    static const char co407[] = "HTTP/1.1 407 Proxy Auth\r\nContent-Length: 0\r\n\r\n";
    m = framing_of(co407, LEN(co407), BO_HTTP_METHOD_CONNECT, BO_HTTP_DONE);
    ck_assert_int_eq(m.framing, BO_HTTP_FRAMING_LENGTH);
    /* chunked, last of the codings; another last coding: to the close */
    static const char ch[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n"
                             "Transfer-Encoding: chunked\r\n\r\n";
    m = framing_of(ch, LEN(ch), BO_HTTP_METHOD_GET, BO_HTTP_DONE);
    ck_assert_int_eq(m.framing, BO_HTTP_FRAMING_CHUNKED);
    ck_assert(m.keep_alive);
    static const char gz[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n";
    m = framing_of(gz, LEN(gz), BO_HTTP_METHOD_GET, BO_HTTP_DONE);
    ck_assert_int_eq(m.framing, BO_HTTP_FRAMING_CLOSE);
    ck_assert(!m.keep_alive);
    /* neither: to the close */
    static const char cl[] = "HTTP/1.1 200 OK\r\nServer: x\r\n\r\n";
    m = framing_of(cl, LEN(cl), BO_HTTP_METHOD_GET, BO_HTTP_DONE);
    ck_assert_int_eq(m.framing, BO_HTTP_FRAMING_CLOSE);
    ck_assert(!m.keep_alive);
    /* HTTP/1.0: closes unless keep-alive */
    static const char h10[] = "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n";
    m = framing_of(h10, LEN(h10), BO_HTTP_METHOD_GET, BO_HTTP_DONE);
    ck_assert_uint_eq(m.minor, 0);
    ck_assert(!m.keep_alive);
    static const char h10k[] = "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n"
                               "Connection: keep-alive\r\n\r\n";
    m = framing_of(h10k, LEN(h10k), BO_HTTP_METHOD_GET, BO_HTTP_DONE);
    ck_assert(m.keep_alive);
    /* unsafe framing: left alone */
    static const char te10[] = "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    m = framing_of(te10, LEN(te10), BO_HTTP_METHOD_GET, BO_HTTP_NOT_HTTP);
    ck_assert_int_eq(m.err, BO_HTTP_ERR_TRANSFER_ENCODING);
    static const char tecl[] = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n"
                               "Transfer-Encoding: chunked\r\n\r\n";
    m = framing_of(tecl, LEN(tecl), BO_HTTP_METHOD_GET, BO_HTTP_NOT_HTTP);
    ck_assert_int_eq(m.err, BO_HTTP_ERR_TE_AND_LENGTH);
    static const char cl2[] = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\n";
    m = framing_of(cl2, LEN(cl2), BO_HTTP_METHOD_GET, BO_HTTP_NOT_HTTP);
    ck_assert_int_eq(m.err, BO_HTTP_ERR_CONTENT_LENGTH);
    static const char tw[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n";
    m = framing_of(tw, LEN(tw), BO_HTTP_METHOD_GET, BO_HTTP_NOT_HTTP);
    ck_assert_int_eq(m.err, BO_HTTP_ERR_TRANSFER_ENCODING);
}
END_TEST

static void bad_response(const char *s, size_t len, bo_http_err why)
{
    bo_http_msg m;
    lines l;
    bo_http_rc rc = parse_prefixes(s, len, BO_HTTP_METHOD_GET, &m, &l);
    ck_assert_msg(rc == BO_HTTP_NOT_HTTP, "\"%.*s\": rc %d", (int)len, s, rc);
    ck_assert_msg(m.err == why, "\"%.*s\": err %s, expected %s", (int)len, s,
                  bo_http_err_name(m.err), bo_http_err_name(why));
    ck_assert_uint_eq(l.count, 0);
    any_split(s, len, true, BO_HTTP_METHOD_GET);
}

START_TEST(test_response_not_http)
{
    static const char h2[] = "HTTP/2 200\r\n\r\n";
    bad_response(h2, LEN(h2), BO_HTTP_ERR_VERSION);
    static const char h09[] = "<html>hello</html>";
    bad_response(h09, LEN(h09), BO_HTTP_ERR_VERSION);
    static const char nosp[] = "HTTP/1.1\r\n\r\n";
    bad_response(nosp, LEN(nosp), BO_HTTP_ERR_VERSION);
    static const char abc[] = "HTTP/1.1 abc\r\n\r\n";
    bad_response(abc, LEN(abc), BO_HTTP_ERR_STATUS);
    static const char two[] = "HTTP/1.1 99 Low\r\n\r\n";
    bad_response(two, LEN(two), BO_HTTP_ERR_STATUS);
    static const char low[] = "HTTP/1.1 099 Low\r\n\r\n";
    bad_response(low, LEN(low), BO_HTTP_ERR_STATUS);
    static const char four[] = "HTTP/1.1 2000 Big\r\n\r\n";
    bad_response(four, LEN(four), BO_HTTP_ERR_STATUS);
    static const char neg[] = "HTTP/1.1 -429 x\r\n\r\n";
    bad_response(neg, LEN(neg), BO_HTTP_ERR_STATUS);
    static const char bin[] = "HTTP/1.1 429 \x01\r\n\r\n";
    bad_response(bin, LEN(bin), BO_HTTP_ERR_LINE_END);
    static const char fold[] = "HTTP/1.1 429 x\r\nRetry-After:\r\n 5\r\n\r\n";
    bad_response(fold, LEN(fold), BO_HTTP_ERR_OBS_FOLD);
    static const char crlf[] = "HTTP/1.1 429 x\r\nA: b\r\r\n\r\n";
    bad_response(crlf, LEN(crlf), BO_HTTP_ERR_LINE_END);
    /* a status line alone is not a head: need more */
    static const char bare[] = "HTTP/1.1 429 Too Many Requests\r\n";
    bo_http_msg m;
    ck_assert_int_eq(bo_http_parse_response(bare, LEN(bare), BO_HTTP_METHOD_GET, &m, NULL, NULL),
                     BO_HTTP_NEED_MORE);
    ck_assert_int_eq(m.status, 429);
    ck_assert_int_eq(bo_http_eof(&m), BO_HTTP_NOT_HTTP);
    ck_assert_int_eq(m.err, BO_HTTP_ERR_TRUNCATED);
}
END_TEST

/* Retry-After's value as the reader takes it, at wall clock 1,000,000,000. */
static int64_t retry_after(const char *value)
{
    char buf[512];
    bo_http_msg m;
    int n = snprintf(buf, sizeof buf, "HTTP/1.1 429 x\r\nRetry-After: %s\r\n\r\n", value);
    ck_assert_int_eq(bo_http_parse_response(buf, (size_t)n, BO_HTTP_METHOD_GET, &m, NULL, NULL),
                     BO_HTTP_DONE);
    return bo_http_retry_after_s(&m, 1000000000);
}

START_TEST(test_retry_after)
{
    ck_assert_int_eq(retry_after("3"), 3);
    ck_assert_int_eq(retry_after("0"), 0);
    ck_assert_int_eq(retry_after("120  "), 120);
    /* libcurl's leading-digits reading (CURLINFO_RETRY_AFTER) */
    ck_assert_int_eq(retry_after("5; garbage"), 5);
    ck_assert_int_eq(retry_after("1.5"), 1);
    ck_assert_int_eq(retry_after("1e9"), 1);
    ck_assert_int_eq(retry_after("+7"), 7);
    ck_assert_int_eq(retry_after("9223372036854775807"), INT64_MAX);
    ck_assert_int_eq(retry_after("99999999999999999999"), -1);
    ck_assert_int_eq(retry_after("-1"), -1);
    ck_assert_int_eq(retry_after("abc"), -1);
    ck_assert_int_eq(retry_after(""), -1);
    /* the three date forms; 1,000,000,000 is Sun, 09 Sep 2001 01:46:40 GMT */
    ck_assert_int_eq(retry_after("Sun, 09 Sep 2001 01:47:10 GMT"), 30);
    ck_assert_int_eq(retry_after("Sunday, 09-Sep-01 01:47:10 GMT"), 30);
    ck_assert_int_eq(retry_after("Sun Sep  9 01:47:10 2001"), 30);
    ck_assert_int_eq(retry_after("Thu, 01 Jan 1970 00:00:00 GMT"), 0); /* past: now */
    ck_assert_int_eq(retry_after("Sun, 06 Nov 1994 08:49:37 GMT"), 0);
    ck_assert_int_eq(retry_after("Fri, 31 Dec 9999 23:59:59 GMT"), 253402300799LL - 1000000000);
    ck_assert_int_eq(retry_after("Sun, 09 Sep 2001 25:47:10 GMT"), -1);
    ck_assert_int_eq(retry_after("Sun, 09 Foo 2001 01:47:10 GMT"), -1);
    ck_assert_int_eq(retry_after("Sun, 06 Nov 1994"), -1);
    /* as the engine takes it: no hint for 0 and past dates, saturated */
    static const struct {
        const char *v;
        int64_t ns;
    } ns[] = {{"3", 3000000000LL},
              {"0", -1},
              {"Thu, 01 Jan 1970 00:00:00 GMT", -1},
              {"9223372036", INT64_MAX},
              {"9223372035", 9223372035000000000LL},
              {"abc", -1}};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        char buf[256];
        bo_http_msg m;
        int n = snprintf(buf, sizeof buf, "HTTP/1.1 429 x\r\nRetry-After: %s\r\n\r\n", ns[i].v);
        bo_http_parse_response(buf, (size_t)n, BO_HTTP_METHOD_GET, &m, NULL, NULL);
        ck_assert_int_eq(bo_http_retry_after_ns(&m, 1000000000), ns[i].ns);
    }
    /* none, and the first of two */
    static const char none[] = "HTTP/1.1 429 x\r\n\r\n";
    bo_http_msg m;
    bo_http_parse_response(none, LEN(none), BO_HTTP_METHOD_GET, &m, NULL, NULL);
    ck_assert_int_eq(bo_http_retry_after_s(&m, 0), -1);
    static const char twice[] = "HTTP/1.1 429 x\r\nRetry-After: 4\r\nRetry-After: 9\r\n\r\n";
    bo_http_parse_response(twice, LEN(twice), BO_HTTP_METHOD_GET, &m, NULL, NULL);
    ck_assert_int_eq(bo_http_retry_after_s(&m, 0), 4);
    /* an interim head's Retry-After is not the final one's */
    static const char inter[] = "HTTP/1.1 100 Continue\r\nRetry-After: 4\r\n\r\n"
                                "HTTP/1.1 429 x\r\n\r\n";
    bo_http_parse_response(inter, LEN(inter), BO_HTTP_METHOD_GET, &m, NULL, NULL);
    ck_assert_int_eq(bo_http_retry_after_s(&m, 0), -1);
}
END_TEST

/* ---- bodies ----------------------------------------------------------------- */

/* A chunked response in full, then the next response's first bytes. */
START_TEST(test_body_chunked)
{
    static const char s[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                            "4\r\nWiki\r\n"
                            "5;ext=\"quoted;value\"\r\npedia\r\n"
                            "e  ;  a ; b=c\r\n in\r\n\r\nchunks.\r\n"
                            "0; last\r\n"
                            "Expires: never\r\nX-Sum:\r\n\r\n"
                            "HTTP/1.1 200 OK\r\n";
    size_t next = LEN("HTTP/1.1 200 OK\r\n");
    reading r = any_split(s, LEN(s), true, BO_HTTP_METHOD_GET);
    ck_assert_int_eq(r.rc, BO_HTTP_DONE);
    ck_assert_uint_eq(r.used, LEN(s) - next);
    ck_assert_uint_eq(r.m.body.data, 4 + 5 + 14);
    ck_assert_uint_eq(r.m.body.chunks, 4);
    ck_assert(r.m.keep_alive);
}
END_TEST

/* A chunked body (after its head) that is refused. */
static void bad_chunked(const char *body, size_t len, bo_http_rc rc, bo_http_err why)
{
    char buf[40000];
    int h = snprintf(buf, sizeof buf, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    ck_assert_uint_lt((size_t)h + len, sizeof buf);
    memcpy(buf + h, body, len);
    reading r = any_split(buf, (size_t)h + len, true, BO_HTTP_METHOD_GET);
    ck_assert_msg(r.rc == rc, "\"%.*s\": rc %d err %s", (int)len, body, r.rc,
                  bo_http_err_name(r.m.err));
    ck_assert_msg(r.m.err == why, "\"%.*s\": err %s", (int)len, body, bo_http_err_name(r.m.err));
}

START_TEST(test_body_chunked_bad)
{
    static const char g[] = "g\r\n";
    bad_chunked(g, LEN(g), BO_HTTP_NOT_HTTP, BO_HTTP_ERR_CHUNK_SIZE);
    static const char empty[] = "\r\n";
    bad_chunked(empty, LEN(empty), BO_HTTP_NOT_HTTP, BO_HTTP_ERR_CHUNK_SIZE);
    static const char sign[] = "-1\r\n";
    bad_chunked(sign, LEN(sign), BO_HTTP_NOT_HTTP, BO_HTTP_ERR_CHUNK_SIZE);
    static const char hex0x[] = "0x5\r\nhello\r\n0\r\n\r\n";
    bad_chunked(hex0x, LEN(hex0x), BO_HTTP_NOT_HTTP, BO_HTTP_ERR_CHUNK_SIZE);
    static const char ws_junk[] = "5 x\r\n";
    bad_chunked(ws_junk, LEN(ws_junk), BO_HTTP_NOT_HTTP, BO_HTTP_ERR_CHUNK_SIZE);
    static const char big[] = "1000000000000000\r\n"; /* 2^60 */
    bad_chunked(big, LEN(big), BO_HTTP_NOT_HTTP, BO_HTTP_ERR_CHUNK_SIZE);
    static const char huge[] = "ffffffffffffffffffff\r\n";
    bad_chunked(huge, LEN(huge), BO_HTTP_NOT_HTTP, BO_HTTP_ERR_CHUNK_SIZE);
    static const char ext_ctl[] = "5;a\x01\r\n";
    bad_chunked(ext_ctl, LEN(ext_ctl), BO_HTTP_NOT_HTTP, BO_HTTP_ERR_CHUNK_EXT);
    static const char no_crlf[] = "3\r\nabcX\r\n";
    bad_chunked(no_crlf, LEN(no_crlf), BO_HTTP_NOT_HTTP, BO_HTTP_ERR_CHUNK_END);
    static const char cr_only[] = "3\r\nabc\rX";
    bad_chunked(cr_only, LEN(cr_only), BO_HTTP_NOT_HTTP, BO_HTTP_ERR_CHUNK_END);
    static const char size_cr[] = "3\rabc";
    bad_chunked(size_cr, LEN(size_cr), BO_HTTP_NOT_HTTP, BO_HTTP_ERR_LINE_END);
    static const char fold[] = "0\r\nA: b\r\n c\r\n\r\n";
    bad_chunked(fold, LEN(fold), BO_HTTP_NOT_HTTP, BO_HTTP_ERR_TRAILER);
    static const char noname[] = "0\r\n: b\r\n\r\n";
    bad_chunked(noname, LEN(noname), BO_HTTP_NOT_HTTP, BO_HTTP_ERR_TRAILER);
    static const char nocolon[] = "0\r\nAb\r\n\r\n";
    bad_chunked(nocolon, LEN(nocolon), BO_HTTP_NOT_HTTP, BO_HTTP_ERR_TRAILER);
    static const char end_cr[] = "0\r\n\rX";
    bad_chunked(end_cr, LEN(end_cr), BO_HTTP_NOT_HTTP, BO_HTTP_ERR_LINE_END);
    /* leading zeros are fine; a 16th significant digit is not */
    static const char zeros[] = "000000000000000000000000003\r\nabc\r\n0\r\n\r\n";
    bad_chunked(zeros, LEN(zeros), BO_HTTP_DONE, BO_HTTP_ERR_NONE);
    /* a chunk-size line over the line limit (a long extension) */
    char line[BO_HTTP_LINE_MAX + 16];
    size_t n = 0;
    line[n++] = '1';
    line[n++] = ';';
    while (n < BO_HTTP_LINE_MAX - 2)
        line[n++] = 'e';
    memcpy(line + n, "\r\nx\r\n0\r\n\r\n", 10);
    bad_chunked(line, n + 10, BO_HTTP_DONE, BO_HTTP_ERR_NONE);
    memmove(line + 3, line + 2, n + 8);
    line[2] = 'e';
    bad_chunked(line, n + 11, BO_HTTP_TOO_LARGE, BO_HTTP_ERR_LINE_TOO_LONG);
    /* a trailer section over the head limit */
    static char tr[BO_HTTP_HEAD_MAX + 200];
    n = (size_t)snprintf(tr, sizeof tr, "0\r\n");
    while (n < BO_HTTP_HEAD_MAX) {
        n += (size_t)snprintf(tr + n, sizeof tr - n, "T: ");
        memset(tr + n, 't', 95);
        n += 95;
        n += (size_t)snprintf(tr + n, sizeof tr - n, "\r\n");
    }
    n += (size_t)snprintf(tr + n, sizeof tr - n, "\r\n");
    bad_chunked(tr, n, BO_HTTP_TOO_LARGE, BO_HTTP_ERR_TRAILER_TOO_LARGE);
}
END_TEST

START_TEST(test_body_reader)
{
    bo_http_body b;
    size_t u;
    /* Content-Length: the rest of the buffer is the next message's */
    bo_http_body_init(&b, BO_HTTP_FRAMING_LENGTH, 5);
    ck_assert_int_eq(bo_http_body_feed(&b, "abc", 3, &u), BO_HTTP_NEED_MORE);
    ck_assert_uint_eq(u, 3);
    ck_assert_int_eq(bo_http_body_feed(&b, "deHTTP", 6, &u), BO_HTTP_DONE);
    ck_assert_uint_eq(u, 2);
    ck_assert_uint_eq(b.wire, 5);
    ck_assert_int_eq(bo_http_body_feed(&b, "x", 1, &u), BO_HTTP_DONE);
    ck_assert_uint_eq(u, 0);
    ck_assert_int_eq(bo_http_body_eof(&b), BO_HTTP_DONE);
    /* cut short */
    bo_http_body_init(&b, BO_HTTP_FRAMING_LENGTH, 5);
    bo_http_body_feed(&b, "abc", 3, &u);
    ck_assert_int_eq(bo_http_body_eof(&b), BO_HTTP_NOT_HTTP);
    ck_assert_int_eq(b.err, BO_HTTP_ERR_TRUNCATED);
    ck_assert_int_eq(bo_http_body_feed(&b, "de", 2, &u), BO_HTTP_NOT_HTTP);
    ck_assert_uint_eq(u, 0);
    /* a huge length is counted, not held */
    bo_http_body_init(&b, BO_HTTP_FRAMING_LENGTH, 1ULL << 40);
    static char big[1 << 16];
    for (int i = 0; i < 16; i++)
        ck_assert_int_eq(bo_http_body_feed(&b, big, sizeof big, &u), BO_HTTP_NEED_MORE);
    ck_assert_uint_eq(b.data, 16 * sizeof big);
    /* close-delimited: everything, until the close */
    bo_http_body_init(&b, BO_HTTP_FRAMING_CLOSE, 0);
    ck_assert_int_eq(bo_http_body_feed(&b, "anything\r\n0\r\n\r\n", 15, &u), BO_HTTP_NEED_MORE);
    ck_assert_uint_eq(u, 15);
    ck_assert_int_eq(bo_http_body_eof(&b), BO_HTTP_DONE);
    ck_assert_uint_eq(b.data, 15);
    /* none: done before a byte */
    bo_http_body_init(&b, BO_HTTP_FRAMING_NONE, 0);
    ck_assert_int_eq(bo_http_body_feed(&b, "HTTP", 4, &u), BO_HTTP_DONE);
    ck_assert_uint_eq(u, 0);
    /* a tunnel has no body to read */
    bo_http_body_init(&b, BO_HTTP_FRAMING_TUNNEL, 0);
    ck_assert_int_eq(bo_http_body_feed(&b, "x", 1, &u), BO_HTTP_NOT_HTTP);
    ck_assert_int_eq(b.err, BO_HTTP_ERR_TUNNEL);
    /* chunked cut short, and chunked complete */
    bo_http_body_init(&b, BO_HTTP_FRAMING_CHUNKED, 0);
    ck_assert_int_eq(bo_http_body_feed(&b, "3\r\nab", 5, &u), BO_HTTP_NEED_MORE);
    ck_assert_int_eq(bo_http_body_eof(&b), BO_HTTP_NOT_HTTP);
    bo_http_body_init(&b, BO_HTTP_FRAMING_CHUNKED, 0);
    ck_assert_int_eq(bo_http_body_feed(&b, "3\r\nabc\r\n0\r\n\r\nrest", 17, &u), BO_HTTP_DONE);
    ck_assert_uint_eq(u, 13);
    ck_assert_uint_eq(b.data, 3);
    /* close-delimited response, whole message */
    static const char s[] = "HTTP/1.0 200 OK\r\n\r\nall of it";
    reading r = any_split(s, LEN(s), true, BO_HTTP_METHOD_GET);
    ck_assert_int_eq(r.rc, BO_HTTP_NEED_MORE);
    ck_assert_uint_eq(r.used, LEN(s));
    ck_assert_int_eq(bo_http_eof(&r.m), BO_HTTP_DONE);
    ck_assert(r.m.done);
    ck_assert_uint_eq(r.m.body.data, 9);
}
END_TEST

START_TEST(test_names)
{
    for (int e = BO_HTTP_ERR_NONE; e <= BO_HTTP_ERR_TRUNCATED; e++)
        ck_assert_str_ne(bo_http_err_name((bo_http_err)e), "?");
    ck_assert_str_eq(bo_http_err_name((bo_http_err)999), "?");
    for (int k = BO_HTTP_KEEP_OK; k <= BO_HTTP_KEEP_PIPELINED; k++)
        ck_assert_str_ne(bo_http_keep_name((bo_http_keep)k), "?");
}
END_TEST

static Suite *http_suite(void)
{
    Suite *s = suite_create("http");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_request_get);
    tcase_add_test(tc, test_request_lf_only_and_methods);
    tcase_add_test(tc, test_request_content_length);
    tcase_add_test(tc, test_request_idempotency_key);
    tcase_add_test(tc, test_request_chunked);
    tcase_add_test(tc, test_request_connection);
    tcase_add_test(tc, test_request_not_kept);
    tcase_add_test(tc, test_request_body_cap);
    tcase_add_test(tc, test_request_pipelined);
    tcase_add_test(tc, test_request_not_http);
    tcase_add_test(tc, test_request_limits);
    tcase_add_test(tc, test_response_200);
    tcase_add_test(tc, test_response_429_ratelimit);
    tcase_add_test(tc, test_response_interim);
    tcase_add_test(tc, test_response_framing);
    tcase_add_test(tc, test_response_not_http);
    tcase_add_test(tc, test_retry_after);
    tcase_add_test(tc, test_body_chunked);
    tcase_add_test(tc, test_body_chunked_bad);
    tcase_add_test(tc, test_body_reader);
    tcase_add_test(tc, test_names);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(http_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
