/*
 * bo_http: the HTTP/1.x message reader (see the .h).
 *
 * The head is read one byte at a time by a state machine whose state is a
 * few counters, the field name being read and, for the fields that decide
 * framing, the value (at most BO_HTTP_VALUE_MAX bytes): so a head may come
 * in pieces of any size and nothing points into the caller's buffers.
 * Each field's value is judged when its line ends, the framing when the
 * head ends (RFC 9112 section 6.3).  Bodies are counted, not copied: a
 * Content-Length or a chunk's data is skipped in one step.
 */
#include "bo_http.h"
#include "bo_hash.h"
#include "bo_idem.h"
#include "bo_time.h"

#include <string.h>

/* ---- bytes ------------------------------------------------------------- */

enum {
    CH_TCHAR = 1,  /* token: ALPHA DIGIT !#$%&'*+-.^_`|~ */
    CH_VCHAR = 2,  /* 0x21-0x7e */
    CH_OBS = 4,    /* 0x80-0xff (obs-text) */
    CH_WS = 8,     /* SP, HT */
    CH_HEX = 16,
    CH_DIGIT = 32
};
#define CH_TV (CH_TCHAR | CH_VCHAR)
static const unsigned char ch_class[256] = {
    ['\t'] = CH_WS, [' '] = CH_WS,
    ['!'] = CH_TV, ['"'] = CH_VCHAR, ['#' ... '\''] = CH_TV, ['('] = CH_VCHAR,
    [')'] = CH_VCHAR, ['*' ... '+'] = CH_TV, [','] = CH_VCHAR, ['-' ... '.'] = CH_TV,
    ['/'] = CH_VCHAR, ['0' ... '9'] = CH_TV | CH_HEX | CH_DIGIT, [':' ... '@'] = CH_VCHAR,
    ['A' ... 'F'] = CH_TV | CH_HEX, ['G' ... 'Z'] = CH_TV, ['['] = CH_VCHAR,
    ['\\'] = CH_VCHAR, [']'] = CH_VCHAR, ['^' ... '`'] = CH_TV, ['a' ... 'f'] = CH_TV | CH_HEX,
    ['g' ... 'z'] = CH_TV, ['{'] = CH_VCHAR, ['|'] = CH_TV, ['}'] = CH_VCHAR, ['~'] = CH_TV,
    [0x80 ... 0xff] = CH_OBS,
};

static bool is(unsigned char c, unsigned cls)
{
    return (ch_class[c] & cls) != 0;
}

/* A byte allowed in a field value, a reason phrase or a chunk extension. */
static bool is_text(unsigned char c)
{
    return is(c, CH_VCHAR | CH_OBS | CH_WS);
}

static char lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

static bool ows(char c)
{
    return c == ' ' || c == '\t';
}

/* p[0..n) equals the lower-case word w, case-insensitively. */
static bool word_is(const char *p, size_t n, const char *w)
{
    size_t k = strlen(w);
    if (n != k)
        return false;
    for (size_t i = 0; i < k; i++)
        if (lower(p[i]) != w[i])
            return false;
    return true;
}

static bo_http_rc rc_of(bo_http_err err)
{
    if (err == BO_HTTP_ERR_HEAD_TOO_LARGE || err == BO_HTTP_ERR_LINE_TOO_LONG ||
        err == BO_HTTP_ERR_TRAILER_TOO_LARGE)
        return BO_HTTP_TOO_LARGE;
    return BO_HTTP_NOT_HTTP;
}

/* ---- the body ---------------------------------------------------------- */

enum {
    BS_LENGTH,        /* Content-Length bytes left */
    BS_SIZE,          /* the first hex digit of a chunk size */
    BS_SIZE_MORE,     /* more hex digits */
    BS_SIZE_WS,       /* whitespace after the size (BWS before ';') */
    BS_EXT,           /* a chunk extension, to the line's end */
    BS_SIZE_LF,       /* CR seen: LF */
    BS_DATA,          /* chunk data */
    BS_DATA_CR,       /* CRLF after the data */
    BS_DATA_LF,
    BS_TRAILER_START, /* a trailer line, or the final empty line */
    BS_TRAILER_NAME,
    BS_TRAILER_VALUE,
    BS_TRAILER_LF,
    BS_END_LF,        /* CR of the final empty line seen: LF */
    BS_CLOSE,         /* everything until the peer closes */
    BS_DONE,
    BS_FAIL
};

void bo_http_body_init(bo_http_body *b, bo_http_framing framing, uint64_t length)
{
    memset(b, 0, sizeof *b);
    b->framing = framing;
    switch (framing) {
    case BO_HTTP_FRAMING_NONE:
        b->state = BS_DONE;
        break;
    case BO_HTTP_FRAMING_LENGTH:
        b->left = length;
        b->state = length == 0 ? BS_DONE : BS_LENGTH;
        break;
    case BO_HTTP_FRAMING_CHUNKED:
        b->state = BS_SIZE;
        break;
    case BO_HTTP_FRAMING_CLOSE:
        b->state = BS_CLOSE;
        break;
    default:
        b->state = BS_FAIL;
        b->err = BO_HTTP_ERR_TUNNEL;
        break;
    }
}

static bo_http_rc body_fail(bo_http_body *b, bo_http_err err)
{
    b->state = BS_FAIL;
    b->err = err;
    return rc_of(err);
}

/* A chunk-size line ended: data follows, or the trailer after the last chunk. */
static void size_line_end(bo_http_body *b)
{
    b->line = 0;
    b->chunks++;
    b->state = b->left == 0 ? BS_TRAILER_START : BS_DATA;
}

/*
 * The body's bytes: counted in bulk for data, one at a time for the
 * chunked framing.  Returns NEED_MORE, DONE or a failure; *used is set to
 * the bytes consumed (0 on a failure).
 */
