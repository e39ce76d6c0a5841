/*
 * exchange.c: one request and its answer on a connection, as a call of the
 * engine (exchange.h).  Every attempt is admitted before its first byte
 * goes out, like a libcurl transfer's; the answer is looked at without
 * being consumed, judged by policies/ (bo_http reads it, bo_classify
 * judges it, the engine decides through call/), and only a retried answer
 * is ever taken from the program's view: consumed whole on the same
 * connection, or left behind with the old socket when a new one takes its
 * fd.  Whatever cannot be done for sure passes through as it is.
 */
#include "http/exchange.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "bo_budget.h"
#include "bo_classify.h"
#include "bo_ratelimit.h"
#include "bo_time.h"
#include "call/call.h"
#include "core/core.h"

/* How long the rest of a throttle's head, or of the small body that lets
 * the same connection carry the retry, may take once its first bytes came;
 * past it the answer passes through (or the retry takes a new connection). */
#define HX_MORE_NS (1000 * BO_NS_PER_MS)
/* A new connection's and a send's bound when the call has no deadline. */
#define HX_IO_NS (30 * BO_NS_PER_S)
/* The kept request: its head, its body up to the cap, the shim's key line. */
#define HX_KEPT_MAX (BO_HTTP_HEAD_MAX + BO_HTTP_BODY_CAP + 1024)

/* ---- the destination and the logical request ------------------------- */

static bool host_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '.' || ch == '-' || ch == '_' || ch == '~' || ch == '%' || ch == ':';
}

/*
 * The destination of a request whose Host is host:port (a name, an IPv4
 * literal, [IPv6]; no port: the scheme's), as the libcurl room keys a URL
 * of that origin: "scheme://host:port" in lower case, so that a program
 * on libcurl and one on sockets share one state per destination.  -1 when
 * the value is not such a host or BACKOFF_HOSTS leaves it out.
 */
static int host_key(const bo_config *cfg, const bo_http_msg *m, bool https, char *key,
                    size_t keylen)
{
    const char *h = m->host, *port = NULL;
    size_t n = m->host_len, hl, from = 0, nl;
    unsigned p = https ? 443 : 80;
    char name[BO_HTTP_HOST_MAX + 1];

    if (h[0] == '[') {
        const char *e = memchr(h, ']', n);
        if (e == NULL)
            return -1;
        hl = (size_t)(e - h) + 1;
        from = 1;
        nl = hl - 2;
        if (hl < n && h[hl] != ':')
            return -1;
    } else {
        const char *colon = memchr(h, ':', n);
        hl = colon != NULL ? (size_t)(colon - h) : n;
        nl = hl;
    }
    if (hl < n)
        port = h + hl + 1;
    if (hl == 0 || nl == 0)
        return -1;
    for (size_t i = 0; i < hl; i++)
        if (!host_char(h[i]) && h[i] != '[' && h[i] != ']')
            return -1;
    if (port != NULL && port < h + n) {
        unsigned v = 0;
        for (const char *q = port; q < h + n; q++) {
            if (*q < '0' || *q > '9' || v > 65535)
                return -1;
            v = v * 10 + (unsigned)(*q - '0');
        }
        if (v == 0 || v > 65535)
            return -1;
        p = v;
    }
    for (size_t i = 0; i < nl; i++)
        name[i] = (char)((h[from + i] >= 'A' && h[from + i] <= 'Z') ? h[from + i] + 32
                                                                    : h[from + i]);
    name[nl] = '\0';
    if (cfg->n_hosts > 0 && !bo_config_host_matches(cfg, name, (int)p))
        return -1;
    int w = from ? snprintf(key, keylen, "%s://[%s]:%u", https ? "https" : "http", name, p)
                 : snprintf(key, keylen, "%s://%s:%u", https ? "https" : "http", name, p);
    return w > 0 && (size_t)w < keylen ? 0 : -1;
}

