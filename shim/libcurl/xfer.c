/*
 * xfer.c: one libcurl transfer's call, step by step (xfer.h): the
 * program's deadline for the whole call, its upload rewound for a retry,
 * the attempt's result classified by policies/ and completed on its
 * destination, its own retries recognised as one logical request.
 */
#include "libcurl/xfer.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "bo_budget.h"
#include "call/call.h"
#include "core/core.h"
#include "libcurl/held.h"
#include "libcurl/kept.h"
#include "libcurl/options.h"

/*
 * Retry-After seconds (libcurl's curl_off_t) as nanoseconds, saturating: a
 * date far ahead or an absurd number must not wrap into a negative hint (no
 * hint: retried); the engine does not wait for one past BACKOFF_CAP_MS (the
 * answer stands).
 */
static int64_t retry_after_to_ns(curl_off_t seconds)
{
    if (seconds <= 0)
        return -1;
    if (seconds >= INT64_MAX / 1000000000LL)
        return INT64_MAX;
    return (int64_t)seconds * 1000000000LL;
}

static bool upload_rewindable(const bo_curl_rec *r, long start_pos)
{
    if (!bo_curl_has_upload(r) || r->postfields || r->method == BO_METHOD_MIME)
        return true;
    if (r->seek_fn != NULL)
        return true;
    return r->read_fn == NULL && start_pos >= 0;
}

/* Rewind the upload for another attempt; false when it cannot be. */
static bool rewind_upload(bo_curl_rec *r, long start_pos)
{
    if (!bo_curl_has_upload(r) || r->postfields || r->method == BO_METHOD_MIME)
        return true;
    if (r->seek_fn != NULL)
        return r->seek_fn(r->seek_data, 0, SEEK_SET) == CURL_SEEKFUNC_OK;
    if (r->read_fn == NULL && start_pos >= 0)
        return fseek((FILE *)r->read_data, start_pos, SEEK_SET) == 0;
    return false;
}

/*
 * The program's progress callback, asked while the shim waits between
 * attempts (at least every BO_WAIT_SLICE_NS) with the counters of the
 * attempt in flight at zero.  Non-zero: the program cancels.
 * CURL_PROGRESSFUNC_CONTINUE asks for libcurl's own meter: not a cancel.
 */
int bo_curl_ask_progress(void *ud)
{
    bo_curl_rec *r = ud;
    int rc = 0;

    if (r->noprogress)
        return 0;
    if (r->xferinfo_fn != NULL)
        rc = r->xferinfo_fn(r->progress_data, 0, 0, 0, 0);
    else if (r->progress_fn != NULL)
        rc = r->progress_fn(r->progress_data, 0.0, 0.0, 0.0, 0.0);
    return rc != 0 && rc != CURL_PROGRESSFUNC_CONTINUE;
}

/*
 * The attempt's own timeout: what is left of the program's deadline
 * (rounded up to a whole millisecond; libcurl reads 0 as "none").
 */
static void set_attempt_timeout(bo_curl_rec *r, int64_t deadline)
{
    int64_t left = deadline - bo_core_now_ns();
    long ms = left <= 0 ? 1 : (long)((left + 999999) / 1000000);
    r->real->setopt(r->h, CURLOPT_TIMEOUT_MS, ms < 1 ? 1L : ms);
}

bo_curl_rec *bo_curl_managed_rec(const bo_curl_real *real, void *h)
{
    bo_curl_rec *r;
    if (bo_core_config() == NULL || h == NULL || (r = bo_curl_rec_find(h)) == NULL ||
        r->real != real)
        return NULL;
    if (bo_curl_rec_dest(r) == NULL) {
        bo_curl_attempt_reset(r); /* as curl_easy_perform: pass the bytes through */
        return NULL;
    }
    return r;
}

/* The logical request's key: the method and CURLOPT_URL's string (0: a URL
 * set with CURLOPT_CURLU, not recognised across calls). */
static uint64_t xfer_key_of(const void *ctx)
{
    const bo_curl_rec *r = ctx;
    return r->url_key != 0 ? bo_key_add(r->url_key, bo_curl_method_name(r)) : 0;
}

/* The request body's fingerprint, when it is known before it is sent. */
static uint64_t body_fp(const bo_curl_rec *r)
{
    if (r->post_fp != 0)
        return r->post_fp;
    if (r->post_data == NULL)
        return 0;
    return bo_idem_body_fp(r->post_data, r->post_size >= 0 ? (size_t)r->post_size
                                                           : strlen(r->post_data));
}

