/*
 * held.c: holding an attempt's bytes until it is known not to be retried,
 * and handing them to the program as libcurl would have (held.h).
 */
#include "libcurl/held.h"
#include "libcurl/kept.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bo_classify.h"
#include "core/core.h"

/* Held bytes are recorded as segments: a kind byte, a 4-byte length, the bytes. */
#define HOLD_FIRST (4 * 1024)
#define SEG_HDR 5

/* Hand body bytes to the program as libcurl would have. */
static size_t deliver_body(bo_curl_rec *r, char *p, size_t n)
{
    if (r->write_fn != NULL)
        return r->write_fn(p, 1, n, r->write_data);
    return fwrite(p, 1, n, (FILE *)r->write_data);
}

/*
 * Hand a header line to the program as libcurl would have: its header
 * callback; without one, the write function with HEADERDATA when that is
 * set; else nowhere.
 */
static size_t deliver_header(bo_curl_rec *r, char *p, size_t n)
{
    if (r->header_fn != NULL)
        return r->header_fn(p, 1, n, r->header_data);
    if (r->header_data == NULL)
        return n;
    if (r->write_fn != NULL)
        return r->write_fn(p, 1, n, r->header_data);
    return fwrite(p, 1, n, (FILE *)r->header_data);
}

/*
 * Replay the held bytes to the program in arrival order, one callback per
 * recorded callback.  Returns 0, or -1 when the program refused bytes.
 */
static int flush_held(bo_curl_rec *r)
{
    size_t off = 0;
    int rc = 0;

    while (off + SEG_HDR <= r->held_len) {
        unsigned char kind = (unsigned char)r->held[off];
        uint32_t len;
        memcpy(&len, r->held + off + 1, sizeof len);
        char *p = r->held + off + SEG_HDR;
        size_t got = kind == BO_SEG_BODY ? deliver_body(r, p, len) : deliver_header(r, p, len);
        r->delivered += len;
        off += SEG_HDR + len;
        if (got != len) {
            r->deliver_failed = true;
            rc = -1;
            break;
        }
    }
    r->held_len = 0;
    return rc;
}

/* Keep bytes for later; -1 when they would pass the bound. */
int bo_curl_hold(bo_curl_rec *r, bo_seg_kind kind, const char *p, size_t n)
{
    size_t need = r->held_len + SEG_HDR + n;
    if (need > BO_HOLD_MAX)
        return -1;
    if (need > r->held_cap) {
        size_t cap = r->held_cap ? r->held_cap : HOLD_FIRST;
        while (cap < need)
            cap *= 2;
        if (cap > BO_HOLD_MAX)
            cap = BO_HOLD_MAX;
        char *nb = realloc(r->held, cap);
        if (nb == NULL)
            return -1;
        r->held = nb;
        r->held_cap = cap;
    }
    uint32_t len = (uint32_t)n;
    r->held[r->held_len] = (char)kind;
    memcpy(r->held + r->held_len + 1, &len, sizeof len);
    memcpy(r->held + r->held_len + SEG_HDR, p, n);
    r->held_len = need;
    return 0;
}

/*
 * May a response with this status still be retried?  Then its bytes are
 * held.  Informational responses and redirects that libcurl follows are
 * held too: the response that counts comes after them.
 */
static bool status_may_retry(const bo_curl_rec *r, int status)
{
    const bo_config *cfg = bo_core_config();
    if (status < 200)
        return true;
    if (status >= 300 && status < 400 && r->follow)
        return true;
    bo_attempt a = {.curl_code = BO_CURLE_OK,
                    .http_status = status,
                    .method = bo_curl_method_name(r),
                    .body_delivered = 0,
                    .has_upload = bo_curl_has_upload(r),
                    .upload_rewindable = true,
                    .request_sent = true,
                    .connect_errno = 0,
                    .idempotency_key = r->idem_key,
                    .quota_exhausted = bo_answer_quota_spent(NULL)}; /* its headers
                                                 are still to come */
    return bo_classify(cfg, &a).verdict == BO_VERDICT_RETRY;
}

