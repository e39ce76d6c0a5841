/*
 * exchange.c: one request and its answer on a connection, as a call of the
 * engine (exchange.h): the records' life (adopted, closed, shut down,
 * given up), the one place a record's state changes (bo_hx_set_state),
 * the call (its destination, its logical request, its completion), the
 * request (admitted before its first byte goes out, read and kept while it
 * may be sent again) and the answer that stands (followed to its end).
 * The answer's judging and a retry's steps are retry.c's, where the steps
 * wait drive.c's (exchange_int.h).  Whatever cannot be done for sure
 * passes through as it is.
 */
#include "http/exchange.h"
#include "http/exchange_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bo_budget.h"
#include "bo_classify.h"
#include "bo_hash.h"
#include "bo_ratelimit.h"
#include "bo_time.h"
#include "bo_url.h"
#include "call/call.h"
#include "call/report.h"
#include "core/core.h"
#include "http/http.h"
#include "http/redial.h"
#include "http/sockwait.h"

/* The kept request: its head, its body up to the cap, the shim's key line. */
#define HX_KEPT_MAX (BO_HTTP_HEAD_MAX + BO_HTTP_BODY_CAP + 1024)

/* ---- the one state setter ------------------------------------------------- */

/* Is the record one the wait hooks must look at (bo_hc_active)? */
static bool wants_waits(const bo_hconn *c)
{
    return c->st == BO_HC_SENT || c->st == BO_HC_RETRY || (c->deliver && bo_hc_held_left(c) > 0) ||
           c->paced_until != 0;
}

void bo_hx_update_active(bo_hconn *c)
{
    bool a = wants_waits(c);
    if (a != c->active) {
        __atomic_store_n(&c->active, a, __ATOMIC_RELAXED);
        __atomic_add_fetch(&bo_hc_active, a ? 1 : -1, __ATOMIC_RELAXED);
    }
}

/* Retries under way in an event loop (their steps are the loop wait's). */
int bo_hx_loop_retries;

void bo_hx_set_state(bo_hconn *c, bo_hc_state st)
{
    bool was = c->st == BO_HC_RETRY && c->loop, is = st == BO_HC_RETRY && c->loop;
    if (was != is)
        __atomic_add_fetch(&bo_hx_loop_retries, is ? 1 : -1, __ATOMIC_RELAXED);
    c->st = st;
    bo_hx_update_active(c);
}

/* ---- the destination and the logical request ------------------------- */

/*
 * A request without Host (HTTP/1.0): the connection's peer address, keyed
 * as bo_url_dest_key keys every destination.
 */
static int peer_key(const bo_config *cfg, int fd, bool https, char *key, size_t keylen)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char a[INET6_ADDRSTRLEN + 2];
    unsigned port;
    size_t n;

    if (getpeername(fd, (struct sockaddr *)&ss, &sl) != 0 ||
        bo_core_addr_text((struct sockaddr *)&ss, sl, a, sizeof a, &n, &port) != 0)
        return -1;
    return bo_url_dest_key(cfg, https ? "https" : "http", https ? 5 : 4, a, n, port, key, keylen);
}

/* The logical request (bo_budget.h): method, destination and target. */
static uint64_t lineage_key(const bo_http_msg *m, const char *dest)
{
    char t[17];
    snprintf(t, sizeof t, "%016llx", (unsigned long long)m->target_hash);
    return bo_key_add(bo_key_add(bo_key_add(BO_KEY_INIT, m->method_text), dest), t);
}

/* ---- the call ------------------------------------------------------------ */

/* The logical request of the connection's request: method, destination
 * and target (0 before its head is whole). */
static uint64_t lineage_key_of(const void *ctx)
{
    const bo_hconn *c = ctx;
    return c->req.head_done ? lineage_key(&c->req, c->dest->key) : 0;
}