/*
 * The request's Idempotency-Key.  A request that may not be repeated (not
 * an idempotent method) carries one when the program's header list has one
 * (the program's own is never replaced) or, under BACKOFF_IDEMPOTENCY_KEY,
 * when it is a POST or PATCH whose list does not speak of one: then the
 * shim puts its own in front of the program's list for the call, the same
 * key on every attempt and on the program's own next try of the logical
 * request (`prev`, when it continues one, for the same body), and sets the
 * program's list back at the end (idem_restore).  Either way the request
 * is then retried like an idempotent one.
 */
static void idem_begin(bo_curl_xfer *x, bo_curl_rec *r, const bo_lineage *prev)
{
    const char *m = bo_curl_method_name(r);
    bool had = r->idem_key;

    r->idem_key = r->idem_added = false;
    if (!bo_method_idempotent(m)) {
        bo_idem_line own = BO_IDEM_LINE_OTHER; /* a key wins over an empty mention */
        for (const struct curl_slist *l = r->headers; l != NULL; l = l->next) {
            bo_idem_line k = l->data != NULL ? bo_idem_header_kind(l->data, strlen(l->data))
                                             : BO_IDEM_LINE_OTHER;
            if (k == BO_IDEM_LINE_KEY) {
                own = k;
                break;
            }
            if (k == BO_IDEM_LINE_EMPTY)
                own = k;
        }
        r->idem_key = own == BO_IDEM_LINE_KEY;
        if (bo_core_config()->idempotency_key && bo_idem_wants_key(m, own)) {
            x->idem_body = body_fp(r);
            bo_idem_key_for(prev != NULL ? prev->idem : NULL, prev != NULL ? prev->idem_body : 0,
                            x->idem_body, bo_core_rng_unique(), x->idem);
            bo_idem_header_line(x->idem, r->idem_line, sizeof r->idem_line);
            r->idem_node.data = r->idem_line;
            r->idem_node.next = r->headers; /* in front: no copy, the program's nodes untouched */
            r->real->setopt(r->h, CURLOPT_HTTPHEADER, &r->idem_node);
            r->idem_added = r->idem_key = true;
        }
    }
    if (r->idem_key != had)
        r->cached_status = 0; /* what is retried depends on it */
}

/* The program's header list back as it set it. */
static void idem_restore(bo_curl_rec *r)
{
    if (r->idem_added) {
        r->real->setopt(r->h, CURLOPT_HTTPHEADER, r->headers);
        r->idem_added = false;
    }
}

/*
 * Begin one managed call: its destination, its upload's start, the
 * program's CURLOPT_TIMEOUT(_MS) as the deadline of the whole call, and
 * its Idempotency-Key.
 */
void bo_curl_xfer_begin(bo_curl_xfer *x, bo_curl_rec *r)
{
    *x = (bo_curl_xfer){.rec = r,
                        .sd = bo_curl_rec_dest(r),
                        .deadline = INT64_MAX,
                        .start_pos = -1,
                        .answer_code = -1};
    bo_curl_kept_forget(r);
    x->id = bo_run_call_id();
    if (bo_curl_has_upload(r) && !r->postfields && r->method != BO_METHOD_MIME &&
        r->seek_fn == NULL && r->read_fn == NULL)
        x->start_pos = ftell((FILE *)r->read_data);
    x->rewindable = upload_rewindable(r, x->start_pos);
    int64_t now = bo_core_now_ns();
    /* the logical request: method and URL (bo_budget.h); a program's own
     * retry of a failure continues its attempts and time */
    bo_lineage prev;
    bool continues = bo_run_call_start(&x->call, now, &x->key, xfer_key_of, r, &prev);
    if (r->idem_key || bo_curl_has_upload(r) || r->custom_set)
        idem_begin(x, r, continues ? &prev : NULL);
    if (r->timeout_ms > 0) {
        x->deadline = (int64_t)r->timeout_ms < (INT64_MAX - now) / 1000000
                          ? now + (int64_t)r->timeout_ms * 1000000
                          : INT64_MAX;
        bo_call_set_deadline(&x->call, x->deadline);
    }
}

