/*
 * fuzz_classify: bo_classify on arbitrary attempt facts and configuration.
 * The safety rules of docs/DESIGN.md are checked as invariants, independently of
 * how bo_classify.c is written:
 *   - never RETRY once a body byte was delivered;
 *   - never RETRY an upload that cannot be rewound;
 *   - never RETRY a non-idempotent request that may have reached the server
 *     unless unsafe_retry or it carries an Idempotency-Key, except for 429,
 *     503 and connect failures (the server said "later", or nothing was sent);
 *   - never RETRY what BACKOFF_RETRY_ON does not list, nor a 2xx/3xx; a 409
 *     is retried (signal KEY_BUSY) exactly when the request carries a key and
 *     nothing else forbids it; 400 and 422 never;
 *   - SUCCESS only for a completed transfer below 400;
 *   - the verdict and signal are in range.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bo_classify.h"
#include "bo_config.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const methods[] = {NULL, "GET", "get", "HEAD", "PUT", "DELETE", "OPTIONS",
                                      "TRACE", "POST", "post", "PATCH", "CONNECT", "", "GETX",
                                      "Delete", "PoSt"};
static const int curl_codes[] = {0, 5, 6, 7, 18, 22, 28, 52, 55, 56, 1, 3, 35, 47, 60, 99};
static const int errnos[] = {0, ECONNREFUSED, ETIMEDOUT, ENETUNREACH, EHOSTUNREACH, EAGAIN,
                             EINPROGRESS, EACCES, EINTR, EPERM, EADDRNOTAVAIL, EBADF,
                             EALREADY, EISCONN, EBADFD, EINVAL};

/* True when the "retry even if the request may have reached the server and
 * the method is not idempotent" exemption applies to this attempt. */