/* The call ends before its request went out (the pace holds it back, a
 * signal): the program writes it again, and the logical request the call
 * continues stays as it was for that write.  (Ended as a call that did not
 * fail, the program's own retry of a reset POST lost its first try's
 * Idempotency-Key whenever the pace held its first write back.) */
static void withdraw_call(bo_hconn *c)
{
    if (!c->in_call)
        return;
    bo_block_put(c->dest);
    c->dest = NULL;
    c->in_call = c->admitted = false;
}

/* The call ends: its logical request recorded for the program's next try. */
void bo_hx_end_call(bo_hconn *c, bool failed_retryable)
{
    if (!c->in_call)
        return;
    bo_run_call_finish(&c->call, &c->lkey, lineage_key_of, c, failed_retryable,
                       c->idem_keyed ? c->idem : NULL, c->idem_body);
    withdraw_call(c);
}

/* The call gives up where it stands: an admitted attempt's slot back
 * (counted as a failed call), the call ended. */
void bo_hx_drop_call(bo_hconn *c, bool failed_retryable)
{
    if (!c->in_call)
        return;
    if (c->admitted)
        bo_run_cancel(c->dest, &c->call);
    c->admitted = false;
    bo_hx_end_call(c, failed_retryable);
}

/* The admitted attempt ended: complete it.  True: retry no sooner than *until. */
bool bo_hx_complete(bo_hconn *c, bo_outcome o, int status, int code, int64_t ra_ns,
                     const bo_rl_headers *rl, int64_t *until)
{
    bo_run_result r = {.outcome = o, .retry_after_ns = ra_ns, .status = status, .code = code,
                       .ratelimit = rl};
    c->admitted = false;
    bool retry = bo_run_complete(c->dest, &c->call, &r, c->id, c->req.method_text, c->inflight,
                                 until);
    if (!retry)
        bo_hx_end_call(c, o.verdict != BO_VERDICT_SUCCESS && bo_call_failed_retryable(&c->call));
    return retry;
}

/* The facts bo_classify judges an attempt by. */
bo_outcome bo_hx_classify(const bo_hconn *c, int status, int code, const bo_rl_headers *rl)
{
    bo_attempt a = {.curl_code = code,
                    .http_status = status,
                    .method = c->req.method_text,
                    .body_delivered = 0,
                    .has_upload = c->req.framing != BO_HTTP_FRAMING_NONE,
                    .upload_rewindable = c->kept_ok,
                    .request_sent = true,
                    .idempotency_key = c->req.idem == BO_IDEM_LINE_KEY || c->idem_keyed,
                    .quota_exhausted = bo_answer_quota_spent(rl)};
    return bo_classify(bo_core_config(), &a);
}

/* ---- the records' life ------------------------------------------------------ */

/* What the connection's last exchange left (bytes held for the program,
 * its shutdowns, a deferred throttle, a write held back for the pace):
 * nothing of it carries over to what the fd is now. */
static void forget_exchange(bo_hconn *c)
{
    c->held_len = c->held_off = 0;
    c->deliver = c->shut_wr = c->shut_rd = c->deferred = false;
    c->paced_until = 0;
    c->paced_go = false;
}

/* Under the record's lock: back to NONE, nothing in flight, nothing held. */
void bo_hx_reset(bo_hconn *c)
{
    bo_hx_drop_call(c, false);
    bo_hr_release(c);
    bo_block_put(c->dest_cache);
    c->dest_cache = NULL;
    c->tls = c->https = false;
    c->kept_len = 0;
    c->ssl = NULL;
    c->ssl_slot = -1;
    c->io = NULL;
    c->io_ctx = NULL;
    c->peer_id_known = false;
    forget_exchange(c);
    c->idem_keyed = c->idem_added = false;
    c->inj_len = c->inj_off = 0;
    c->ino = 0;
    bo_hx_set_state(c, BO_HC_NONE);
}

void bo_hx_off(bo_hconn *c)
{
    bo_hx_drop_call(c, false);
    bo_hr_release(c);
    bo_hx_set_state(c, BO_HC_OFF);
}