/* A request without Host (HTTP/1.0): the connection's peer address. */
static int peer_key(const bo_config *cfg, int fd, bool https, char *key, size_t keylen)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char a[INET6_ADDRSTRLEN];
    unsigned port;
    int w;

    if (getpeername(fd, (struct sockaddr *)&ss, &sl) != 0)
        return -1;
    if (ss.ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)&ss;
        if (inet_ntop(AF_INET, &in->sin_addr, a, sizeof a) == NULL)
            return -1;
        port = ntohs(in->sin_port);
    } else if (ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&ss;
        if (inet_ntop(AF_INET6, &in6->sin6_addr, a, sizeof a) == NULL)
            return -1;
        port = ntohs(in6->sin6_port);
    } else {
        return -1;
    }
    if (cfg->n_hosts > 0 && !bo_config_host_matches(cfg, a, (int)port))
        return -1;
    w = ss.ss_family == AF_INET6
            ? snprintf(key, keylen, "%s://[%s]:%u", https ? "https" : "http", a, port)
            : snprintf(key, keylen, "%s://%s:%u", https ? "https" : "http", a, port);
    return w > 0 && (size_t)w < keylen ? 0 : -1;
}

/* The logical request (bo_budget.h): method, destination and target. */
static uint64_t lineage_key(const bo_http_msg *m, const char *dest)
{
    char t[17];
    snprintf(t, sizeof t, "%016llx", (unsigned long long)m->target_hash);
    return bo_key_add(bo_key_add(bo_key_add(BO_KEY_INIT, m->method_text), dest), t);
}

/* ---- the call ------------------------------------------------------------ */

/* The call ends: its logical request recorded for the program's next try. */
static void end_call(bo_hconn *c, bool failed_retryable)
{
    if (!c->in_call)
        return;
    if (c->lkey == 0 && failed_retryable && c->req.head_done)
        c->lkey = lineage_key(&c->req, c->dest->key);
    bo_lineage_call_end(c->lkey, &c->call, failed_retryable, c->idem_added ? c->idem : NULL, 0);
    bo_block_put(c->dest);
    c->dest = NULL;
    c->in_call = c->admitted = false;
}

void bo_hx_drop(bo_hconn *c)
{
    if (!c->in_call)
        return;
    if (c->admitted)
        bo_run_cancel(c->dest, &c->call); /* its slot back; counted as a failed call */
    c->admitted = false;
    end_call(c, false);
}

/* The admitted attempt ended: complete it.  True: retry no sooner than *until. */
static bool complete(bo_hconn *c, bo_outcome o, int status, int code, int64_t ra_ns,
                     const bo_rl_headers *rl, int64_t *until)
{
    bo_run_result r = {.outcome = o, .retry_after_ns = ra_ns, .status = status, .code = code,
                       .ratelimit = rl};
    c->admitted = false;
    bool retry = bo_run_complete(c->dest, &c->call, &r, c->id, c->req.method_text, c->inflight,
                                 until);
    if (!retry)
        end_call(c, o.verdict != BO_VERDICT_SUCCESS && bo_call_failed_retryable(&c->call));
    return retry;
}

/* The facts bo_classify judges an attempt by. */
static bo_outcome classify(const bo_hconn *c, int status, int code)
{
    bo_attempt a = {.curl_code = code,
                    .http_status = status,
                    .method = c->req.method_text,
                    .body_delivered = 0,
                    .has_upload = c->req.framing != BO_HTTP_FRAMING_NONE,
                    .upload_rewindable = c->kept_ok,
                    .request_sent = true,
                    .idempotency_key = c->req.idempotency_key || c->idem_added};
    return bo_classify(bo_core_config(), &a);
}

/* ---- the request ------------------------------------------------------------ */

static int keep_append(bo_hconn *c, const char *buf, size_t n)
{
    if (c->kept_len + n > HX_KEPT_MAX)
        return -1;
    if (c->kept_len + n > c->kept_cap) {
        size_t cap = c->kept_cap ? c->kept_cap : 4096;
        while (cap < c->kept_len + n)
            cap *= 2;
        if (cap > HX_KEPT_MAX)
            cap = HX_KEPT_MAX;
        char *k = realloc(c->kept, cap);
        if (k == NULL)
            return -1;
        c->kept = k;
        c->kept_cap = cap;
    }
    memcpy(c->kept + c->kept_len, buf, n);
    c->kept_len += n;
    return 0;
}

/*
 * The destination of request s: the connection's last one when it went to
 * the same Host (a reference kept in the record: no key made, no lookup),
 * else its block from the table (a new reference), remembered.  NULL when
 * the request is not one to manage.
 */
