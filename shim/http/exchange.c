/*
 * exchange.c: one request and its answer on a connection, as a call of the
 * engine (exchange.h).  Every attempt is admitted before its first byte
 * goes out, like a libcurl transfer's; the answer is looked at without
 * being consumed, judged by policies/ (bo_http reads it, bo_classify
 * judges it, the engine decides through call/), and only an answer the
 * engine retries is ever taken from the program's view: held aside (in
 * case the retry is abandoned, when the program gets it as it came) while
 * the retry waits where the program waits, then dropped when the request
 * goes out again on the same connection or a new one.  Whatever cannot be
 * done for sure passes through as it is.  This file is the one place a
 * record's state changes (set_state).
 */
#include "http/exchange.h"

#include <arpa/inet.h>
#include <dirent.h>
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
#include "bo_ratelimit.h"
#include "bo_time.h"
#include "call/call.h"
#include "call/report.h"
#include "core/core.h"
#include "http/http.h"
#include "http/redial.h"
#include "http/sock.h"

/* How long the rest of a throttle's head, or of the small body that lets
 * it be taken out whole, may take once its first bytes came; past it the
 * answer passes through. */
#define HX_MORE_NS (1000 * BO_NS_PER_MS)
/* A blocking retry's connect, handshake and send, when the call has no
 * deadline. */
#define HX_IO_NS (30 * BO_NS_PER_S)
/* A wait hook's look at a throttle head still arriving in pieces. */
#define HX_PIECE_NS (2 * BO_NS_PER_MS)
/* The sweep of requests whose socket the program closed unseen, at most so often. */
#define HX_SWEEP_NS (1000 * BO_NS_PER_MS)
/* The kept request: its head, its body up to the cap, the shim's key line. */
#define HX_KEPT_MAX (BO_HTTP_HEAD_MAX + BO_HTTP_BODY_CAP + 1024)

/* ---- the one state setter ------------------------------------------------- */

/* Is the record one the wait hooks must look at (bo_hc_active)? */
static bool wants_waits(const bo_hconn *c)
{
    return c->st == BO_HC_SENT || c->st == BO_HC_RETRY || (c->deliver && bo_hc_held_left(c) > 0);
}

static void update_active(bo_hconn *c)
{
    bool a = wants_waits(c);
    if (a != c->active) {
        c->active = a;
        __atomic_add_fetch(&bo_hc_active, a ? 1 : -1, __ATOMIC_RELAXED);
    }
}

static void set_state(bo_hconn *c, bo_hc_state st)
{
    c->st = st;
    update_active(c);
}

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

/* The call gives up where it stands: an admitted attempt's slot back
 * (counted as a failed call), the call ended. */