bo_http_rc bo_http_body_feed(bo_http_body *b, const char *buf, size_t len, size_t *used)
{
    size_t i = 0;
    *used = 0;
    if (b->state == BS_DONE)
        return BO_HTTP_DONE;
    if (b->state == BS_FAIL)
        return rc_of(b->err);
    while (i < len && b->state != BS_DONE) {
        if (b->state == BS_LENGTH || b->state == BS_DATA) {
            uint64_t n = len - i < b->left ? len - i : b->left;
            i += (size_t)n;
            b->left -= n;
            b->data += n;
            if (b->left == 0)
                b->state = b->state == BS_LENGTH ? BS_DONE : BS_DATA_CR;
            continue;
        }
        if (b->state == BS_CLOSE) {
            b->data += len - i;
            i = len;
            break;
        }
        unsigned char c = (unsigned char)buf[i++];
        if (b->state <= BS_SIZE_LF && ++b->line > BO_HTTP_LINE_MAX)
            return body_fail(b, BO_HTTP_ERR_LINE_TOO_LONG);
        if (b->state >= BS_TRAILER_START && b->state <= BS_END_LF) {
            if (++b->trailer > BO_HTTP_HEAD_MAX)
                return body_fail(b, BO_HTTP_ERR_TRAILER_TOO_LARGE);
            if (++b->line > BO_HTTP_LINE_MAX)
                return body_fail(b, BO_HTTP_ERR_LINE_TOO_LONG);
        }
        switch (b->state) {
        case BS_SIZE:
        case BS_SIZE_MORE:
            if (is(c, CH_HEX)) {
                unsigned d = c <= '9' ? (unsigned)(c - '0') : (unsigned)(lower((char)c) - 'a' + 10);
                if (b->left >= (1ULL << 56)) /* a 16th significant digit: over 2^60 */
                    return body_fail(b, BO_HTTP_ERR_CHUNK_SIZE);
                b->left = b->left * 16 + d;
                b->state = BS_SIZE_MORE;
            } else if (b->state == BS_SIZE) {
                return body_fail(b, BO_HTTP_ERR_CHUNK_SIZE);
            } else if (c == ';') {
                b->state = BS_EXT;
            } else if (ows((char)c)) {
                b->state = BS_SIZE_WS;
            } else if (c == '\r') {
                b->state = BS_SIZE_LF;
            } else if (c == '\n') {
                size_line_end(b);
            } else {
                return body_fail(b, BO_HTTP_ERR_CHUNK_SIZE);
            }
            break;
        case BS_SIZE_WS:
            if (c == ';')
                b->state = BS_EXT;
            else if (c == '\r')
                b->state = BS_SIZE_LF;
            else if (c == '\n')
                size_line_end(b);
            else if (!ows((char)c))
                return body_fail(b, BO_HTTP_ERR_CHUNK_SIZE);
            break;
        case BS_EXT:
            if (c == '\r')
                b->state = BS_SIZE_LF;
            else if (c == '\n')
                size_line_end(b);
            else if (!is_text(c))
                return body_fail(b, BO_HTTP_ERR_CHUNK_EXT);
            break;
        case BS_SIZE_LF:
            if (c != '\n')
                return body_fail(b, BO_HTTP_ERR_LINE_END);
            size_line_end(b);
            break;
        case BS_DATA_CR:
            if (c == '\r')
                b->state = BS_DATA_LF;
            else if (c == '\n')
                b->state = BS_SIZE;
            else
                return body_fail(b, BO_HTTP_ERR_CHUNK_END);
            b->line = 0;
            break;
        case BS_DATA_LF:
            if (c != '\n')
                return body_fail(b, BO_HTTP_ERR_CHUNK_END);
            b->state = BS_SIZE;
            break;
        case BS_TRAILER_START:
            if (c == '\r')
                b->state = BS_END_LF;
            else if (c == '\n')
                b->state = BS_DONE;
            else if (is(c, CH_TCHAR))
                b->state = BS_TRAILER_NAME;
            else
                return body_fail(b, BO_HTTP_ERR_TRAILER);
            break;
        case BS_TRAILER_NAME:
            if (c == ':')
                b->state = BS_TRAILER_VALUE;
            else if (!is(c, CH_TCHAR))
                return body_fail(b, BO_HTTP_ERR_TRAILER);
            break;
        case BS_TRAILER_VALUE:
            if (c == '\r') {
                b->state = BS_TRAILER_LF;
            } else if (c == '\n') {
                b->state = BS_TRAILER_START;
                b->line = 0;
            } else if (!is_text(c)) {
                return body_fail(b, BO_HTTP_ERR_TRAILER);
            }
            break;
        case BS_TRAILER_LF:
            if (c != '\n')
                return body_fail(b, BO_HTTP_ERR_LINE_END);
            b->state = BS_TRAILER_START;
            b->line = 0;
            break;
        case BS_END_LF:
            if (c != '\n')
                return body_fail(b, BO_HTTP_ERR_LINE_END);
            b->state = BS_DONE;
            break;
        default:
            return body_fail(b, BO_HTTP_ERR_TUNNEL);
        }
    }
    b->wire += i;
    *used = i;
    return b->state == BS_DONE ? BO_HTTP_DONE : BO_HTTP_NEED_MORE;
}

bo_http_rc bo_http_body_eof(bo_http_body *b)
{
    if (b->state == BS_DONE || b->state == BS_CLOSE) {
        b->state = BS_DONE;
        return BO_HTTP_DONE;
    }
    if (b->state == BS_FAIL)
        return rc_of(b->err);
    return body_fail(b, BO_HTTP_ERR_TRUNCATED);
}

/* ---- field values -------------------------------------------------------- */