static bo_block *destination(bo_hconn *c, const bo_config *cfg, const bo_http_msg *s)
{
    char key[BO_DEST_KEY_LEN];
    uint64_t h = BO_KEY_INIT ^ (uint64_t)c->https;

    if (s->has_host && !s->host_long) {
        for (size_t i = 0; i < s->host_len; i++)
            h = (h ^ (unsigned char)s->host[i]) * 0x100000001b3ULL;
        if (c->dest_cache != NULL && c->dest_hash == h)
            return bo_block_ref(c->dest_cache);
        if (host_key(cfg, s, c->https, key, sizeof key) != 0)
            return NULL;
    } else if (peer_key(cfg, c->fd, c->https, key, sizeof key) != 0) {
        return NULL;
    } else {
        h = 0; /* never the cache's */
    }
    bo_block *b = bo_block_get(key);
    if (b != NULL && h != 0) {
        bo_block_put(c->dest_cache);
        c->dest_cache = bo_block_ref(b);
        c->dest_hash = h;
    }
    return b;
}

int bo_hx_begin(bo_hconn *c, const bo_hx_io *io, void *ctx, const char *buf, size_t len)
{
    const bo_config *cfg = bo_core_config();
    bo_http_msg *s = &c->req;
    size_t used;
    int64_t now, until;

    if (cfg == NULL || !cfg->http_hook)
        goto off;
    if (c->peek == NULL && (c->peek = malloc(BO_HC_PEEK_MAX)) == NULL)
        goto off;
    /* The head is read here, before it is written: bo_hx_sent goes on after it. */
    bo_http_msg_request(s);
    if (bo_http_feed_head(s, buf, len, &used) != BO_HTTP_DONE ||
        (s->keep != BO_HTTP_KEEP_OK && s->keep != BO_HTTP_KEEP_BODY_CAP))
        goto off; /* its head not in this write, not HTTP/1.x, a tunnel or an Expect */
    c->fed_ahead = used;
    bo_block *b = destination(c, cfg, s);
    if (b == NULL)
        goto off;
    now = bo_core_now_ns();
    bo_call_begin(&c->call, now);
    c->lkey = bo_lineage_pending() ? lineage_key(s, b->key) : 0;
    (void)bo_lineage_call_begin(c->lkey, &c->call, NULL);
    c->dest = b;
    c->in_call = true;
    c->admitted = c->idem_added = false;
    c->id = bo_run_call_id();
    bo_step st = bo_run_admit_step(b, &c->call, now, &c->inflight, BO_POLL_ADMIT_NS, &until);
    if (st == BO_STEP_WAIT) {
        /* The window, the pace or another call's Retry-After holds the
         * destination: wait as a blocking send would (a signal without
         * SA_RESTART ends it with EINTR, nothing written), no longer than
         * the socket's send timeout, BACKOFF_MAX_TIME_MS or BACKOFF_CAP_MS. */
        int64_t t = io->sndtimeo(c, ctx);
        int64_t bound = t > 0 ? t
                              : (cfg->max_time_ms > 0 ? cfg->max_time_ms : cfg->cap_ms) *
                                    BO_NS_PER_MS;
        bo_core_busy = 0;
        int a = bo_run_admit_intr(b, &c->call, now + bound, &c->inflight);
        bo_core_busy = 1;
        if (a == EINTR) {
            end_call(c, false);
            return EINTR;
        }
        st = a == 0 ? BO_STEP_GO : BO_STEP_GIVE_UP;
    }
    if (st != BO_STEP_GO) {
        end_call(c, false);
        goto off; /* no slot in time: this request goes as the program sent it */
    }
    c->admitted = true;
    c->kept_len = 0;
    c->kept_ok = s->keep == BO_HTTP_KEEP_OK; /* a body over the cap is sent once, never again */
    c->st = BO_HC_REQ;
    return 0;
off:
    c->st = BO_HC_OFF;
    return -1;
}