static int exempt(const bo_attempt *a)
{
    int http = a->connect_errno == 0 &&
               (a->curl_code == 0 || (a->curl_code == 22 && a->http_status != 0));
    if (http)
        return a->http_status == 429 || a->http_status == 503;
    return a->connect_errno != 0 || a->curl_code == BO_CURLE_COULDNT_CONNECT ||
           a->curl_code == BO_CURLE_COULDNT_RESOLVE_HOST ||
           a->curl_code == BO_CURLE_COULDNT_RESOLVE_PROXY;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in in = {data, size};
    bo_config cfg;
    bo_attempt a;
    char mbuf[16];

    bo_config_defaults(&cfg);
    cfg.retry_on = (unsigned)fuzz_u64(&in, 2);
    cfg.unsafe_retry = fuzz_bool(&in);
    memset(&a, 0, sizeof a);
    uint8_t sel = fuzz_u8(&in);
    a.curl_code = (sel & 0x80) ? (int)(int32_t)fuzz_u64(&in, 4) : curl_codes[sel & 15];
    sel = fuzz_u8(&in);
    a.http_status = (sel & 0x80) ? (int)(int32_t)fuzz_u64(&in, 4) : (int)fuzz_u64(&in, 2) % 700;
    sel = fuzz_u8(&in);
    if (sel & 0x80) {
        /* A method straight from the input, up to 15 bytes. */
        size_t n = sel & 15;
        for (size_t i = 0; i < n; i++)
            mbuf[i] = (char)fuzz_u8(&in);
        mbuf[n] = '\0';
        a.method = mbuf;
    } else {
        a.method = methods[sel & 15];
    }
    sel = fuzz_u8(&in);
    a.body_delivered = (sel & 1) ? fuzz_u64(&in, 8) : 0;
    a.has_upload = (sel >> 1) & 1;
    a.upload_rewindable = (sel >> 2) & 1;
    a.request_sent = (sel >> 3) & 1;
    a.connect_errno =
        (sel & 0x10) ? errnos[fuzz_u8(&in) % (sizeof errnos / sizeof errnos[0])] : 0;
    a.connect_unix = (sel >> 5) & 1;
    a.connect_unknown = (sel >> 6) & 1;
    a.idempotency_key = fuzz_bool(&in);

    bo_outcome o = bo_classify(&cfg, &a);
    if (o.verdict != BO_VERDICT_SUCCESS && o.verdict != BO_VERDICT_RETRY &&
        o.verdict != BO_VERDICT_FINAL)
        abort();
    if (o.signal != BO_SIGNAL_NONE && o.signal != BO_SIGNAL_THROTTLE &&
        o.signal != BO_SIGNAL_LOSS && o.signal != BO_SIGNAL_KEY_BUSY)
        abort();
    int http = a.connect_errno == 0 &&
               (a.curl_code == 0 || (a.curl_code == 22 && a.http_status != 0));
    /* A busy key is a 409 answer to a request that carries one, and nothing else. */
    if ((o.signal == BO_SIGNAL_KEY_BUSY) != (http && a.http_status == 409 && a.idempotency_key))
        abort();
    if (o.signal == BO_SIGNAL_KEY_BUSY &&
        (o.verdict == BO_VERDICT_RETRY) != (a.body_delivered == 0 &&
                                            (!a.has_upload || a.upload_rewindable)))
        abort();
    if (o.verdict == BO_VERDICT_SUCCESS &&
        (a.curl_code != 0 || a.connect_errno != 0 || a.http_status >= 400))
        abort();
    if (o.verdict == BO_VERDICT_RETRY) {
        if (a.body_delivered > 0)
            abort();
        if (a.has_upload && !a.upload_rewindable)
            abort();
        if (cfg.retry_on == 0 && o.signal != BO_SIGNAL_KEY_BUSY)
            abort();
        if (a.request_sent && !bo_method_idempotent(a.method) && !cfg.unsafe_retry &&
            !a.idempotency_key && !exempt(&a))
            abort();
        if (http && (a.http_status == 400 || a.http_status == 422 ||
                     (a.http_status == 409 && !a.idempotency_key)))
            abort();
        if (a.connect_errno == 0 && a.curl_code == 0 && a.http_status >= 200 && a.http_status < 400)
            abort();
        /* "Nothing here" is never retried: an unknown destination's refusal,
         * TCP's EAGAIN. */
        if (a.connect_errno != 0 && a.connect_unknown && a.connect_errno != EAGAIN)
            abort();
        if (a.connect_errno == EAGAIN && !a.connect_unix)
            abort();
        /* 429 is retried only when listed. */
        if (a.connect_errno == 0 && a.curl_code == 0 && a.http_status == 429 &&
            !(cfg.retry_on & BO_RETRY_429))
            abort();
        /* A non-idempotent request whose 5xx/408 answer came back (sent, by
         * definition) is retried only under unsafe_retry (503 aside). */
        if (a.connect_errno == 0 && a.curl_code == 0 && a.http_status != 429 &&
            a.http_status != 503 && !bo_method_idempotent(a.method) && !cfg.unsafe_retry &&
            !a.idempotency_key)
            abort();
    }
    /* A throttle signal comes only from an HTTP answer. */
    if (o.signal == BO_SIGNAL_THROTTLE && a.http_status == 0)
        abort();

    /* connect(): a non-blocking socket's result is never the hook's; only a
     * blocking EINPROGRESS under the hook's own bound is aborted (and then
     * reads ETIMEDOUT); only a reused socket is stale; a retryable errno is
     * one bo_connect_errno_retryable allows. */
    bo_connect_facts f = {.nonblocking = (sel >> 7) & 1,
                          .unix_socket = a.connect_unix,
                          .unknown = a.connect_unknown,
                          .reused = a.request_sent,
                          .shim_bound = a.has_upload};
    bo_connect_verdict v = bo_connect_judge(a.connect_errno, &f);
    if ((v.cls == BO_CONNECT_PASS) != f.nonblocking)
        abort();
    if (v.abort != (!f.nonblocking && f.shim_bound && a.connect_errno == EINPROGRESS))
        abort();
    if (v.err != (v.abort ? ETIMEDOUT : a.connect_errno))
        abort();
    if (v.cls == BO_CONNECT_STALE && !f.reused)
        abort();
    if (v.cls == BO_CONNECT_OK && a.connect_errno != 0)
        abort();
    if (v.cls == BO_CONNECT_RETRYABLE &&
        !bo_connect_errno_retryable(v.err, f.unix_socket, f.unknown))
        abort();
    return 0;
}
