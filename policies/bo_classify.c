/*
 * bo_classify: one attempt's facts -> verdict (what to do with this call)
 * and signal (what it says about the destination's capacity).
 *
 * The signal describes what happened, whatever the verdict: a 429 that is
 * not retried (not in BACKOFF_RETRY_ON, unsafe to repeat, body already
 * delivered, upload not rewindable) is still a THROTTLE, so the window keeps
 * learning from calls it may not repeat.
 */
#include "bo_classify.h"

#include <errno.h>
#include <string.h>

/* How a retryable class may be repeated. */
typedef enum safety {
    SAFE_ALWAYS,    /* the request never reached the server, or it says "later" */
    SAFE_IF_UNSENT, /* retry when not sent; once sent, only idempotent/unsafe */
    SAFE_IF_IDEMPOTENT
} safety;

const char *bo_cause_name(bo_cause c)
{
    static const char *const names[BO_CAUSE_COUNT] = {
        [BO_CAUSE_NONE] = "",       [BO_CAUSE_429] = "429",         [BO_CAUSE_503] = "503",
        [BO_CAUSE_504] = "504",     [BO_CAUSE_CONNECT] = "connect", [BO_CAUSE_TIMEOUT] = "timeout",
    };
    return (int)c >= 0 && c < BO_CAUSE_COUNT ? names[c] : "";
}

bool bo_method_idempotent(const char *method)
{
    static const char *const idempotent[] = {"GET", "HEAD", "PUT", "DELETE", "OPTIONS",
                                             "TRACE"};
    if (method == NULL)
        return true;
    for (size_t i = 0; i < sizeof idempotent / sizeof idempotent[0]; i++) {
        if (strcmp(method, idempotent[i]) == 0) /* methods are case-sensitive (RFC 9110) */
            return true;
    }
    return false;
}

bool bo_connect_errno_retryable(int err, bool unix_socket, bool unknown)
{
    if (err == EAGAIN)
        return unix_socket;
    if (err == ECONNREFUSED || err == ETIMEDOUT || err == ENETUNREACH || err == EHOSTUNREACH)
        return !unknown;
    return false;
}

bool bo_connect_managed(bool stream, bool nonblocking)
{
    return stream && !nonblocking;
}

bo_connect_verdict bo_connect_judge(int err, const bo_connect_facts *f)
{
    bo_connect_verdict v = {BO_CONNECT_FINAL, err, false};

    if (f->nonblocking) {
        v.cls = BO_CONNECT_PASS;
        return v;
    }
    if (err == 0) {
        v.cls = BO_CONNECT_OK;
        return v;
    }
    if (f->reused && (err == EALREADY || err == EISCONN || err == EBADFD || err == EINVAL)) {
        v.cls = BO_CONNECT_STALE;
        return v;
    }
    if (err == EINPROGRESS) {
        if (!f->shim_bound)
            return v; /* the program's own send timeout ran out */
        v.abort = true;
        v.err = err = ETIMEDOUT;
    }
    if (bo_connect_errno_retryable(err, f->unix_socket, f->unknown))
        v.cls = BO_CONNECT_RETRYABLE;
    return v;
}

/*
 * Sort an HTTP error status into its retry class: the RETRY_ON bits that
 * list it, its signal and its safety.  Returns false for statuses that are
 * never retried (every 4xx but 408, 429 and a 403 of a spent quota, and
 * anything below 500 or above 599 otherwise).
 */
static bool status_class(int status, bool quota_exhausted, unsigned *bits, bo_signal *sig,
                         safety *saf)
{
    unsigned five = (status >= 500 && status <= 599) ? BO_RETRY_5XX : 0;

    *sig = BO_SIGNAL_NONE;
    *saf = SAFE_IF_IDEMPOTENT;
    if (status == 403 && quota_exhausted)
        status = 429; /* GitHub's primary rate limit: the server's "later" */
    switch (status) {
    case 429:
        *bits = BO_RETRY_429;
        *sig = BO_SIGNAL_THROTTLE;
        *saf = SAFE_ALWAYS;
        return true;
    case 503:
        *bits = BO_RETRY_503 | five;
        *sig = BO_SIGNAL_THROTTLE;
        *saf = SAFE_ALWAYS;
        return true;
    case 504:
        *bits = BO_RETRY_504 | five;
        *sig = BO_SIGNAL_THROTTLE;
        return true;
    case 502:
        *bits = BO_RETRY_502 | five;
        return true;
    case 500:
        *bits = BO_RETRY_500 | five;
        return true;
    case 408:
        *bits = BO_RETRY_408;
        return true;
    default:
        *bits = five;
        return five != 0;
    }
}

/*
 * Sort a failed transfer's curl code (or the connect hook's errno) into its
 * retry class.  Returns false for failures that are never retried.
 */