/*
 * A retry's stall bound.  Without the library the program had its answer
 * at once; a retry whose new connection never answers (a peer that
 * accepts and is silent, a SYN dropped) must not keep it waiting past
 * BACKOFF_CAP_MS, the http room's redial rule (retry.h).  Where the
 * program set none of its own, an attempt made while an answer is kept
 * (kept.h) is ended by libcurl once no byte came for that long
 * (CURLOPT_LOW_SPEED_*, whole seconds) or its connect took that long; the
 * call then ends with the kept answer.  A slow answer that keeps coming is
 * not cut.
 */
static void stall_bound(bo_curl_rec *r)
{
    int64_t cap_ms = bo_core_config()->cap_ms;
    long secs = cap_ms <= 1000 ? 1 : (long)((cap_ms + 999) / 1000);

    if (r->low_speed_time == 0) {
        r->real->setopt(r->h, CURLOPT_LOW_SPEED_LIMIT, 1L);
        r->real->setopt(r->h, CURLOPT_LOW_SPEED_TIME, secs);
        r->stall_forced = true;
    }
    if (r->connect_timeout_ms == 0) {
        r->real->setopt(r->h, CURLOPT_CONNECTTIMEOUT_MS, secs * 1000);
        r->stall_forced = true;
    }
}

static void stall_restore(bo_curl_rec *r)
{
    if (r->stall_forced) {
        r->real->setopt(r->h, CURLOPT_LOW_SPEED_LIMIT, r->low_speed_limit);
        r->real->setopt(r->h, CURLOPT_LOW_SPEED_TIME, r->low_speed_time);
        r->real->setopt(r->h, CURLOPT_CONNECTTIMEOUT_MS, r->connect_timeout_ms);
        r->stall_forced = false;
    }
}

/*
 * An admitted attempt starts: the retried one's answer kept (libcurl's
 * getinfo still speaks of it), fresh per-attempt state, what is left of
 * the deadline.
 */
void bo_curl_xfer_attempt(bo_curl_xfer *x)
{
    if (x->answer_code >= 0)
        bo_curl_kept_keep(x->rec, x->answer_code);
    x->answer_code = -1;
    bo_curl_attempt_reset(x->rec);
    if (x->deadline != INT64_MAX)
        set_attempt_timeout(x->rec, x->deadline);
    if (x->rec->kept_valid)
        stall_bound(x->rec);
}

/*
 * A retry of a transfer that went over HTTP/2 (prior knowledge or ALPN)
 * takes a connection of its own: libcurl 7.88 reuses the multiplexed
 * connection the throttled stream ended on, and the new stream fails with
 * an HTTP/2 framing error (CURLE_HTTP2, curl's exit 16) where the program
 * without us had its 429.  The program's own CURLOPT_FRESH_CONNECT is set
 * back once the attempt ends (fresh_restore).
 */
static void fresh_for_retry(bo_curl_rec *r)
{
    long v = 0;
    if (r->real->getinfo(r->h, CURLINFO_HTTP_VERSION, &v) == CURLE_OK &&
        v >= CURL_HTTP_VERSION_2_0 && !r->fresh_connect) {
        r->real->setopt(r->h, CURLOPT_FRESH_CONNECT, 1L);
        r->fresh_forced = true;
    }
}

static void fresh_restore(bo_curl_rec *r)
{
    if (r->fresh_forced) {
        r->real->setopt(r->h, CURLOPT_FRESH_CONNECT, (long)r->fresh_connect);
        r->fresh_forced = false;
    }
}

/* What the shim set on the handle for one attempt goes back to the
 * program's: its timeout, its fresh-connect choice, its stall limits. */
static void attempt_options_restore(bo_curl_xfer *x)
{
    bo_curl_rec *r = x->rec;
    if (x->deadline != INT64_MAX)
        r->real->setopt(r->h, CURLOPT_TIMEOUT_MS, r->timeout_ms);
    fresh_restore(r);
    stall_restore(r);
}

/*
 * The attempt ended with `code`: classify it, complete it on the
 * destination.  True: retry no sooner than *until_ns (the upload is
 * rewound; the attempt's held bytes stay until the next one starts, so a
 * cancel before then returns this result).
 */