void bo_hx_adopt(bo_hconn *c, const bo_hx_io *io, const void *ctx, bool tls, bool h2)
{
    c->io = io;
    c->io_ctx = ctx;
    c->tls = c->https = tls;
    forget_exchange(c);
    c->ino = bo_hc_identity(c->fd);
    bo_hx_set_state(c, h2 ? BO_HC_OFF : BO_HC_IDLE);
}

bool bo_hx_same_socket(bo_hconn *c)
{
    if (c->st == BO_HC_NONE || bo_hc_identity(c->fd) == c->ino)
        return true;
    bo_hx_reset(c);
    return false;
}

bool bo_hx_enter(bo_hconn *c)
{
    return bo_hc_lock(c);
}

void bo_hx_leave(bo_hconn *c)
{
    int stale = __atomic_exchange_n(&c->stale, 0, __ATOMIC_RELAXED);
    if (stale == 2)
        bo_hx_reset(c); /* the fd was closed meanwhile */
    else if (stale == 1 && c->st != BO_HC_NONE)
        bo_hx_off(c); /* another thread used the connection meanwhile */
    __atomic_store_n(&c->busy, 0, __ATOMIC_RELEASE);
}

void bo_hx_closed(int fd)
{
    bo_hconn *c;

    if (bo_hc_mark_of(fd) != BO_HC_MARK_NONE)
        bo_hc_set_mark(fd, BO_HC_MARK_NONE);
    if ((c = bo_hc_get(fd)) == NULL || c->st == BO_HC_NONE)
        return;
    if (!bo_hc_trylock(c)) {
        /* a hook of another thread is inside: it resets the record on its way out */
        bo_hc_mark_closed(c);
        return;
    }
    __atomic_store_n(&c->stale, 0, __ATOMIC_RELAXED);
    bo_hx_reset(c);
    __atomic_store_n(&c->busy, 0, __ATOMIC_RELEASE);
}