static bool failure_class(const bo_attempt *a, unsigned *bits, bo_signal *sig, safety *saf)
{
    *sig = BO_SIGNAL_NONE;
    *saf = SAFE_ALWAYS;
    if (a->connect_errno != 0) {
        if (!bo_connect_errno_retryable(a->connect_errno, a->connect_unix, a->connect_unknown))
            return false;
        *bits = BO_RETRY_CONNECT;
        *sig = BO_SIGNAL_LOSS;
        return true;
    }
    switch (a->curl_code) {
    case BO_CURLE_COULDNT_CONNECT:
        *bits = BO_RETRY_CONNECT;
        *sig = BO_SIGNAL_LOSS;
        return true;
    case BO_CURLE_OPERATION_TIMEDOUT:
        *bits = BO_RETRY_TIMEOUT;
        *sig = BO_SIGNAL_LOSS;
        *saf = SAFE_IF_UNSENT;
        return true;
    case BO_CURLE_GOT_NOTHING:
    case BO_CURLE_RECV_ERROR:
    case BO_CURLE_SEND_ERROR:
    case BO_CURLE_PARTIAL_FILE:
        *bits = BO_RETRY_RESET;
        *saf = SAFE_IF_UNSENT;
        return true;
    case BO_CURLE_COULDNT_RESOLVE_HOST:
    case BO_CURLE_COULDNT_RESOLVE_PROXY:
        *bits = BO_RETRY_DNS;
        return true;
    default:
        return false;
    }
}

/* The kind of a throttle or loss signal (bo_cause), from the facts that gave it. */
static bo_cause cause_of(const bo_attempt *a, bool http, bo_signal sig)
{
    if (sig == BO_SIGNAL_NONE || sig == BO_SIGNAL_KEY_BUSY) /* a busy key is no throttle */
        return BO_CAUSE_NONE;
    if (http) /* THROTTLE comes from these statuses only (status_class); a 403 whose
               * headers say the quota is spent is the server's 429 */
        return a->http_status == 429 || a->http_status == 403 ? BO_CAUSE_429
               : a->http_status == 503                         ? BO_CAUSE_503
                                                               : BO_CAUSE_504;
    return a->connect_errno == 0 && a->curl_code == BO_CURLE_OPERATION_TIMEDOUT
               ? BO_CAUSE_TIMEOUT
               : BO_CAUSE_CONNECT;
}

/*
 * Classify one attempt.  Success is a completed transfer with a 1xx-3xx
 * status (or none, for non-HTTP transfers and connect()).  An error status
 * or failure is retried only when its class is listed in retry_on, its
 * safety rule allows it for this request, no body byte has reached the
 * program and any upload can be sent again; otherwise it is FINAL, keeping
 * its signal.
 *
 * An Idempotency-Key makes the request repeatable: the server processes the
 * key once and replays its answer, so what may have reached it is retried as
 * for an idempotent method.  A 409 to such a request is the key's "still
 * processing": it is retried (whatever retry_on lists: it follows the retry
 * that met it, or a concurrent send of the same key) after a wait
 * (BO_SIGNAL_KEY_BUSY).  Without a key a 409 is final, as 422 and 400 always are (the
 * draft: the request must be corrected, not repeated).
 */
bool bo_answer_quota_spent(const bo_rl_headers *rl)
{
    return rl == NULL || bo_rl_headers_exhausted(rl);
}

bo_outcome bo_classify(const bo_config *cfg, const bo_attempt *a)
{
    bo_outcome out = {BO_VERDICT_FINAL, BO_SIGNAL_NONE, false, BO_CAUSE_NONE};
    unsigned bits = 0;
    safety saf = SAFE_ALWAYS;
    bool known;
    bool key_busy = false;
    bool http = a->connect_errno == 0 &&
                (a->curl_code == BO_CURLE_OK ||
                 (a->curl_code == BO_CURLE_HTTP_RETURNED_ERROR && a->http_status != 0));

    if (http) {
        if (a->http_status < 400) {
            /* curl -f never fails below 400; if it claims to, return it as is. */
            out.verdict = a->curl_code == BO_CURLE_OK ? BO_VERDICT_SUCCESS : BO_VERDICT_FINAL;
            return out;
        }
        out.rate_limited =
            a->http_status == 429 || (a->http_status == 403 && a->quota_exhausted);
        key_busy = a->http_status == 409 && a->idempotency_key;
        if (key_busy)
            out.signal = BO_SIGNAL_KEY_BUSY; /* SAFE_ALWAYS: this attempt was not processed */
        known = key_busy ||
                status_class(a->http_status, a->quota_exhausted, &bits, &out.signal, &saf);
    } else {
        known = failure_class(a, &bits, &out.signal, &saf);
    }
    out.cause = cause_of(a, http, out.signal);
    if (!known || (!key_busy && (cfg->retry_on & bits) == 0))
        return out;

    bool repeatable = bo_method_idempotent(a->method) || a->idempotency_key || cfg->unsafe_retry;
    switch (saf) {
    case SAFE_ALWAYS:
        break;
    case SAFE_IF_UNSENT:
        if (a->request_sent && !repeatable)
            return out;
        break;
    case SAFE_IF_IDEMPOTENT:
        if (!repeatable)
            return out;
        break;
    }
    if (a->body_delivered > 0)
        return out;
    if (a->has_upload && !a->upload_rewindable)
        return out;
    out.verdict = BO_VERDICT_RETRY;
    return out;
}