int bo_curl_status_of_line(const char *p, size_t n)
{
    if (n < 12 || p[0] != 'H' || memcmp(p, "HTTP/", 5) != 0)
        return -1;
    const char *sp = memchr(p, ' ', n);
    if (sp == NULL || (size_t)(sp - p) + 4 > n)
        return -1;
    int s = 0;
    for (int i = 1; i <= 3; i++) {
        char c = sp[i];
        if (c < '0' || c > '9')
            return -1;
        s = s * 10 + (c - '0');
    }
    return s;
}

/* A status line: the status of the header block it starts, and whether that
 * block's bytes are held (cached: most responses of a handle share one). */
static void note_status_line(bo_curl_rec *r, const char *p, size_t n)
{
    int s = bo_curl_status_of_line(p, n);
    if (s < 0)
        return;
    r->block_status = s;
    if (s != r->cached_status) {
        r->cached_hold = status_may_retry(r, s);
        r->cached_status = s;
    }
    r->block_hold = r->cached_hold;
}

int bo_curl_commit(bo_curl_rec *r)
{
    r->mode = BO_HOLD_PASS;
    return flush_held(r);
}

/*
 * The shim's write callback.  While the attempt may still be retried the
 * bytes are held; the first body byte of a response that will not be
 * retried commits the attempt: held bytes go out, the rest passes through.
 */
size_t bo_curl_held_write(char *p, size_t size, size_t nmemb, void *ud)
{
    bo_curl_rec *r = ud;
    size_t n = size * nmemb, got;

    if (r->mode == BO_HOLD_HOLD) {
        if (r->include_header)
            note_status_line(r, p, n);
        if (r->block_hold && r->block_status == 403 && !bo_answer_quota_spent(&r->rl))
            r->block_hold = false; /* headers done: a 403 that is not a spent quota is final */
        if (r->block_hold && bo_curl_hold(r, BO_SEG_BODY, p, n) == 0)
            return n;
        if (bo_curl_commit(r) != 0)
            return 0;
    }
    got = deliver_body(r, p, n);
    if (got <= n)
        r->delivered += got;
    return got;
}

/*
 * Could the header line starting with c be one bo_rl_header_line reads?
 * Its own first test (x-ratelimit-*, x-rate-limit-*, x-ms-retry-after-ms,
 * RateLimit*, Retry-After*, Age, Date), made here so that the other lines
 * (Content-Type, ...) cost no call.
 */
static bool rl_first_letter(char c)
{
    c = (char)(c | 0x20); /* 'X' and 'x' alike; no other byte becomes x, r, a or d */
    return c == 'x' || c == 'r' || c == 'a' || c == 'd'; /* d: Date, for Retry-After dates */
}

/* The shim's header callback: notes each status line, holds or delivers. */
size_t bo_curl_held_header(char *p, size_t size, size_t nmemb, void *ud)
{
    bo_curl_rec *r = ud;
    size_t n = size * nmemb;

    if (n > 5 && p[0] == 'H' && memcmp(p, "HTTP/", 5) == 0) {
        note_status_line(r, p, n); /* in every mode: the last one is the call's status */
        bo_rl_headers_reuse(&r->rl); /* a new header block: its own quota */
    } else if (n >= 4 && rl_first_letter(p[0]) &&
               (r->block_status >= 400 || (p[0] | 0x20) != 'd')) {
        /* most lines never get here; nor does the Date of an answer below
         * 400, which only a failed answer's date-form Retry-After reads */
        bo_rl_header_line(&r->rl, p, n);
    }
    if (r->mode == BO_HOLD_HOLD) {
        if (r->header_fn == NULL && r->header_data == NULL)
            return n; /* the program receives no headers: nothing to hold */
        if (bo_curl_hold(r, BO_SEG_HEADER, p, n) == 0)
            return n;
        if (bo_curl_commit(r) != 0)
            return 0;
    }
    size_t got = deliver_header(r, p, n);
    r->delivered += n;
    return got;
}

void bo_curl_attempt_reset(bo_curl_rec *r)
{
    r->mode = bo_curl_rec_dest(r) != NULL ? BO_HOLD_HOLD : BO_HOLD_PASS;
    r->block_status = 0;
    r->block_hold = true;
    r->delivered = 0;
    r->deliver_failed = false;
    r->held_len = 0;
    bo_curl_kept_unshow(r);
    bo_rl_headers_reuse(&r->rl);
}