void bo_hx_sent(bo_hconn *c, const char *buf, size_t n)
{
    size_t used = 0, ahead = n < c->fed_ahead ? n : c->fed_ahead;

    if (c->st != BO_HC_REQ || n == 0)
        return;
    /* the head's bytes were read already (bo_hx_begin): the rest is read now */
    c->fed_ahead -= ahead;
    bo_http_rc rc = bo_http_feed(&c->req, buf + ahead, n - ahead, &used);
    used += ahead;
    bo_http_keep k = c->req.keep;
    if (rc == BO_HTTP_NOT_HTTP || rc == BO_HTTP_TOO_LARGE ||
        (k != BO_HTTP_KEEP_OK && k != BO_HTTP_KEEP_BODY_CAP)) {
        bo_hc_off(c); /* pipelined, a tunnel, an Expect: not ours */
        return;
    }
    if (c->kept_ok && (k != BO_HTTP_KEEP_OK || keep_append(c, buf, used) != 0))
        c->kept_ok = false; /* over the cap: sent once, never again */
    if (rc == BO_HTTP_DONE)
        c->st = BO_HC_SENT;
}

/*
 * BACKOFF_IDEMPOTENCY_KEY: a POST or PATCH that carries no key gets the
 * shim's in its retries.  Its first attempt went out before the shim could
 * add anything, so it is judged without one (bo_classify retries it only
 * when the answer says it was not processed: 429, 503); from the first
 * retry on every attempt carries the same key, and a failure of one of
 * them (a reset, a 502) is retried as for a request with a key.
 */
static void idem_add(bo_hconn *c)
{
    const char *m = c->req.method_text;
    char line[BO_IDEM_LINE_SIZE + 2];

    if (c->idem_added || c->req.idempotency_key || !bo_core_config()->idempotency_key ||
        (strcmp(m, "POST") != 0 && strcmp(m, "PATCH") != 0) || c->req.head_len < 4 ||
        c->req.head_len > c->kept_len)
        return;
    bo_idem_key_new(bo_core_rng_unique(), c->idem);
    size_t l = bo_idem_header_line(c->idem, line, sizeof line - 2);
    if (l >= sizeof line - 2 || c->kept_len + l + 2 > HX_KEPT_MAX)
        return;
    memcpy(line + l, "\r\n", 2);
    l += 2;
    if (keep_append(c, line, l) != 0) /* room at the end, then moved into place */
        return;
    size_t at = c->req.head_len - 2; /* before the blank line */
    memmove(c->kept + at + l, c->kept + at, c->kept_len - l - at);
    memcpy(c->kept + at, line, l);
    c->idem_added = true;
}

/* ---- the answer -------------------------------------------------------------- */

static void rl_line(void *ctx, const char *line, size_t len)
{
    (void)bo_rl_header_line(ctx, line, len);
}

/* The answer stands: the program reads it, the hooks follow it to its end
 * (from the head read at the judging when it was whole: its bytes are
 * skipped, the body read; else from the answer's first byte). */
static bo_hx_verdict pass(bo_hconn *c)
{
    if (c->resp.head_done && c->resp.rc != BO_HTTP_NOT_HTTP && c->resp.rc != BO_HTTP_TOO_LARGE) {
        c->resp_skip = c->resp.head_len;
    } else {
        bo_http_msg_response(&c->resp, c->req.method);
        c->resp_skip = 0;
    }
    c->st = BO_HC_PASS;
    return BO_HX_PASS;
}

static bo_hx_verdict off(bo_hconn *c)
{
    bo_hc_off(c);
    return BO_HX_OFF;
}

/*
 * Is the answer looked at so far (n bytes, its head read into c->resp) a
 * whole message, its length in *total?  Waits a little for a body still on
 * its way.  A close-delimited answer never is (its end is the close).
 */
static bool whole_answer(bo_hconn *c, const bo_hx_io *io, void *ctx, ssize_t n, size_t *total)
{
    int64_t until = bo_core_now_ns() + HX_MORE_NS;

    if (c->resp.framing == BO_HTTP_FRAMING_CLOSE || c->resp.framing == BO_HTTP_FRAMING_TUNNEL)
        return false;
    ssize_t now = io->look(c, ctx, true); /* all that came by now, maybe more than n */
    if (now > n)
        n = now;
    for (;;) {
        bo_http_msg m = c->resp;
        size_t used;
        bo_http_rc rc = bo_http_feed(&m, c->peek + c->resp.head_len,
                                     (size_t)n - c->resp.head_len, &used);
        if (rc == BO_HTTP_DONE) {
            *total = c->resp.head_len + used;
            return true;
        }
        if (rc != BO_HTTP_NEED_MORE || n >= BO_HC_PEEK_MAX ||
            io->more(c, ctx, (size_t)n, until) <= 0)
            return false;
        ssize_t k = io->look(c, ctx, true);
        if (k <= n)
            return false;
        n = k;
    }
}