/*
 * Calls fn on each element of a comma-separated list (RFC 9110 section
 * 5.6.1): OWS trimmed, empty elements skipped.  Returns false when fn
 * does, or when the list has no element at all.
 */
typedef bool (*element_fn)(bo_http_msg *m, const char *e, size_t n);

static bool each_element(bo_http_msg *m, const char *v, size_t n, element_fn fn)
{
    size_t i = 0;
    bool any = false;
    while (i <= n) {
        size_t start = i;
        while (i < n && v[i] != ',')
            i++;
        size_t a = start, z = i;
        while (a < z && ows(v[a]))
            a++;
        while (z > a && ows(v[z - 1]))
            z--;
        if (z > a) {
            any = true;
            if (!fn(m, v + a, z - a))
                return false;
        }
        i++;
    }
    return any;
}

/* The token at the start of an element (up to ';', '/' or whitespace). */
static size_t token_len(const char *e, size_t n)
{
    size_t k = 0;
    while (k < n && e[k] != ';' && e[k] != '/' && !ows(e[k]))
        k++;
    return k;
}

static bool cl_element(bo_http_msg *m, const char *e, size_t n)
{
    uint64_t v = 0;
    if (n > 18)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!is((unsigned char)e[i], CH_DIGIT))
            return false;
        v = v * 10 + (uint64_t)(e[i] - '0');
    }
    if (m->has_content_length && v != m->content_length)
        return false;
    m->content_length = v;
    m->has_content_length = true;
    return true;
}

static bool te_element(bo_http_msg *m, const char *e, size_t n)
{
    size_t k = token_len(e, n);
    if (k == 0)
        return false;
    for (size_t i = 0; i < k; i++)
        if (!is((unsigned char)e[i], CH_TCHAR))
            return false;
    m->chunked = word_is(e, k, "chunked");
    if (m->chunked) {
        if (m->p.te_chunked_seen)
            m->p.te_twice = true;
        m->p.te_chunked_seen = true;
    }
    return true;
}

static bool conn_element(bo_http_msg *m, const char *e, size_t n)
{
    size_t k = token_len(e, n);
    if (word_is(e, k, "close"))
        m->conn_close = true;
    else if (word_is(e, k, "keep-alive"))
        m->conn_keep_alive = true;
    else if (word_is(e, k, "upgrade"))
        m->conn_upgrade = true;
    return true;
}

static bool upgrade_element(bo_http_msg *m, const char *e, size_t n)
{
    size_t k = token_len(e, n);
    if (word_is(e, k, "websocket"))
        m->upgrade_websocket = true;
    else if (word_is(e, k, "h2c"))
        m->upgrade_h2c = true;
    return true;
}

/* ---- Retry-After --------------------------------------------------------- */

/* n decimal digits at s, into *out. */
static bool dec(const char *s, size_t n, unsigned *out)
{
    unsigned v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!is((unsigned char)s[i], CH_DIGIT))
            return false;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    *out = v;
    return true;
}

/* Index of the 3-letter month name at s, or -1. */
static int month_of(const char *s)
{
    static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
    for (int i = 0; i < 12; i++)
        if (memcmp(s, months + 3 * i, 3) == 0)
            return i;
    return -1;
}