bool bo_curl_xfer_done(bo_curl_xfer *x, int code_, int64_t *until_ns)
{
    bo_curl_rec *r = x->rec;
    const bo_config *cfg = bo_core_config();
    const char *method = bo_curl_method_name(r);
    CURLcode code = (CURLcode)code_;

    /* the shim's stall bound ended a retry before the program's deadline:
     * this retry is over, the answer the call had stands */
    bool stalled = r->stall_forced && code == CURLE_OPERATION_TIMEDOUT &&
                   (x->deadline == INT64_MAX || bo_core_now_ns() < x->deadline);
    attempt_options_restore(x);

    /* The status of the last HTTP header block libcurl handed over (only
     * HTTP status lines set it, so FTP reply codes never look like HTTP
     * ones); with FAILONERROR libcurl may stop before handing it over. */
    long status = r->block_status, req_size = 1;
    curl_off_t ra = 0;
    if (status == 0 && code == CURLE_HTTP_RETURNED_ERROR)
        r->real->getinfo(r->h, CURLINFO_RESPONSE_CODE, &status);
    if (code != CURLE_OK) /* whether it was sent matters only for failures */
        r->real->getinfo(r->h, CURLINFO_REQUEST_SIZE, &req_size);
    /* A UNIX socket follows connect()'s rule: a refused or missing socket
     * means "nothing here" (handed back at once, as without the library)
     * until it has served once in this process; then it is restarting. */
    bool unix_refused = r->unix_sock && code == CURLE_COULDNT_CONNECT;
    long os_errno = 0;
    if (unix_refused && (r->real->getinfo(r->h, CURLINFO_OS_ERRNO, &os_errno) != CURLE_OK ||
                         os_errno <= 0))
        os_errno = ECONNREFUSED;
    if (r->unix_sock && code == CURLE_OK && !__atomic_load_n(&x->sd->alive, __ATOMIC_RELAXED))
        __atomic_store_n(&x->sd->alive, 1, __ATOMIC_RELAXED);
    bo_attempt a = {.curl_code = (int)code,
                    .http_status = (int)status,
                    .method = method,
                    .body_delivered = r->delivered,
                    .has_upload = bo_curl_has_upload(r),
                    .upload_rewindable = x->rewindable,
                    .request_sent = req_size > 0,
                    .connect_errno = unix_refused ? (int)os_errno : 0,
                    .connect_unix = unix_refused,
                    .connect_unknown = unix_refused &&
                                       !__atomic_load_n(&x->sd->alive, __ATOMIC_RELAXED),
                    .idempotency_key = r->idem_key,
                    .quota_exhausted = bo_answer_quota_spent(&r->rl)};
    bo_run_result res = {.outcome = bo_classify(cfg, &a),
                          .retry_after_ns = -1,
                          .status = (int)status,
                          .code = (int)code,
                          .ratelimit = &r->rl};
    if (res.outcome.verdict != BO_VERDICT_SUCCESS &&
        r->real->getinfo(r->h, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra > 0)
        res.retry_after_ns = retry_after_to_ns(ra);
    if (!bo_run_complete(x->sd, &x->call, &res, x->id, method, x->inflight, until_ns))
        return false;
    if (stalled || !rewind_upload(r, x->start_pos)) {
        bo_run_abandoned(x->sd); /* stalled, or cannot send the body again: this result stands */
        return false;
    }
    fresh_for_retry(r);
    x->answer_code = bo_curl_kept_worth(r, code) ? (int)code : -1;
    return true;
}

/*
 * The call ends with `code`: the held bytes of the attempt that stands go
 * out (a retried attempt's answer when the last one got none: kept.h), and
 * a failure the shim would retry is remembered, so that the program's own
 * next try continues this logical request.
 */
int bo_curl_xfer_end(bo_curl_xfer *x, int code)
{
    bo_curl_rec *r = x->rec;
    code = bo_curl_kept_use(r, code);
    if (r->mode == BO_HOLD_HOLD && bo_curl_commit(r) != 0 && code == CURLE_OK)
        code = CURLE_WRITE_ERROR;
    r->mode = BO_HOLD_PASS;
    idem_restore(r);
    fresh_restore(r);
    stall_restore(r);
    if (code != CURLE_ABORTED_BY_CALLBACK)
        bo_run_call_finish(&x->call, &x->key, xfer_key_of, r, bo_call_failed_retryable(&x->call),
                           x->idem, x->idem_body);
    return code;
}

void bo_curl_xfer_drop(bo_curl_xfer *x)
{
    bo_curl_rec *r = x->rec;
    attempt_options_restore(x);
    r->held_len = 0;
    r->mode = BO_HOLD_PASS;
    bo_curl_kept_forget(r);
    idem_restore(r);
}

int bo_curl_xfer_tick(bo_curl_xfer *x)
{
    return bo_curl_ask_progress(x->rec);
}