/*
 * The retry of the attempt just completed, at `until`: the wait and the
 * admission on the program's behalf (a signal without SA_RESTART ends them,
 * as it would have interrupted the read), then the request sent again on
 * the same connection, freed of the retried answer (n bytes looked at),
 * or on a new one.  0: the retry is in flight; -1: it could not be made,
 * and nothing of the last answer was taken (the call has ended: that
 * answer stands).
 */
static int retry(bo_hconn *c, const bo_hx_io *io, void *ctx, int64_t until, ssize_t n,
                 bool answered)
{
    size_t total = 0;
    int rc;

    bo_core_busy = 0;
    rc = bo_run_wait_until(c->dest, until);
    if (rc == 0)
        rc = bo_run_admit_intr(c->dest, &c->call, c->call.deadline_ns, &c->inflight);
    bo_core_busy = 1;
    if (rc != 0) {
        if (rc == EINTR)
            bo_run_abandoned(c->dest);
        end_call(c, true);
        return -1;
    }
    c->admitted = true;
    int64_t io_until = bo_core_now_ns() + HX_IO_NS;
    if (c->call.deadline_ns < io_until)
        io_until = c->call.deadline_ns;
    idem_add(c);
    bool whole = answered && (c->resp.keep_alive || io->redial_holds) &&
                 whole_answer(c, io, ctx, n, &total);
    if (whole && c->resp.keep_alive) {
        /* consumed whole: from here on the answer is gone either way (but a
         * transport that cannot redial takes nothing from a connection that
         * cannot carry the request: the answer stands) */
        if (io->drop(c, ctx, total)) {
            if (io->send(c, ctx, c->kept, c->kept_len, io_until) == 0)
                return 0;
        } else if (io->same_only) {
            bo_hx_drop(c);
            return -1;
        }
    } else {
        size_t answer = !answered ? 0 : whole ? total : BO_HX_NOT_WHOLE;
        if (io->redial(c, ctx, io_until, answer) != 0) {
            bo_hx_drop(c); /* the admitted retry never ran; the answer stands */
            return -1;
        }
        if (io->send(c, ctx, c->kept, c->kept_len, io_until) == 0)
            return 0;
    }
    /* The request did not go out again: once more on a new connection, else
     * the program meets that failure (the answer it replaces is gone). */
    if (io->redial(c, ctx, io_until, 0) == 0 &&
        io->send(c, ctx, c->kept, c->kept_len, io_until) == 0)
        return 0;
    return 1;
}

/*
 * After a retry went out on a blocking socket: wait for its answer's first
 * byte as long as the program's read would (SO_RCVTIMEO), else
 * BO_HX_ANSWER_NS.  0 when something came (or the peer closed); EAGAIN.
 */
static int await_answer(bo_hconn *c, const bo_hx_io *io, void *ctx)
{
    int64_t t = io->rcvtimeo(c, ctx);
    int64_t until = bo_core_now_ns() + (t > 0 ? t : BO_HX_ANSWER_NS);
    return io->more(c, ctx, 0, until) == 0 ? EAGAIN : 0;
}