static bool wkday_is(const char *s, size_t n)
{
    static const char *const days[] = {"Mon",    "Tue",      "Wed",       "Thu",
                                       "Fri",    "Sat",      "Sun",       "Monday",
                                       "Tuesday", "Wednesday", "Thursday", "Friday",
                                       "Saturday", "Sunday"};
    for (size_t i = 0; i < sizeof days / sizeof days[0]; i++)
        if (strlen(days[i]) == n && memcmp(s, days[i], n) == 0)
            return true;
    return false;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (m 1-12). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

/* "HH:MM:SS" at s into seconds of the day, or -1. */
static int64_t clock_of(const char *s)
{
    unsigned h, mi, se;
    if (s[2] != ':' || s[5] != ':' || !dec(s, 2, &h) || !dec(s + 3, 2, &mi) ||
        !dec(s + 6, 2, &se) || h > 23 || mi > 59 || se > 60)
        return -1;
    return (int64_t)h * 3600 + mi * 60 + se;
}

/*
 * An HTTP-date (RFC 9110 section 5.6.7) in epoch seconds, or -1:
 *   IMF-fixdate  "Sun, 06 Nov 1994 08:49:37 GMT"
 *   RFC 850      "Sunday, 06-Nov-94 08:49:37 GMT"  (years 70-99: 19xx)
 *   asctime      "Sun Nov  6 08:49:37 1994"
 */
static int64_t http_date(const char *v, size_t n)
{
    unsigned day, year;
    int mon;
    int64_t t;
    const char *comma = memchr(v, ',', n);
    if (comma != NULL) {
        size_t w = (size_t)(comma - v);
        const char *s = comma + 1;
        size_t rest = n - w - 1;
        if (!wkday_is(v, w))
            return -1;
        if (w == 3 && rest == 25 && s[0] == ' ' && s[3] == ' ' && s[7] == ' ' && s[12] == ' ' &&
            s[21] == ' ' && memcmp(s + 22, "GMT", 3) == 0 && dec(s + 1, 2, &day) &&
            (mon = month_of(s + 4)) >= 0 && dec(s + 8, 4, &year) && (t = clock_of(s + 13)) >= 0)
            goto found;
        if (w > 3 && rest == 23 && s[0] == ' ' && s[3] == '-' && s[7] == '-' && s[10] == ' ' &&
            s[19] == ' ' && memcmp(s + 20, "GMT", 3) == 0 && dec(s + 1, 2, &day) &&
            (mon = month_of(s + 4)) >= 0 && dec(s + 8, 2, &year) && (t = clock_of(s + 11)) >= 0) {
            year += year < 70 ? 2000 : 1900;
            goto found;
        }
        return -1;
    }
    if (n == 24 && wkday_is(v, 3) && v[3] == ' ' && v[7] == ' ' && v[10] == ' ' &&
        v[19] == ' ' && (mon = month_of(v + 4)) >= 0 &&
        (dec(v + 8, 2, &day) || (v[8] == ' ' && dec(v + 9, 1, &day))) &&
        (t = clock_of(v + 11)) >= 0 && dec(v + 20, 4, &year))
        goto found;
    return -1;
found:
    if (day < 1 || day > 31)
        return -1;
    return days_from_civil(year, (unsigned)mon + 1, day) * 86400 + t;
}

/* libcurl's reading: an HTTP-date, else the leading digits (strtoll's). */
static void retry_after_value(bo_http_msg *m, const char *v, size_t n)
{
    int64_t date = http_date(v, n);
    if (date >= 0) {
        m->retry_after_date = date;
        return;
    }
    size_t i = 0;
    int64_t s = 0;
    if (i < n && v[i] == '+')
        i++;
    if (i == n || !is((unsigned char)v[i], CH_DIGIT))
        return;
    for (; i < n && is((unsigned char)v[i], CH_DIGIT); i++) {
        int d = v[i] - '0';
        if (s > (INT64_MAX - d) / 10)
            return; /* out of range: libcurl's conversion fails, no hint */
        s = s * 10 + d;
    }
    m->retry_after_delta = s;
}

int64_t bo_http_retry_after_s(const bo_http_msg *m, int64_t wall_s)
{
    if (m->retry_after_delta >= 0)
        return m->retry_after_delta;
    if (m->retry_after_date >= 0)
        return m->retry_after_date > wall_s ? m->retry_after_date - wall_s : 0;
    return -1;
}

int64_t bo_http_retry_after_ns(const bo_http_msg *m, int64_t wall_s)
{
    int64_t s = bo_http_retry_after_s(m, wall_s);
    if (s <= 0)
        return -1;
    if (s >= INT64_MAX / BO_NS_PER_S)
        return INT64_MAX;
    return s * BO_NS_PER_S;
}

/* ---- the head ------------------------------------------------------------ */

enum {
    HS_METHOD,          /* request line: the method */
    HS_TARGET,
    HS_REQ_VERSION,     /* "HTTP/1.x" */
    HS_REQ_VERSION_END, /* CRLF after it */
    HS_RESP_VERSION,    /* status line: "HTTP/1.x" */
    HS_STATUS,          /* SP and three digits */
    HS_STATUS_END,      /* SP, or the line's end */
    HS_REASON,
    HS_LINE_LF,         /* CR seen at a line's end: LF */
    HS_FIELD_START,     /* a field line, or the empty line */
    HS_NAME,
    HS_VALUE_OWS,
    HS_VALUE,
    HS_END_LF,          /* CR of the empty line seen: LF */
    HS_DONE,
    HS_FAIL
};

enum {
    FLD_OTHER,
    FLD_HOST,
    FLD_CONTENT_LENGTH,
    FLD_TRANSFER_ENCODING,
    FLD_CONNECTION,
    FLD_UPGRADE,
    FLD_EXPECT,
    FLD_IDEMPOTENCY_KEY,
    FLD_RETRY_AFTER
};

bo_http_method bo_http_method_of(const char *t, size_t n)
{
    static const struct {
        const char *name;
        bo_http_method m;
    } methods[] = {{"GET", BO_HTTP_METHOD_GET},         {"HEAD", BO_HTTP_METHOD_HEAD},
                   {"POST", BO_HTTP_METHOD_POST},       {"PUT", BO_HTTP_METHOD_PUT},
                   {"DELETE", BO_HTTP_METHOD_DELETE},   {"OPTIONS", BO_HTTP_METHOD_OPTIONS},
                   {"TRACE", BO_HTTP_METHOD_TRACE},     {"PATCH", BO_HTTP_METHOD_PATCH},
                   {"CONNECT", BO_HTTP_METHOD_CONNECT}};
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
        if (strlen(methods[i].name) == n && memcmp(t, methods[i].name, n) == 0)
            return methods[i].m;
    return BO_HTTP_METHOD_OTHER;
}

/* What a head says, reset at the start of each head (interim ones too). */
static void head_reset(bo_http_msg *m)
{
    m->minor = 0;
    m->framing = BO_HTTP_FRAMING_NONE;
    m->content_length = 0;
    m->has_content_length = m->chunked = m->has_transfer_encoding = false;
    m->conn_close = m->conn_keep_alive = m->conn_upgrade = m->keep_alive = false;
    m->status = 0;
    m->retry_after_delta = m->retry_after_date = -1;
    m->p.cl_bad = m->p.te_bad = m->p.te_chunked_seen = m->p.te_twice = false;
    m->p.status_digits = 0;
    m->p.status_acc = 0;
    m->p.ver = 0;
    m->p.final_start = m->p.head;
}

static void msg_init(bo_http_msg *m, bool response, bo_http_method req_method)
{
    memset(m, 0, sizeof *m);
    m->is_response = response;
    m->req_method = req_method;
    m->target_hash = BO_FNV_INIT;
    head_reset(m);
    m->p.state = response ? HS_RESP_VERSION : HS_METHOD;
}

void bo_http_msg_request(bo_http_msg *m)
{
    msg_init(m, false, BO_HTTP_METHOD_OTHER);
}

void bo_http_msg_response(bo_http_msg *m, bo_http_method req_method)
{
    msg_init(m, true, req_method);
}

static bo_http_rc fail(bo_http_msg *m, bo_http_err err)
{
    m->p.state = HS_FAIL;
    m->err = err;
    m->rc = rc_of(err);
    return m->rc;
}

/* The name at the colon: which field is it? */
static uint8_t field_of(const bo_http_msg *m)
{
    const char *n = m->p.name;
    size_t k = m->p.name_len;
    if (k > sizeof m->p.name)
        return FLD_OTHER; /* longer than any name read here */
    if (word_is(n, k, "host"))
        return FLD_HOST;
    if (word_is(n, k, "content-length"))
        return FLD_CONTENT_LENGTH;
    if (word_is(n, k, "transfer-encoding"))
        return FLD_TRANSFER_ENCODING;
    if (word_is(n, k, "connection"))
        return FLD_CONNECTION;
    if (word_is(n, k, "upgrade"))
        return FLD_UPGRADE;
    if (word_is(n, k, "expect"))
        return FLD_EXPECT;
    if (word_is(n, k, "idempotency-key"))
        return FLD_IDEMPOTENCY_KEY;
    if (word_is(n, k, "retry-after"))
        return FLD_RETRY_AFTER;
    return FLD_OTHER;
}

/* A field line ended: judge its value (trailing OWS trimmed). */
static void field_end(bo_http_msg *m)
{
    const char *v = m->p.value;
    size_t n = m->p.value_len;
    bool big = m->p.value_long;
    while (n > 0 && ows(v[n - 1]))
        n--;
    switch (m->p.field) {
    case FLD_HOST:
        if (m->is_response)
            break;
        if (m->has_host)
            m->p.host_twice = true;
        m->has_host = true;
        if (big || n > BO_HTTP_HOST_MAX) {
            m->host_long = true;
        } else {
            memcpy(m->host, v, n);
            m->host[n] = '\0';
            m->host_len = n;
        }
        break;
    case FLD_CONTENT_LENGTH:
        if (big || !each_element(m, v, n, cl_element))
            m->p.cl_bad = true;
        m->has_content_length = true;
        break;
    case FLD_TRANSFER_ENCODING:
        m->has_transfer_encoding = true;
        if (big || memchr(v, '"', n) != NULL || !each_element(m, v, n, te_element))
            m->p.te_bad = true;
        break;
    case FLD_CONNECTION:
        if (big)
            m->conn_close = true; /* too long to judge: assume the worst */
        else
            each_element(m, v, n, conn_element);
        break;
    case FLD_UPGRADE:
        if (m->is_response)
            break;
        m->upgrade = true;
        if (!big)
            each_element(m, v, n, upgrade_element);
        break;
    case FLD_EXPECT:
        if (m->is_response)
            break;
        m->expect = true;
        if (!big && word_is(v, n, "100-continue"))
            m->expect_continue = true;
        break;
    case FLD_IDEMPOTENCY_KEY:
        if (!m->is_response) {
            bo_idem_line k = big ? BO_IDEM_LINE_KEY : bo_idem_value_kind(v, n);
            if (k > m->idem)
                m->idem = (uint8_t)k;
        }
        break;
    case FLD_RETRY_AFTER:
        if (m->is_response && !big && m->retry_after_delta < 0 && m->retry_after_date < 0)
            retry_after_value(m, v, n);
        break;
    default:
        break;
    }
}

/* A request's head ended: its framing and whether it may be kept. */
static bool request_end(bo_http_msg *m)
{
    if (m->p.host_twice)
        return fail(m, BO_HTTP_ERR_HOST), false;
    if (m->has_transfer_encoding) {
        if (m->has_content_length)
            return fail(m, BO_HTTP_ERR_TE_AND_LENGTH), false;
        if (m->p.te_bad || m->p.te_twice || !m->chunked || m->minor == 0)
            return fail(m, BO_HTTP_ERR_TRANSFER_ENCODING), false;
        m->framing = BO_HTTP_FRAMING_CHUNKED;
    } else if (m->has_content_length) {
        if (m->p.cl_bad)
            return fail(m, BO_HTTP_ERR_CONTENT_LENGTH), false;
        m->framing = BO_HTTP_FRAMING_LENGTH;
    }
    m->keep_alive = m->minor == 1 ? !m->conn_close : m->conn_keep_alive && !m->conn_close;
    if (m->method == BO_HTTP_METHOD_CONNECT)
        m->keep = BO_HTTP_KEEP_CONNECT;
    else if (m->upgrade || m->conn_upgrade)
        m->keep = BO_HTTP_KEEP_UPGRADE;
    else if (m->expect)
        m->keep = BO_HTTP_KEEP_EXPECT;
    else if (m->framing == BO_HTTP_FRAMING_LENGTH && m->content_length > BO_HTTP_BODY_CAP)
        m->keep = BO_HTTP_KEEP_BODY_CAP;
    return true;
}

/* A response's final head ended: its framing (RFC 9112 section 6.3). */
static bool response_end(bo_http_msg *m)
{
    int s = m->status;
    if (m->req_method == BO_HTTP_METHOD_HEAD || s == 204 || s == 304) {
        m->framing = BO_HTTP_FRAMING_NONE;
    } else if (s == 101 || (m->req_method == BO_HTTP_METHOD_CONNECT && s >= 200 && s < 300)) {
        m->framing = BO_HTTP_FRAMING_TUNNEL;
    } else if (m->has_transfer_encoding) {
        if (m->minor == 0 || m->p.te_bad || m->p.te_twice)
            return fail(m, BO_HTTP_ERR_TRANSFER_ENCODING), false;
        if (m->has_content_length)
            return fail(m, BO_HTTP_ERR_TE_AND_LENGTH), false;
        m->framing = m->chunked ? BO_HTTP_FRAMING_CHUNKED : BO_HTTP_FRAMING_CLOSE;
    } else if (m->has_content_length) {
        if (m->p.cl_bad)
            return fail(m, BO_HTTP_ERR_CONTENT_LENGTH), false;
        m->framing = BO_HTTP_FRAMING_LENGTH;
    } else {
        m->framing = BO_HTTP_FRAMING_CLOSE;
    }
    m->keep_alive = (m->minor == 1 ? !m->conn_close : m->conn_keep_alive && !m->conn_close) &&
                    m->framing != BO_HTTP_FRAMING_CLOSE && m->framing != BO_HTTP_FRAMING_TUNNEL;
    return true;
}

/*
 * The empty line: the head is complete.  An interim 1xx response's head
 * is skipped (the final one follows); otherwise the framing is decided
 * and the body reader started.  False when the head was bad (m failed).
 */
static bool head_end(bo_http_msg *m)
{
    m->p.line = 0;
    if (m->is_response && m->status >= 100 && m->status < 200 && m->status != 101) {
        m->interim++;
        head_reset(m);
        m->p.state = HS_RESP_VERSION;
        return true;
    }
    if (!(m->is_response ? response_end(m) : request_end(m)))
        return false;
    m->head_done = true;
    m->head_len = m->p.head;
    m->p.state = HS_DONE;
    bo_http_body_init(&m->body, m->framing, m->content_length);
    return true;
}

/* A start line or field line ended (its LF). */
static void line_end(bo_http_msg *m)
{
    if (m->p.field_line)
        field_end(m);
    m->p.field_line = false;
    m->p.line = 0;
    m->p.state = HS_FIELD_START;
}

/*
 * "HTTP/1." and the minor version, one byte at a time (p.ver bytes so far).
 * Returns false (m failed) on a mismatch.
 */
static bool version_byte(bo_http_msg *m, unsigned char c)
{
    static const char prefix[] = "HTTP/1.";
    if (m->p.ver < 7) {
        if (c == (unsigned char)prefix[m->p.ver]) {
            m->p.ver++;
            return true;
        }
        if (!m->is_response && m->p.ver == 5 && c == '2' && strcmp(m->method_text, "PRI") == 0 &&
            m->target_len == 1 && m->p.target_first == '*')
            return fail(m, BO_HTTP_ERR_H2_PREFACE), false;
        return fail(m, BO_HTTP_ERR_VERSION), false;
    }
    if (c != '0' && c != '1')
        return fail(m, BO_HTTP_ERR_VERSION), false;
    m->minor = c - '0';
    m->p.ver++;
    m->p.state = m->is_response ? HS_STATUS : HS_REQ_VERSION_END;
    return true;
}

/*
 * The head, one byte at a time, up to its end (DONE, *used where it ends)
 * or the buffer's (NEED_MORE).  Interim responses are read through.
 */
/* How many of len bytes a run may take: short of the head's and the line's
 * limits, so that the byte loop meets the byte that passes one. */
static size_t run_room(const bo_http_msg *m, size_t len)
{
    if (BO_HTTP_HEAD_MAX - m->p.head < len)
        len = BO_HTTP_HEAD_MAX - m->p.head;
    if (BO_HTTP_LINE_MAX - m->p.line < len)
        len = BO_HTTP_LINE_MAX - m->p.line;
    return len;
}

/* The run of field-value (or reason) text at buf, counted in the head's
 * and the line's lengths but stopping short of either limit, so that the
 * byte loop still reports it.  Its end is the CR, LF or other byte that
 * the byte loop then reads. */
static size_t text_run(bo_http_msg *m, const char *buf, size_t len)
{
    size_t room = run_room(m, len);
    size_t k = 0;
    while (k < room && buf[k] != '\r' && buf[k] != '\n' && is_text((unsigned char)buf[k]))
        k++;
    m->p.head += k;
    m->p.line += k;
    return k;
}

/* The run of field-name bytes at buf, read as the byte loop reads them
 * (lower case, the name's length capped one past what it keeps) and
 * counted as it counts them, short of the limits. */
static size_t name_run(bo_http_msg *m, const char *buf, size_t len)
{
    size_t room = run_room(m, len);
    size_t k = 0;
    while (k < room && is((unsigned char)buf[k], CH_TCHAR)) {
        if (m->p.name_len < sizeof m->p.name)
            m->p.name[m->p.name_len] = lower(buf[k]);
        if (m->p.name_len <= sizeof m->p.name)
            m->p.name_len++;
        k++;
    }
    m->p.head += k;
    m->p.line += k;
    return k;
}

/* A known field's value bytes, kept up to BO_HTTP_VALUE_MAX. */
static void keep_value(bo_http_msg *m, const char *s, size_t n)
{
    size_t room = BO_HTTP_VALUE_MAX - m->p.value_len;
    if (n > room) {
        n = room;
        m->p.value_long = true;
    }
    memcpy(m->p.value + m->p.value_len, s, n);
    m->p.value_len = (uint16_t)(m->p.value_len + n);
}

static bo_http_rc head_feed(bo_http_msg *m, const char *buf, size_t len, size_t *used)
{
    size_t i = 0;
    while (i < len) {
        unsigned char c = (unsigned char)buf[i++];
        if (++m->p.head > BO_HTTP_HEAD_MAX)
            return fail(m, BO_HTTP_ERR_HEAD_TOO_LARGE);
        if (++m->p.line > BO_HTTP_LINE_MAX)
            return fail(m, BO_HTTP_ERR_LINE_TOO_LONG);
        switch (m->p.state) {
        case HS_METHOD:
            if (c == ' ' && m->p.name_len > 0) {
                m->method = bo_http_method_of(m->method_text, m->p.name_len);
                m->p.name_len = 0;
                m->p.state = HS_TARGET;
            } else if (is(c, CH_TCHAR) && m->p.name_len < BO_HTTP_METHOD_MAX) {
                m->method_text[m->p.name_len++] = (char)c;
            } else {
                return fail(m, BO_HTTP_ERR_METHOD);
            }
            break;
        case HS_TARGET:
            if (c == ' ' && m->target_len > 0) {
                m->p.state = HS_REQ_VERSION;
            } else if (c > ' ' && c != 0x7f) {
                if (m->target_len == 0)
                    m->p.target_first = c;
                m->target_len++;
                m->target_hash = bo_fnv1a_step(m->target_hash, c);
            } else {
                return fail(m, BO_HTTP_ERR_TARGET);
            }
            break;
        case HS_REQ_VERSION:
        case HS_RESP_VERSION:
            if (!version_byte(m, c))
                return m->rc;
            break;
        case HS_REQ_VERSION_END:
            if (c == '\r')
                m->p.state = HS_LINE_LF;
            else if (c == '\n')
                line_end(m);
            else
                return fail(m, BO_HTTP_ERR_VERSION);
            break;
        case HS_STATUS:
            if (m->p.status_digits == 0 && c == ' ') {
                m->p.status_digits = 1; /* the SP after the version */
            } else if (m->p.status_digits > 0 && is(c, CH_DIGIT)) {
                m->p.status_acc = (uint16_t)(m->p.status_acc * 10 + (c - '0'));
                if (++m->p.status_digits == 4) {
                    if (m->p.status_acc < 100)
                        return fail(m, BO_HTTP_ERR_STATUS);
                    m->status = m->p.status_acc;
                    m->p.state = HS_STATUS_END;
                }
            } else {
                return fail(m, m->p.status_digits == 0 ? BO_HTTP_ERR_VERSION
                                                        : BO_HTTP_ERR_STATUS);
            }
            break;
        case HS_STATUS_END:
            if (c == ' ')
                m->p.state = HS_REASON;
            else if (c == '\r')
                m->p.state = HS_LINE_LF;
            else if (c == '\n')
                line_end(m);
            else
                return fail(m, BO_HTTP_ERR_STATUS);
            break;
        case HS_REASON:
            if (c == '\r')
                m->p.state = HS_LINE_LF;
            else if (c == '\n')
                line_end(m);
            else if (!is_text(c))
                return fail(m, BO_HTTP_ERR_LINE_END);
            else
                i += text_run(m, buf + i, len - i);
            break;
        case HS_LINE_LF:
            if (c != '\n')
                return fail(m, BO_HTTP_ERR_LINE_END);
            line_end(m);
            break;
        case HS_FIELD_START:
            if (c == '\r') {
                m->p.state = HS_END_LF;
            } else if (c == '\n') {
                if (!head_end(m))
                    return m->rc;
                if (m->head_done) {
                    *used = i;
                    return BO_HTTP_DONE;
                }
            } else if (ows((char)c)) {
                return fail(m, BO_HTTP_ERR_OBS_FOLD);
            } else if (is(c, CH_TCHAR)) {
                m->p.name[0] = lower((char)c);
                m->p.name_len = 1;
                m->p.state = HS_NAME;
            } else {
                return fail(m, BO_HTTP_ERR_FIELD_NAME);
            }
            break;
        case HS_NAME:
            if (c == ':') {
                m->p.field = field_of(m);
                m->p.value_len = 0;
                m->p.value_long = false;
                m->p.field_line = true;
                m->p.state = HS_VALUE_OWS;
            } else if (is(c, CH_TCHAR)) {
                if (m->p.name_len < sizeof m->p.name)
                    m->p.name[m->p.name_len] = lower((char)c);
                if (m->p.name_len <= sizeof m->p.name)
                    m->p.name_len++;
                i += name_run(m, buf + i, len - i);
            } else {
                return fail(m, BO_HTTP_ERR_FIELD_NAME);
            }
            break;
        case HS_VALUE_OWS:
            if (ows((char)c))
                break;
            m->p.state = HS_VALUE;
            __attribute__((fallthrough)); /* the value's first byte */
        case HS_VALUE:
            if (c == '\r') {
                m->p.state = HS_LINE_LF;
            } else if (c == '\n') {
                line_end(m);
            } else if (!is_text(c)) {
                return fail(m, BO_HTTP_ERR_FIELD_VALUE);
            } else {
                /* this byte and the value's text after it at once: the
                 * bulk of a head */
                size_t k = text_run(m, buf + i, len - i);
                if (m->p.field != FLD_OTHER)
                    keep_value(m, buf + i - 1, k + 1);
                i += k;
            }
            break;
        case HS_END_LF:
            if (c != '\n')
                return fail(m, BO_HTTP_ERR_LINE_END);
            if (!head_end(m))
                return m->rc;
            if (m->head_done) {
                *used = i;
                return BO_HTTP_DONE;
            }
            break;
        default:
            return fail(m, BO_HTTP_ERR_TUNNEL);
        }
    }
    *used = i;
    return BO_HTTP_NEED_MORE;
}

bo_http_rc bo_http_feed_head(bo_http_msg *m, const char *buf, size_t len, size_t *used)
{
    *used = 0;
    if (m->rc != BO_HTTP_NEED_MORE && m->rc != BO_HTTP_DONE)
        return m->rc;
    if (m->head_done)
        return BO_HTTP_DONE;
    size_t u = 0;
    bo_http_rc rc = head_feed(m, buf, len, &u);
    if (rc != BO_HTTP_NEED_MORE && rc != BO_HTTP_DONE)
        return rc;
    m->total += u;
    *used = u;
    if (rc == BO_HTTP_DONE && m->framing == BO_HTTP_FRAMING_TUNNEL) {
        m->done = true;
        m->rc = BO_HTTP_DONE;
    }
    return rc;
}

bo_http_rc bo_http_feed(bo_http_msg *m, const char *buf, size_t len, size_t *used)
{
    size_t h = 0, b = 0;
    *used = 0;
    if (m->rc != BO_HTTP_NEED_MORE) {
        /* A request's bytes fed after its end, before the caller started a
         * new message for the next request (its answer has not come). */
        if (m->done && !m->is_response && len > 0 && m->keep == BO_HTTP_KEEP_OK)
            m->keep = BO_HTTP_KEEP_PIPELINED;
        return m->rc;
    }
    bo_http_rc rc = bo_http_feed_head(m, buf, len, &h);
    if (rc != BO_HTTP_DONE || m->done) {
        *used = h;
        if (m->done && h < len && !m->is_response && m->keep == BO_HTTP_KEEP_OK)
            m->keep = BO_HTTP_KEEP_PIPELINED;
        return rc;
    }
    rc = bo_http_body_feed(&m->body, buf + h, len - h, &b);
    if (rc != BO_HTTP_NEED_MORE && rc != BO_HTTP_DONE) {
        m->err = m->body.err;
        m->rc = rc;
        return rc;
    }
    m->total += b;
    *used = h + b;
    if (!m->is_response && m->keep == BO_HTTP_KEEP_OK && m->body.wire > BO_HTTP_BODY_CAP)
        m->keep = BO_HTTP_KEEP_BODY_CAP;
    if (rc == BO_HTTP_DONE) {
        m->done = true;
        m->rc = BO_HTTP_DONE;
        if (!m->is_response && h + b < len && m->keep == BO_HTTP_KEEP_OK)
            m->keep = BO_HTTP_KEEP_PIPELINED;
    }
    return rc;
}

bo_http_rc bo_http_eof(bo_http_msg *m)
{
    if (m->rc != BO_HTTP_NEED_MORE)
        return m->rc;
    if (!m->head_done)
        return fail(m, BO_HTTP_ERR_TRUNCATED);
    bo_http_rc rc = bo_http_body_eof(&m->body);
    if (rc != BO_HTTP_DONE) {
        m->err = m->body.err;
        m->rc = rc;
        return rc;
    }
    m->done = true;
    m->rc = BO_HTTP_DONE;
    return rc;
}

bo_http_rc bo_http_parse_response(const char *buf, size_t len, bo_http_method req_method,
                                  bo_http_msg *m, bo_http_line_fn fn, void *ctx)
{
    size_t used;
    bo_http_msg_response(m, req_method);
    bo_http_rc rc = bo_http_feed_head(m, buf, len, &used);
    if (rc != BO_HTTP_DONE || fn == NULL)
        return rc;
    /* The final head's field lines: from its start, past the status line,
     * to the empty line; every line was checked to end in LF. */
    size_t i = m->p.final_start, end = m->head_len;
    const char *nl = memchr(buf + i, '\n', end - i);
    i = (size_t)(nl - buf) + 1;
    while (i < end) {
        nl = memchr(buf + i, '\n', end - i);
        size_t n = (size_t)(nl - buf) + 1 - i;
        if (buf[i] == '\r' || buf[i] == '\n')
            break;
        fn(ctx, buf + i, n);
        i += n;
    }
    return rc;
}

const char *bo_http_err_name(bo_http_err err)
{
    static const char *const names[] = {
        [BO_HTTP_ERR_NONE] = "none",
        [BO_HTTP_ERR_METHOD] = "not a method",
        [BO_HTTP_ERR_TARGET] = "bad request target",
        [BO_HTTP_ERR_VERSION] = "not HTTP/1.0 or HTTP/1.1",
        [BO_HTTP_ERR_H2_PREFACE] = "the HTTP/2 connection preface",
        [BO_HTTP_ERR_STATUS] = "bad status code",
        [BO_HTTP_ERR_LINE_END] = "bad line end",
        [BO_HTTP_ERR_FIELD_NAME] = "bad field name",
        [BO_HTTP_ERR_FIELD_VALUE] = "bad field value",
        [BO_HTTP_ERR_OBS_FOLD] = "obs-fold (a line starting with whitespace)",
        [BO_HTTP_ERR_CONTENT_LENGTH] = "bad Content-Length",
        [BO_HTTP_ERR_TRANSFER_ENCODING] = "bad Transfer-Encoding",
        [BO_HTTP_ERR_TE_AND_LENGTH] = "Transfer-Encoding with Content-Length",
        [BO_HTTP_ERR_HOST] = "two Host fields",
        [BO_HTTP_ERR_HEAD_TOO_LARGE] = "head over 16 KiB",
        [BO_HTTP_ERR_LINE_TOO_LONG] = "line over 8 KiB",
        [BO_HTTP_ERR_CHUNK_SIZE] = "bad chunk size",
        [BO_HTTP_ERR_CHUNK_EXT] = "bad chunk extension",
        [BO_HTTP_ERR_CHUNK_END] = "chunk data not followed by CRLF",
        [BO_HTTP_ERR_TRAILER] = "bad trailer",
        [BO_HTTP_ERR_TRAILER_TOO_LARGE] = "trailer over 16 KiB",
        [BO_HTTP_ERR_TUNNEL] = "a tunnel, not HTTP",
        [BO_HTTP_ERR_TRUNCATED] = "closed before the message ended",
    };
    if ((unsigned)err >= sizeof names / sizeof names[0] || names[err] == NULL)
        return "?";
    return names[err];
}

const char *bo_http_keep_name(bo_http_keep keep)
{
    static const char *const names[] = {
        [BO_HTTP_KEEP_OK] = "kept",
        [BO_HTTP_KEEP_CONNECT] = "CONNECT",
        [BO_HTTP_KEEP_UPGRADE] = "Upgrade",
        [BO_HTTP_KEEP_EXPECT] = "Expect",
        [BO_HTTP_KEEP_BODY_CAP] = "body over 64 KiB",
        [BO_HTTP_KEEP_PIPELINED] = "pipelined",
    };
    if ((unsigned)keep >= sizeof names / sizeof names[0])
        return "?";
    return names[keep];
}