void bo_hx_shutdown(int fd, int how)
{
    bo_hconn *c = bo_hc_get(fd);

    if (c == NULL || c->st < BO_HC_REQ || !bo_hc_trylock(c))
        return;
    if (how == SHUT_WR || how == SHUT_RDWR)
        c->shut_wr = true;
    if (how == SHUT_RD || how == SHUT_RDWR)
        c->shut_rd = true;
    __atomic_store_n(&c->busy, 0, __ATOMIC_RELEASE);
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
        h = bo_fnv1a(h, s->host, s->host_len);
        if (c->dest_cache != NULL && c->dest_hash == h)
            return bo_block_ref(c->dest_cache);
        if (bo_url_authority_key(cfg, c->https ? "https" : "http", c->https ? 443 : 80, s->host,
                                 s->host_len, key, sizeof key) != 0)
            return NULL; /* not a host, or BACKOFF_HOSTS leaves it out */
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

static void idem_inject(bo_hconn *c, const char *buf, size_t len, const bo_lineage *prev);
static void idem_keep(bo_hconn *c);

/* The request goes as the program wrote it, followed (so that the next one
 * on the connection is known) but no call of the engine. */
static int unmanaged(bo_hconn *c)
{
    c->kept_len = 0;
    c->kept_ok = false;
    bo_hx_set_state(c, BO_HC_REQ);
    return -1;
}

int bo_hx_begin(bo_hconn *c, const char *buf, size_t len, bool dontwait)
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
    c->held_len = c->held_off = 0;
    c->deliver = c->shut_wr = c->shut_rd = c->deferred = c->loop_late = false;
    c->first_byte_ns = 0;
    bo_block *b = destination(c, cfg, s);
    if (b == NULL)
        goto off;
    now = bo_core_now_ns();
    c->dest = b;
    bo_lineage prev;
    bool continues = bo_run_call_start(&c->call, now, &c->lkey, lineage_key_of, c, &prev);
    c->in_call = true;
    c->admitted = c->idem_keyed = c->idem_added = false;
    c->inj_len = c->inj_off = 0;
    c->id = bo_run_call_id();
    bo_step st = bo_run_admit_step(b, &c->call, now, &c->inflight, BO_NS_PER_S, &until);
    if (st == BO_STEP_WAIT && !dontwait && !c->tls && !c->paced_go &&
        bo_hs_nonblocking(c->fd) && bo_hx_polls_itself(c)) {
        /* A program that waits for its socket in a poll of its own (a
         * socket with a timeout, not an event loop): the write waits there,
         * not in the call.  Nothing is written now (EAGAIN); its poll shows
         * the socket writable when the pace says, or before its time runs
         * out (bo_hx_poll_before), and its next write is this one again. */
        withdraw_call(c);
        c->paced_until = until;
        bo_hx_set_state(c, BO_HC_IDLE);
        return EAGAIN;
    }
    if (st == BO_STEP_WAIT && (dontwait || bo_hs_nonblocking(c->fd))) {
        /* An event loop's request never waits inside the call that sends it:
         * it goes now, counted in the window (its retries wait their turn
         * outside the program's calls). */
        st = bo_run_admit_now(b, &c->call, now, &c->inflight) ? BO_STEP_GO : BO_STEP_GIVE_UP;
    } else if (st == BO_STEP_WAIT) {
        /* The window, the pace or another call's Retry-After holds the
         * destination: wait as a blocking send would (a signal without
         * SA_RESTART ends it with EINTR, nothing written), no longer than
         * the socket's send timeout, BACKOFF_MAX_TIME_MS or BACKOFF_CAP_MS. */
        int64_t t = bo_hs_sndtimeo(c->fd);
        int64_t bound = t > 0 ? t
                              : (cfg->max_time_ms > 0 ? cfg->max_time_ms : cfg->cap_ms) *
                                    BO_NS_PER_MS;
        bo_core_busy = 0;
        int a = bo_run_admit_intr(b, &c->call, now + bound, &c->inflight);
        bo_core_busy = 1;
        if (a == EINTR) {
            withdraw_call(c);
            bo_hx_set_state(c, BO_HC_IDLE);
            return EINTR;
        }
        st = a == 0 ? BO_STEP_GO : BO_STEP_GIVE_UP;
    }
    if (st != BO_STEP_GO) {
        bo_hx_end_call(c, false);
        return unmanaged(c); /* no slot in time: this request goes as the program sent it */
    }
    c->admitted = true;
    c->paced_go = false;
    if (c->paced_until != 0) {
        c->paced_until = 0;
        bo_hx_update_active(c);
    }
    c->kept_len = 0;
    c->kept_ok = s->keep == BO_HTTP_KEEP_OK; /* a body over the cap is sent once, never again */
    if (cfg->idempotency_key && bo_idem_wants_key(s->method_text, (bo_idem_line)s->idem))
        idem_inject(c, buf, len, continues ? &prev : NULL);
    bo_hx_set_state(c, BO_HC_REQ);
    return 0;
off:
    bo_hx_off(c);
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
        bo_hx_off(c); /* pipelined, a tunnel, an Expect: not ours */
        return;
    }
    if (c->kept_ok && (k != BO_HTTP_KEEP_OK || keep_append(c, buf, used) != 0))
        c->kept_ok = false; /* over the cap: sent once, never again */
    idem_keep(c);
    if (rc == BO_HTTP_DONE)
        bo_hx_set_state(c, BO_HC_SENT);
}

/*
 * BACKOFF_IDEMPOTENCY_KEY (bo_idem_wants_key: a POST or PATCH that carries
 * no key): the request gets the shim's key from its first attempt on, the
 * libcurl room's rule, so that a failure after the server may have
 * processed it (a reset, a 502) is retried as for a request with a key,
 * and the server replays its stored answer.  The key is the program's
 * previous try's when this call continues one (bo_idem_key_for: for the
 * same body, known when it is whole in the first write), so that the
 * program's own retry is one request to the server too.  The line goes
 * into the first write before the head's blank line (c->inj: the hooks
 * write those bytes in place of the program's, bo_hx_inject) and into the
 * kept request as its bytes are kept (idem_keep).
 */