static void drop_call(bo_hconn *c, bool failed_retryable)
{
    if (!c->in_call)
        return;
    if (c->admitted)
        bo_run_cancel(c->dest, &c->call);
    c->admitted = false;
    end_call(c, failed_retryable);
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

/* ---- the records' life ------------------------------------------------------ */

/* Under the record's lock: back to NONE, nothing in flight, nothing held. */
static void reset(bo_hconn *c)
{
    drop_call(c, false);
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
    c->held_len = c->held_off = 0;
    c->deliver = c->shut_wr = c->shut_rd = c->deferred = false;
    c->ino = 0;
    set_state(c, BO_HC_NONE);
}

void bo_hx_off(bo_hconn *c)
{
    drop_call(c, false);
    bo_hr_release(c);
    set_state(c, BO_HC_OFF);
}

void bo_hx_adopt(bo_hconn *c, const bo_hx_io *io, const void *ctx, bool tls, bool h2)
{
    c->io = io;
    c->io_ctx = ctx;
    c->tls = c->https = tls;
    c->held_len = c->held_off = 0;
    c->deliver = c->shut_wr = c->shut_rd = c->deferred = false;
    c->ino = bo_hc_identity(c->fd);
    set_state(c, h2 ? BO_HC_OFF : BO_HC_IDLE);
}

bool bo_hx_same_socket(bo_hconn *c)
{
    if (c->st == BO_HC_NONE || bo_hc_identity(c->fd) == c->ino)
        return true;
    reset(c);
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
        reset(c); /* the fd was closed meanwhile */
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
    reset(c);
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

/* The request goes as the program wrote it, followed (so that the next one
 * on the connection is known) but no call of the engine. */
static int unmanaged(bo_hconn *c)
{
    c->kept_len = 0;
    c->kept_ok = false;
    set_state(c, BO_HC_REQ);
    return -1;
}

int bo_hx_begin(bo_hconn *c, const char *buf, size_t len, bool nonblocking)
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
    c->deliver = c->shut_wr = c->shut_rd = c->deferred = false;
    c->first_byte_ns = 0;
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
    if (st == BO_STEP_WAIT && nonblocking) {
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
            end_call(c, false);
            set_state(c, BO_HC_IDLE);
            return EINTR;
        }
        st = a == 0 ? BO_STEP_GO : BO_STEP_GIVE_UP;
    }
    if (st != BO_STEP_GO) {
        end_call(c, false);
        return unmanaged(c); /* no slot in time: this request goes as the program sent it */
    }
    c->admitted = true;
    c->kept_len = 0;
    c->kept_ok = s->keep == BO_HTTP_KEEP_OK; /* a body over the cap is sent once, never again */
    set_state(c, BO_HC_REQ);
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
    if (rc == BO_HTTP_DONE)
        set_state(c, BO_HC_SENT);
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

/* ---- the answer that stands -------------------------------------------------- */

static void rl_line(void *ctx, const char *line, size_t len)
{
    (void)bo_rl_header_line(ctx, line, len);
}

/* The answer stands: the program reads it, the hooks follow it to its end
 * (from the head read at the judging when it was whole: its bytes are
 * skipped, the body read; else from the answer's first byte). */
static void stands(bo_hconn *c)
{
    if (c->resp.head_done && c->resp.rc != BO_HTTP_NOT_HTTP && c->resp.rc != BO_HTTP_TOO_LARGE) {
        c->resp_skip = c->resp.head_len;
    } else {
        bo_http_msg_response(&c->resp, c->req.method);
        c->resp_skip = 0;
    }
    c->deferred = false;
    set_state(c, BO_HC_PASS);
}

void bo_hx_consumed(bo_hconn *c, const char *buf, size_t n)
{
    size_t used = 0, skip = 0;
    bo_http_rc rc;

    if (c->deliver && bo_hc_held_left(c) == 0) {
        c->deliver = false; /* the answer held for the program went to it */
        update_active(c);
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
        set_state(c, BO_HC_IDLE);
}

/* ---- a retry under way ------------------------------------------------------- */

/* What a retry under way waits for: a time, events on the fd, on another fd. */
typedef struct hx_need {
    int64_t until;
    short fd_ev;   /* 0: nothing on the fd */
    int xfd;
    short x_ev;
} hx_need;

/*
 * The retry ends before its request went out again (its time ran out, a
 * signal, no new connection, a peer the program did not verify): the
 * answer it met, held whole, is the program's, as it came.  Whatever the
 * fd holds now is made readable for it (an event loop is woken by that,
 * not by the held bytes): a stand-in is ended, a new connection shut down
 * (it is not the program's to use), a same-connection retry's quiet
 * socket shut for reading when an event loop waits on it.
 */
static void abandon(bo_hconn *c)
{
    bool answered = c->answered;
    bool swapped = c->step == BO_HC_STEP_SHAKE || c->step == BO_HC_STEP_SEND;
    drop_call(c, true);
    if (c->park_fd >= 0)
        bo_hr_unpark(c);
    else if (swapped && !c->same_conn)
        (void)shutdown(c->fd, SHUT_RDWR);
    else if (c->loop)
        (void)shutdown(c->fd, SHUT_RD);
    bo_hr_release(c);
    if (!answered || bo_hc_held_left(c) == 0) {
        bo_hx_off(c);
        return;
    }
    c->deliver = true;
    stands(c);
}

/*
 * One step of a retry under way, never waiting: the engine's wait and the
 * admission, a new connection, the handshake, the request sent again.
 * True when the record left RETRY (SENT: the request is out again; PASS:
 * abandoned, the answer is the program's; NONE: its socket is gone); false
 * with *need what it waits for.
 */
static bool step(bo_hconn *c, int64_t now, hx_need *need)
{
    const bo_hx_io *io = c->io;

    need->until = INT64_MAX;
    need->fd_ev = 0;
    need->xfd = -1;
    need->x_ev = 0;
    if (bo_hc_identity(c->fd) != c->ino) {
        reset(c); /* the program closed the socket without a hook seeing it */
        return true;
    }
    for (;;) {
        switch (c->step) {
        case BO_HC_STEP_WAIT: {
            if (c->same_conn && !io->idle(c)) {
                /* the peer closed, or sent more, while the retry waited */
                c->same_conn = false;
                if (io->same_only || (c->loop && bo_hr_park(c) != 0)) {
                    abandon(c);
                    return true;
                }
            }
            if (c->call.phase == BO_PHASE_WAIT && !bo_call_due(&c->call, now)) {
                if (c->call.until_ns >= c->give_up_ns) {
                    abandon(c);
                    return true;
                }
                need->until = c->call.until_ns;
                return false;
            }
            int64_t until;
            bo_step s = bo_run_admit_step(c->dest, &c->call, now, &c->inflight,
                                          BO_POLL_ADMIT_NS, &until);
            if (s == BO_STEP_GIVE_UP || (s == BO_STEP_WAIT && until >= c->give_up_ns)) {
                abandon(c);
                return true;
            }
            if (s == BO_STEP_WAIT) {
                need->until = until;
                return false;
            }
            c->admitted = true;
            c->resend_off = 0;
            if (c->async) /* the time the program's own wait spent on the retry */
                bo_report_waited(c->dest, now - c->wait_from_ns);
            if (c->same_conn) {
                c->step = BO_HC_STEP_SEND;
            } else if (bo_hr_dial(c) == 0) {
                c->step = BO_HC_STEP_DIAL;
            } else {
                abandon(c); /* (the admitted attempt never ran: given back) */
                return true;
            }
            break;
        }
        case BO_HC_STEP_DIAL: {
            int d = bo_hr_dial_done(c);
            if (d == 0) {
                need->xfd = c->dial_fd;
                need->x_ev = POLLOUT;
                need->until = c->give_up_ns;
                return false;
            }
            if (d < 0 || bo_hr_swap(c) != 0) {
                abandon(c);
                return true;
            }
            if (io->shake != NULL) {
                short ev = 0;
                int r = io->shake(c, true, &ev);
                c->step = BO_HC_STEP_SHAKE;
                if (r < 0) {
                    abandon(c);
                    return true;
                }
                if (r == 0) {
                    need->fd_ev = ev;
                    need->until = c->give_up_ns;
                    return false;
                }
            }
            c->step = BO_HC_STEP_SEND;
            break;
        }
        case BO_HC_STEP_SHAKE: {
            short ev = 0;
            int r = io->shake(c, false, &ev);
            if (r < 0) {
                abandon(c);
                return true;
            }
            if (r == 0) {
                need->fd_ev = ev;
                need->until = c->give_up_ns;
                return false;
            }
            c->step = BO_HC_STEP_SEND;
            break;
        }
        case BO_HC_STEP_SEND: {
            short ev = POLLOUT;
            while (c->resend_off < c->kept_len) {
                ssize_t w = io->put(c, c->kept + c->resend_off, c->kept_len - c->resend_off, &ev);
                if (w > 0) {
                    c->resend_off += (size_t)w;
                } else if (w < 0 && errno == EINTR) {
                    continue;
                } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                    need->fd_ev = ev;
                    need->until = c->give_up_ns;
                    return false;
                } else {
                    break;
                }
            }
            if (c->resend_off < c->kept_len) {
                /* the connection failed under the retry: once more on a new one */
                if (c->same_conn && c->resend_off == 0 && !io->same_only &&
                    (!c->tls || c->peer_id_known) && bo_hr_dial(c) == 0) {
                    c->same_conn = false;
                    c->step = BO_HC_STEP_DIAL;
                    break;
                }
                abandon(c);
                return true;
            }
            if (c->shut_wr)
                (void)shutdown(c->fd, SHUT_WR); /* as the program left its first connection */
            /* the retried answer is gone for good: the retry's is judged next */
            c->held_len = c->held_off = 0;
            c->first_byte_ns = 0;
            c->deferred = false;
            c->resp.status = 0;
            set_state(c, BO_HC_SENT);
            return true;
        }
        }
    }
}

/*
 * The engine retries the attempt just completed (its answer, n bytes,
 * looked at in c->peek and its head read into c->resp; none when it
 * closed or failed first): take it over.  The answer is taken out of the
 * connection whole into the held bytes (so that an abandoned retry still
 * gives it to the program), the connection kept when it can carry the
 * request again, else a new one to be made when the time comes (an event
 * loop's fd holds a quiet stand-in meanwhile).  0: RETRY; -1: nothing was
 * taken, the answer stands.
 */
static int take_over(bo_hconn *c, bool answered, size_t total, bool loop, int64_t give_up)
{
    const bo_hx_io *io = c->io;
    bool keep = answered && c->resp.keep_alive && !c->shut_wr;

    /* a retry that would need a new connection where none may be made
     * takes nothing: the answer stands as it came */
    if (!keep && (io->same_only || (c->tls && !c->peer_id_known)))
        return -1;
    if (answered && io->hold(c, total) != 0)
        return -1; /* (what a transport read ahead stays held for the program) */
    c->answered = answered;
    c->same_conn = keep && bo_hc_held_left(c) == total && io->idle(c);
    c->loop = loop;
    c->step = BO_HC_STEP_WAIT;
    c->resend_off = 0;
    c->give_up_ns = give_up;
    c->async = give_up != INT64_MAX || loop;
    c->wait_from_ns = bo_core_now_ns();
    c->deferred = false;
    idem_add(c);
    set_state(c, BO_HC_RETRY);
    if (!c->same_conn &&
        (io->same_only || (c->tls && !c->peer_id_known) || (loop && bo_hr_park(c) != 0)))
        abandon(c); /* no new connection may be made after all: it stands */
    return 0;
}

/* ---- judging an answer ------------------------------------------------------- */

/* Where the program waits for the answer being judged (exchange.h). */
typedef enum hx_mode {
    MODE_BLOCK, /* its blocking read: look and wait inside it */
    MODE_POLL,  /* its poll or select naming the fd, until a deadline */
    MODE_LOOP,  /* its event loop (epoll), until the loop's next timer */
    MODE_NONE   /* a non-blocking read, nothing known: no retry */
} hx_mode;

typedef enum hx_judged {
    J_NOTHING,  /* nothing to say yet (EAGAIN, a head in pieces, deferred) */
    J_STANDS,   /* the answer stands: PASS */
    J_RETRYING, /* a retry is under way: RETRY */
    J_OFF,      /* the connection is left alone (the read meets what is there) */
    J_ERR       /* the read fails with *err */
} hx_judged;

/* Is the whole answer (its head read into c->resp, n bytes looked at)
 * among the bytes looked at?  Its length in *total.  A close-delimited
 * answer never is (its end is the close). */
static bool whole_now(bo_hconn *c, ssize_t n, size_t *total)
{
    if (c->resp.framing == BO_HTTP_FRAMING_CLOSE || c->resp.framing == BO_HTTP_FRAMING_TUNNEL)
        return false;
    bo_http_msg m = c->resp;
    size_t used;
    if (bo_http_feed(&m, c->peek + c->resp.head_len, (size_t)n - c->resp.head_len, &used) !=
        BO_HTTP_DONE)
        return false;
    *total = c->resp.head_len + used;
    return true;
}

/* Is the fd in an epoll set (an event loop waits on it)? */
static bool in_epoll(int fd)
{
    char path[64], line[256], link[64];
    bool found = false;
    DIR *d = opendir("/proc/self/fd");

    if (d == NULL)
        return false;
    for (struct dirent *e; !found && (e = readdir(d)) != NULL;) {
        int epfd = atoi(e->d_name);
        if (e->d_name[0] < '0' || e->d_name[0] > '9' || epfd == dirfd(d))
            continue;
        snprintf(path, sizeof path, "/proc/self/fd/%d", epfd);
        ssize_t k = readlink(path, link, sizeof link - 1);
        if (k <= 0)
            continue;
        link[k] = '\0';
        if (strcmp(link, "anon_inode:[eventpoll]") != 0)
            continue;
        snprintf(path, sizeof path, "/proc/self/fdinfo/%d", epfd);
        FILE *f = fopen(path, "re");
        if (f == NULL)
            continue;
        int tfd;
        while (!found && fgets(line, sizeof line, f) != NULL)
            found = sscanf(line, "tfd: %d", &tfd) == 1 && tfd == fd;
        fclose(f);
    }
    closedir(d);
    return found;
}

/* The end of the process's event-loop wait (bo_hx_loop_wait). */
static int64_t g_loop_deadline = INT64_MAX;

/* The process serves connections it accepted (bo_hx_serving). */
static int g_serving;

void bo_hx_serving(void)
{
    if (!__atomic_load_n(&g_serving, __ATOMIC_RELAXED))
        __atomic_store_n(&g_serving, 1, __ATOMIC_RELAXED);
}

void bo_hx_loop_wait(int64_t now, int timeout_ms)
{
    if (timeout_ms == 0)
        return; /* a loop with work at hand says nothing of its timers */
    int64_t d = timeout_ms < 0 ? INT64_MAX : now + (int64_t)timeout_ms * BO_NS_PER_MS;
    __atomic_store_n(&g_loop_deadline, d, __ATOMIC_RELAXED);
}

/*
 * Judge the answer of the attempt in flight (SENT), as far as it came:
 * mode and deadline say where the program waits for it and until when
 * (a retry whose wait and one more attempt do not fit is not made).
 */
static hx_judged judge(bo_hconn *c, hx_mode mode, int64_t deadline, int *err)
{
    const bo_hx_io *io = c->io;
    bo_rl_headers rl;
    int64_t until;

    if (!c->in_call || !c->admitted) {
        stands(c); /* a request the hooks only follow */
        return J_STANDS;
    }
    for (;;) {
        ssize_t n = io->look(c, mode == MODE_BLOCK);
        int status = 0, code = BO_CURLE_OK, e = errno;
        bool answered = n > 0;
        int64_t now = bo_core_now_ns();
        size_t total = 0;

        if (n < 0 && (e == EAGAIN || e == EWOULDBLOCK || e == EINTR)) {
            *err = e; /* nothing yet: the program polls, or its signal came */
            return J_NOTHING;
        }
        if (answered) {
            if (c->first_byte_ns == 0)
                c->first_byte_ns = now;
            bo_rl_headers_reset(&rl);
            bo_http_rc rc = bo_http_parse_response(c->peek, (size_t)n, c->req.method, &c->resp,
                                                   rl_line, &rl);
            if (rc == BO_HTTP_NOT_HTTP || rc == BO_HTTP_TOO_LARGE) {
                bo_hx_off(c);
                return J_OFF;
            }
            status = c->resp.status;
            if (c->resp.interim > 0 || (status >= 100 && status < 200 && status != 101)) {
                /* an interim answer (103 Early Hints, 102 Processing) goes to
                 * the program at once; the exchange is followed as it stands */
                bo_outcome ok = {BO_VERDICT_SUCCESS, BO_SIGNAL_NONE, false, BO_CAUSE_NONE};
                (void)complete(c, ok, status, BO_CURLE_OK, -1, NULL, &until);
                bo_http_msg_response(&c->resp, c->req.method);
                c->resp_skip = 0;
                c->deferred = false;
                set_state(c, BO_HC_PASS);
                return J_STANDS;
            }
            if (rc == BO_HTTP_NEED_MORE) {
                bool final = status >= 200;
                if (final && classify(c, status, BO_CURLE_OK).verdict != BO_VERDICT_RETRY) {
                    (void)complete(c, classify(c, status, BO_CURLE_OK), status, BO_CURLE_OK, -1,
                                   NULL, &until);
                    stands(c); /* not a throttle: its head is not needed whole */
                    return J_STANDS;
                }
                if (n < BO_HC_PEEK_MAX && now - c->first_byte_ns < HX_MORE_NS) {
                    if (mode != MODE_BLOCK) {
                        *err = EAGAIN; /* the rest is on its way */
                        return J_NOTHING;
                    }
                    if (bo_hs_wait_fd(c->fd, POLLIN, c->first_byte_ns + HX_MORE_NS) == 0 ||
                        errno == EINTR)
                        continue;
                }
                if (!final) { /* no status in time: an answer the hooks cannot read */
                    bo_hx_off(c);
                    return J_OFF;
                }
                /* a throttle whose head does not come whole: it stands */
                bo_outcome fin = {BO_VERDICT_FINAL, BO_SIGNAL_NONE, false, BO_CAUSE_NONE};
                (void)complete(c, fin, status, BO_CURLE_OK, -1, NULL, &until);
                stands(c);
                return J_STANDS;
            }
        } else {
            /* closed or failed before any byte of an answer */
            code = n == 0 ? BO_CURLE_GOT_NOTHING : BO_CURLE_RECV_ERROR;
        }
        bo_outcome o = classify(c, status, code);
        int64_t ra = answered ? bo_http_retry_after_ns(&c->resp, bo_core_wall_ns() / BO_NS_PER_S)
                              : -1;
        if (o.verdict == BO_VERDICT_RETRY) {
            if (mode == MODE_NONE && !c->deferred) {
                /* A non-blocking read whose program has not shown how it
                 * waits: the answer is left where it is, once, for its
                 * poll (which judges it then) or its next read. */
                c->deferred = true;
                *err = EAGAIN;
                return J_NOTHING;
            }
            if (answered && !whole_now(c, n, &total) && mode == MODE_BLOCK) {
                /* the body of a throttle on its way: a moment for it */
                while (!whole_now(c, n, &total) && n < BO_HC_PEEK_MAX &&
                       bo_hs_wait_fd(c->fd, POLLIN, c->first_byte_ns + HX_MORE_NS) == 0) {
                    ssize_t k = io->look(c, false);
                    if (k <= n)
                        break;
                    n = k;
                }
            }
            if (!c->kept_ok || c->shut_rd || mode == MODE_NONE ||
                (answered && !whole_now(c, n, &total)) ||
                (c->shut_wr && (c->tls || io->same_only)) ||
                (io->same_only && !(answered && c->resp.keep_alive)))
                o.verdict = BO_VERDICT_FINAL; /* it cannot be sent again, or not here */
            if (mode == MODE_BLOCK && c->call.deadline_ns == INT64_MAX) {
                int64_t t = bo_hs_rcvtimeo(c->fd); /* a wait never outlasts the read's timeout */
                if (t > 0)
                    deadline = now + t;
            }
            if (deadline < c->call.deadline_ns)
                bo_call_set_deadline(&c->call, deadline);
        }
        bool again = complete(c, o, status, code, ra, answered ? &rl : NULL, &until);
        if (again && take_over(c, answered, total, mode == MODE_LOOP,
                               mode == MODE_BLOCK ? INT64_MAX : deadline) == 0)
            return c->st == BO_HC_RETRY ? J_RETRYING : J_STANDS;
        if (again)
            end_call(c, true); /* it could not be taken over: the answer stands */
        if (answered) {
            stands(c);
            return J_STANDS;
        }
        bo_hx_off(c);
        if (n == 0)
            return J_OFF; /* the program's read meets the close itself */
        *err = e;
        return J_ERR;
    }
}

/* ---- the drivers: the program's read, its poll, its event loop ----------------- */

/* A blocking read drives a retry to its end, waiting inside the read as the
 * program's own blocking read would: 0, or EINTR (a signal without
 * SA_RESTART: the retry is abandoned, its answer handed back at once). */
static int drive_blocking(bo_hconn *c)
{
    int64_t io_bound = bo_core_now_ns() + HX_IO_NS;

    while (c->st == BO_HC_RETRY) {
        hx_need need;
        int64_t now = bo_core_now_ns();
        if (step(c, now, &need))
            break;
        if (need.fd_ev != 0 || need.xfd >= 0) {
            int64_t until = c->call.deadline_ns < io_bound ? c->call.deadline_ns : io_bound;
            if (bo_hs_wait_fd(need.xfd >= 0 ? need.xfd : c->fd,
                              need.xfd >= 0 ? need.x_ev : need.fd_ev, until) != 0 &&
                bo_core_now_ns() >= until) {
                abandon(c);
                break;
            }
            continue;
        }
        bo_core_busy = 0;
        int rc = bo_run_wait_until(c->dest, need.until);
        bo_core_busy = 1;
        if (rc == EINTR) {
            bo_run_abandoned(c->dest);
            abandon(c);
            return EINTR;
        }
    }
    return 0;
}

bo_hx_verdict bo_hx_read(bo_hconn *c, bool blocking, int *err)
{
    if (c->st == BO_HC_REQ) {
        bo_hx_off(c); /* a read in the middle of a request: the server answered early */
        return BO_HX_OFF;
    }
    if ((c->st == BO_HC_SENT || c->st == BO_HC_RETRY) && !bo_hx_same_socket(c))
        return BO_HX_OFF; /* another socket on that number: not ours to judge */
    for (;;) {
        if (c->st == BO_HC_RETRY) {
            if (blocking) {
                if (drive_blocking(c) == EINTR && c->st != BO_HC_PASS) {
                    *err = EINTR;
                    return BO_HX_ERR;
                }
            } else {
                hx_need need;
                if (!step(c, bo_core_now_ns(), &need)) {
                    *err = EAGAIN; /* the retry's answer is not here yet */
                    return BO_HX_ERR;
                }
            }
            continue;
        }
        if (c->st != BO_HC_SENT)
            return c->st == BO_HC_OFF || c->st == BO_HC_NONE ? BO_HX_OFF : BO_HX_PASS;
        hx_mode mode = MODE_BLOCK;
        int64_t deadline = INT64_MAX;
        if (!blocking) {
            mode = MODE_NONE;
            /* an event loop retries in its own wait, bounded by its next
             * timer; a server's (a proxy's upstream answers) are passed on */
            if (c->deferred && !__atomic_load_n(&g_serving, __ATOMIC_RELAXED) &&
                in_epoll(c->fd)) {
                mode = MODE_LOOP;
                deadline = __atomic_load_n(&g_loop_deadline, __ATOMIC_RELAXED);
            }
        }
        switch (judge(c, mode, deadline, err)) {
        case J_NOTHING:
        case J_ERR:
            return BO_HX_ERR;
        case J_OFF:
            return BO_HX_OFF;
        case J_STANDS:
            return BO_HX_PASS;
        case J_RETRYING:
            break; /* a step at once: it may go out right away */
        }
    }
}

short bo_hx_poll_before(bo_hconn *c, short ev, int64_t now, int64_t deadline, short *fd_ev,
                        int *xfd, short *x_ev, int64_t *until)
{
    *fd_ev = ev;
    *xfd = -1;
    *x_ev = 0;
    *until = INT64_MAX;
    if ((c->st == BO_HC_SENT || c->st == BO_HC_RETRY) && !bo_hx_same_socket(c))
        return 0;
    if (c->st == BO_HC_RETRY) {
        hx_need need;
        if (c->loop || !step(c, now, &need)) {
            if (c->loop) { /* an event loop's retry met in a poll: its own needs */
                need.until = now + HX_PIECE_NS;
                need.fd_ev = 0;
                need.xfd = -1;
            }
            *fd_ev = need.fd_ev != 0 ? need.fd_ev : -1;
            *xfd = need.xfd;
            *x_ev = need.x_ev;
            *until = need.until < deadline ? need.until : deadline;
            return 0;
        }
    }
    if (c->st == BO_HC_SENT && c->first_byte_ns != 0 && (ev & POLLIN)) {
        /* a throttle's head arriving in pieces: looked at again shortly */
        *fd_ev = -1;
        *until = now + HX_PIECE_NS;
        return 0;
    }
    if ((c->st == BO_HC_PASS || c->deliver) && bo_hc_held_left(c) > 0 && (ev & POLLIN))
        return POLLIN; /* an answer held for the program: readable now */
    return 0;
}

short bo_hx_poll_after(bo_hconn *c, short ev, short rev, short xrev, int64_t deadline)
{
    int err = 0;
    int64_t now = bo_core_now_ns();

    (void)xrev;
    if (c->st == BO_HC_RETRY && !c->loop) {
        hx_need need;
        if (!step(c, now, &need)) {
            if (now >= deadline) /* the program's wait ends: it gets the answer it met */
                abandon(c);
            else
                return 0;
        }
    }
    if (c->st == BO_HC_SENT && (ev & POLLIN) &&
        ((rev & (POLLIN | POLLHUP | POLLERR | POLLRDHUP)) || c->first_byte_ns != 0 ||
         (c->io->pending != NULL && c->io->pending(c)))) {
        switch (judge(c, MODE_POLL, deadline, &err)) {
        case J_NOTHING:
            return 0;
        case J_RETRYING:
            return bo_hx_poll_after(c, ev, 0, 0, deadline);
        default:
            break;
        }
        rev |= POLLIN;
    }
    if (c->st == BO_HC_RETRY)
        return 0;
    if ((c->st == BO_HC_PASS || c->deliver) && bo_hc_held_left(c) > 0 && (ev & POLLIN))
        rev |= POLLIN;
    return rev & (short)(ev | POLLHUP | POLLERR | POLLNVAL);
}

/* The event-loop drive's gathering (bo_hx_drive). */
typedef struct drive_ctx {
    int64_t now, until;
    int *fds;
    short *evs;
    int n, max;
    bool sweep;
} drive_ctx;

static int64_t g_last_sweep;

static void drive_one(bo_hconn *c, void *ud)
{
    drive_ctx *d = ud;
    hx_need need;

    if (!c->active || !bo_hc_trylock(c))
        return;
    if (d->sweep && c->st == BO_HC_SENT && bo_hc_identity(c->fd) != c->ino)
        reset(c); /* its socket closed without a hook seeing it: its place freed */
    if (c->st == BO_HC_RETRY && c->loop && !step(c, d->now, &need)) {
        if (d->now >= c->give_up_ns) {
            abandon(c);
        } else {
            if (need.until < d->until)
                d->until = need.until;
            if (need.xfd >= 0 && d->n < d->max) {
                d->fds[d->n] = need.xfd;
                d->evs[d->n++] = need.x_ev;
            } else if (need.fd_ev != 0 && d->n < d->max) {
                d->fds[d->n] = c->fd;
                d->evs[d->n++] = need.fd_ev;
            }
        }
    }
    bo_hx_leave(c);
}

int bo_hx_drive(int64_t now, int64_t loop_deadline, int64_t *until, int *fds, short *evs,
                int max)
{
    drive_ctx d = {.now = now, .until = INT64_MAX, .fds = fds, .evs = evs, .max = max};

    (void)loop_deadline;
    if (now - __atomic_load_n(&g_last_sweep, __ATOMIC_RELAXED) >= HX_SWEEP_NS) {
        __atomic_store_n(&g_last_sweep, now, __ATOMIC_RELAXED);
        d.sweep = true;
    }
    bo_hc_each(drive_one, &d);
    *until = d.until;
    return d.n;
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
    c->active = false;
}

void bo_http_child_fork(void)
{
    bo_hc_child_fork_table();
    bo_hc_active = 0;
    bo_hc_each(child_one, NULL);
}