bo_hx_verdict bo_hx_judge(bo_hconn *c, const bo_hx_io *io, void *ctx, bool nb, int *err)
{
    bo_rl_headers rl;
    int64_t until;
    bool retried = false;

    if (!c->in_call || !c->admitted)
        return off(c);
    for (;;) {
        if (retried && !io->nonblocking(c, ctx) && await_answer(c, io, ctx) != 0) {
            *err = EAGAIN; /* as the read's own timeout would end it */
            return BO_HX_ERR;
        }
        ssize_t n = io->look(c, ctx, nb || retried);
        int status = 0, code = BO_CURLE_OK, e = errno;
        bool answered = n > 0;

        if (n < 0 && (e == EAGAIN || e == EWOULDBLOCK || e == EINTR)) {
            *err = e; /* nothing yet: the program polls, or its signal came */
            return BO_HX_ERR;
        }
        if (n > 0) {
            bo_rl_headers_reset(&rl);
            bo_http_rc rc = bo_http_parse_response(c->peek, (size_t)n, c->req.method, &c->resp,
                                                   rl_line, &rl);
            if (rc == BO_HTTP_NOT_HTTP || rc == BO_HTTP_TOO_LARGE) {
                bo_hx_drop(c);
                return off(c);
            }
            status = c->resp.status;
            if (rc == BO_HTTP_NEED_MORE) {
                bool final = status >= 200;
                if (final && classify(c, status, BO_CURLE_OK).verdict != BO_VERDICT_RETRY) {
                    (void)complete(c, classify(c, status, BO_CURLE_OK), status, BO_CURLE_OK, -1,
                                   NULL, &until);
                    return pass(c); /* not a throttle: its head is not needed whole */
                }
                int m = n < BO_HC_PEEK_MAX
                            ? io->more(c, ctx, (size_t)n, bo_core_now_ns() + HX_MORE_NS)
                            : -1;
                if (m > 0)
                    continue;
                if (!final) { /* no status in time: an answer the hooks cannot read */
                    bo_hx_drop(c);
                    return off(c);
                }
                /* a throttle whose head does not come whole: it stands */
                bo_outcome fin = {BO_VERDICT_FINAL, BO_SIGNAL_NONE, false, BO_CAUSE_NONE};
                (void)complete(c, fin, status, BO_CURLE_OK, -1, NULL, &until);
                return pass(c);
            }
        } else {
            /* closed or failed before any byte of an answer */
            code = n == 0 ? BO_CURLE_GOT_NOTHING : BO_CURLE_RECV_ERROR;
        }
        bo_outcome o = classify(c, status, code);
        int64_t ra = answered ? bo_http_retry_after_ns(&c->resp, bo_core_wall_ns() / BO_NS_PER_S)
                              : -1;
        if (o.verdict == BO_VERDICT_RETRY && c->call.deadline_ns == INT64_MAX) {
            int64_t t = io->rcvtimeo(c, ctx); /* a wait never outlasts the read's timeout */
            if (t > 0)
                bo_call_set_deadline(&c->call, bo_core_now_ns() + t);
        }
        if (o.verdict == BO_VERDICT_RETRY && !c->kept_ok)
            o.verdict = BO_VERDICT_FINAL; /* cannot be sent again */
        size_t total;
        if (o.verdict == BO_VERDICT_RETRY && io->same_only &&
            !(answered && c->resp.keep_alive && whole_answer(c, io, ctx, n, &total)))
            o.verdict = BO_VERDICT_FINAL; /* no connection to send it on: it stands now */
        bool again = complete(c, o, status, code, ra, answered ? &rl : NULL, &until);
        int r = again ? retry(c, io, ctx, until, n, answered) : -1;
        if (r == 0) {
            retried = true;
            continue; /* judge the retry's answer */
        }
        if (r == 1) {
            /* the retry could not be sent and the last answer is gone */
            bo_outcome fail = {BO_VERDICT_FINAL, BO_SIGNAL_LOSS, false, BO_CAUSE_CONNECT};
            (void)complete(c, fail, 0, BO_CURLE_SEND_ERROR, -1, NULL, &until);
            c->held_len = c->held_off = 0; /* nothing of the replaced answer is left */
            bo_hc_off(c);
            *err = ECONNRESET;
            return BO_HX_ERR;
        }
        if (answered)
            return pass(c);
        bo_hc_off(c);
        if (n == 0)
            return BO_HX_OFF; /* the program's read meets the close itself */
        *err = e;
        return BO_HX_ERR;
    }
}

void bo_hx_consumed(bo_hconn *c, const char *buf, size_t n)
{
    size_t used = 0, skip = 0;
    bo_http_rc rc;

    if (c->st != BO_HC_PASS)
        return;
    if (n == 0) {
        rc = bo_http_eof(&c->resp); /* the peer closed */
    } else {
        /* the head's bytes read at the judging, then the body */
        skip = n < c->resp_skip ? n : c->resp_skip;
        c->resp_skip -= skip;
        if (c->resp_skip > 0)
            return;
        rc = bo_http_feed(&c->resp, buf + skip, n - skip, &used);
    }
    if (rc == BO_HTTP_NEED_MORE)
        return;
    if (rc != BO_HTTP_DONE || skip + used < n || c->resp.framing == BO_HTTP_FRAMING_TUNNEL)
        bo_hc_off(c); /* not HTTP after all, more than one answer, or a tunnel */
    else
        c->st = BO_HC_IDLE;
}