static void idem_inject(bo_hconn *c, const char *buf, size_t len, const bo_lineage *prev)
{
    const bo_http_msg *s = &c->req;
    char line[BO_IDEM_LINE_SIZE + 2];
    uint64_t body = 0;

    if (s->head_len < 4 || s->head_len > len)
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

/* The key's line into the kept request, once its head is kept whole. */
static void idem_keep(bo_hconn *c)
{
    char line[BO_IDEM_LINE_SIZE + 2];

    if (!c->idem_keyed || c->idem_added || !c->kept_ok || c->req.head_len < 4 ||
        c->req.head_len > c->kept_len)
        return;
    size_t l = bo_idem_header_line(c->idem, line, sizeof line - 2);
    memcpy(line + l, "\r\n", 2);
    l += 2;
    if (keep_append(c, line, l) != 0) { /* room at the end, then moved into place */
        c->kept_ok = false;
        return;
    }
    size_t at = c->req.head_len - 2; /* before the blank line */
    memmove(c->kept + at + l, c->kept + at, c->kept_len - l - at);
    memcpy(c->kept + at, line, l);
    c->idem_added = true;
}

/* ---- the answer that stands -------------------------------------------------- */

void bo_hx_rl_line(void *ctx, const char *line, size_t len)
{
    (void)bo_rl_header_line(ctx, line, len);
}

/* The answer stands: the program reads it, the hooks follow it to its end
 * (from the head read at the judging when it was whole: its bytes are
 * skipped, the body read; else from the answer's first byte). */
void bo_hx_stands(bo_hconn *c)
{
    if (c->resp.head_done && c->resp.rc != BO_HTTP_NOT_HTTP && c->resp.rc != BO_HTTP_TOO_LARGE) {
        c->resp_skip = c->resp.head_len;
    } else {
        bo_http_msg_response(&c->resp, c->req.method);
        c->resp_skip = 0;
    }
    c->deferred = false;
    bo_hx_set_state(c, BO_HC_PASS);
}

void bo_hx_consumed(bo_hconn *c, const char *buf, size_t n)
{
    size_t used = 0, skip = 0;
    bo_http_rc rc;

    if (c->deliver && bo_hc_held_left(c) == 0) {
        c->deliver = false; /* the answer held for the program went to it */
        bo_hx_update_active(c);
    }
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
        bo_hx_off(c); /* not HTTP after all, more than one answer, or a tunnel */
    else
        bo_hx_set_state(c, BO_HC_IDLE);
}

/* ---- fork ------------------------------------------------------------------ */

/*
 * The child has the parent's fds, so the records stay; but only the
 * forking thread came along: a record some other thread was inside, and
 * any call in flight or retry under way (the parent's attempt, counted in
 * the parent's window), is left alone for good (OFF) without completing
 * anything; the descriptors a retry made are the parent's to use.
 */
static void child_one(bo_hconn *c, void *ud)
{
    (void)ud;
    bool busy = c->busy != 0;
    c->busy = c->stale = 0;
    if (busy || c->in_call || c->st == BO_HC_REQ || c->st == BO_HC_SENT ||
        c->st == BO_HC_RETRY) {
        c->in_call = c->admitted = false; /* the parent's: not ours to complete */
        c->dest = c->dest_cache = NULL;
        bo_hr_release(c);
        c->deliver = false;
        c->st = BO_HC_OFF;
    }
    __atomic_store_n(&c->active, false, __ATOMIC_RELAXED);
}

void bo_http_child_fork(void)
{
    bo_hc_child_fork_table();
    bo_hc_active = 0;
    bo_hx_loop_retries = 0;
    bo_hc_each(child_one, NULL);
}
