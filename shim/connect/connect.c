/*
 * connect: the connect() hook of libbackoff.so, a room of its own.
 *
 * Only blocking stream sockets (TCP over IPv4/IPv6, UNIX sockets) are
 * managed (bo_connect_managed); non-blocking connects (libcurl's own among
 * them) and datagram sockets pass straight through.  What an attempt's
 * errno means is bo_connect_judge's rule (policies/bo_classify.h): a refusal is
 * retried only from a destination that accepted a connection before in this
 * process, or that BACKOFF_HOSTS names, and a UNIX socket's full backlog;
 * any other refusal is handed back at once, outside the window.  A retry
 * reuses the program's own socket, so every option, flag and binding stays
 * as the program set it.  The call is bounded by connect_deadline (the
 * program's own limits, BACKOFF_MAX_TIME_MS or BO_CONNECT_MAX_TIME_MS) and
 * a signal whose handler lacks SA_RESTART ends a wait with EINTR.  On final
 * failure errno is what libc left after the last attempt.
 */
#include "bo_time.h"
#include "bo_url.h"
#include "call/call.h"
#include "core/core.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>


/*
 * connect(): the bound of one call, retries and waits included, when
 * BACKOFF_MAX_TIME_MS is unset (0); the socket's own SO_SNDTIMEO,
 * TCP_USER_TIMEOUT and TCP_SYNCNT bound it further (connect_deadline).
 */
#define BO_CONNECT_MAX_TIME_MS 30000

typedef int (*connect_fn)(int, const struct sockaddr *, socklen_t);

static connect_fn real_connect_fn;
static int g_connect_bound;

/* Bind libc's connect(); abort loudly if it is missing or is ourselves. */
static void resolve_connect(void)
{
    *(void **)&real_connect_fn = bo_core_next_fn("connect", (void *)connect);
}

static int real_connect(int fd, const struct sockaddr *sa, socklen_t len)
{
    bo_core_once(&g_connect_bound, resolve_connect);
    return real_connect_fn(fd, sa, len);
}

/*
 * The destination key of a managed connect and whether BACKOFF_HOSTS lets
 * the shim manage it.  Returns 0 when managed.  Unix sockets are managed
 * only when BACKOFF_HOSTS is empty (they have no host name to match).
 */
static int dest_key(const bo_config *cfg, const struct sockaddr *sa, socklen_t len, char *key,
                    size_t keylen)
{
    char addr[INET6_ADDRSTRLEN + 2];
    size_t n;
    unsigned port;

    switch (sa->sa_family) {
    case AF_INET:
    case AF_INET6:
        if (bo_core_addr_text(sa, len, addr, sizeof addr, &n, &port) != 0)
            return -1;
        return bo_url_dest_key(cfg, "tcp", 3, addr, n, port, key, keylen);
    case AF_UNIX: {
        const struct sockaddr_un *un = (const struct sockaddr_un *)sa;
        size_t off = offsetof(struct sockaddr_un, sun_path);
        if (len <= off)
            return -1;
        return bo_url_unix_key(cfg, un->sun_path, len - off, key, keylen);
    }
    default:
        return -1;
    }
}

/*
 * Is this a connect the shim manages: a blocking stream socket?  A bound
 * socket is managed too: a retry reuses the very socket, so its binding is
 * what the kernel keeps for a plain second connect() (an explicit port
 * stays; an ephemeral one is picked again, as without the library).
 */
static bool manageable(int fd)
{
    int type = 0, flags;
    socklen_t tl = sizeof type;

    flags = fcntl(fd, F_GETFL); /* first: most connects (libcurl's) are non-blocking */
    if (flags < 0 || !bo_connect_managed(true, (flags & O_NONBLOCK) != 0))
        return false;
    return bo_connect_managed(getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) == 0 &&
                                  type == SOCK_STREAM,
                              false);
}

static int64_t tv_ns(const struct timeval *tv)
{
    return (int64_t)tv->tv_sec * BO_NS_PER_S + (int64_t)tv->tv_usec * 1000;
}

/*
 * The bound of the whole call, retries and waits included, as a monotonic
 * deadline: BACKOFF_MAX_TIME_MS (BO_CONNECT_MAX_TIME_MS when unset), and no
 * later than the program's own limits on this socket would end one plain
 * connect: SO_SNDTIMEO, TCP_USER_TIMEOUT, and the SYN retransmissions that
 * TCP_SYNCNT allows (2^(n+1) - 1 s with the initial 1 s timeout).
 */
static int64_t connect_deadline(const bo_config *cfg, int fd, int family, int64_t start)
{
    int64_t budget =
        (cfg->max_time_ms > 0 ? cfg->max_time_ms : BO_CONNECT_MAX_TIME_MS) * BO_NS_PER_MS;
    struct timeval tv;
    socklen_t l = sizeof tv;
    int v;

    if (getsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, &l) == 0 && tv_ns(&tv) > 0 &&
        tv_ns(&tv) < budget)
        budget = tv_ns(&tv);
    if (family != AF_UNIX) {
        l = sizeof v;
        if (getsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &v, &l) == 0 && v > 0 &&
            (int64_t)v * BO_NS_PER_MS < budget)
            budget = (int64_t)v * BO_NS_PER_MS;
        l = sizeof v;
        if (getsockopt(fd, IPPROTO_TCP, TCP_SYNCNT, &v, &l) == 0 && v > 0 && v < 30 &&
            (((int64_t)1 << (v + 1)) - 1) * BO_NS_PER_S < budget)
            budget = (((int64_t)1 << (v + 1)) - 1) * BO_NS_PER_S;
    }
    return start + budget;
}

/*
 * One connect() call, as a state machine of the same shape as a libcurl
 * transfer's (bo_curl_xfer in curl/xfer.c), driven in blocking mode by
 * managed_connect:
 *
 *     conn_begin    once: the call, its logical request, its deadline;
 *     conn_admit    wait for a slot (bo_run_admit_intr), except for the
 *                   first attempt to a destination neither known alive nor
 *                   named, which runs outside the window;
 *     conn_attempt  one connect() on the program's socket;
 *     conn_done     judges (bo_connect_judge), classifies and completes the
 *                   attempt: retry at *until_ns, or done;
 *     conn_end      once: records the logical request, returns the result
 *                   that stands.
 *
 * The decisions are policies/': which errno means what on this socket
 * (bo_connect_judge, bo_classify), when to go and when to retry (the
 * engine, through bo_run_admit_step and bo_run_complete).
 */
typedef struct conn_call {
    const bo_config *cfg;
    bo_block *sd;
    int fd;
    const struct sockaddr *sa;
    socklen_t len;
    bo_call call;
    uint64_t id;
    uint64_t key;       /* the logical request: a connect to this destination
                           refused (or failed) after our retries and tried
                           again by the program; 0: none */
    unsigned inflight;
    int64_t start, deadline;
    bool known;         /* alive before, or named in BACKOFF_HOSTS */
    bool in_window;     /* this attempt was admitted (else it runs outside) */
    bool shim_bound;    /* this attempt ran under our send timeout (retry_bound) */
    int rc, err;        /* the result that stands and its errno */
} conn_call;

enum { CONN_GO, CONN_STANDS, CONN_PLAIN, CONN_EINTR };

/*
 * A retry's attempt may not run past the call's deadline: a TCP socket's
 * SO_SNDTIMEO is lowered to the time left (conn_attempt restores *own).
 * When it runs out the kernel answers EINPROGRESS, which bo_connect_judge
 * reads by whose timeout it was.
 */
static bool retry_bound(conn_call *c, struct timeval *own)
{
    struct timeval left;
    socklen_t l = sizeof *own;
    int64_t rest = c->deadline - bo_core_now_ns();

    if (c->sa->sa_family == AF_UNIX || rest <= 0 ||
        getsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, own, &l) != 0 ||
        (tv_ns(own) != 0 && tv_ns(own) <= rest))
        return false;
    left.tv_sec = (time_t)(rest / BO_NS_PER_S);
    left.tv_usec = (suseconds_t)((rest % BO_NS_PER_S) / 1000);
    if (left.tv_sec == 0 && left.tv_usec == 0)
        left.tv_usec = 1;
    return setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &left, sizeof left) == 0;
}

/* The logical request of a connect(): its destination, when it is one the
 * shim retries (known). */
static uint64_t conn_key_of(const void *ctx)
{
    const conn_call *c = ctx;
    return c->known ? bo_key_add(bo_key_add(BO_KEY_INIT, "connect"), c->sd->key) : 0;
}

static void conn_begin(conn_call *c, bo_block *sd, int fd, const struct sockaddr *sa,
                       socklen_t len, bool named)
{
    bool known = named || __atomic_load_n(&sd->alive, __ATOMIC_RELAXED);

    *c = (conn_call){.cfg = bo_core_config(), .sd = sd, .fd = fd, .sa = sa, .len = len,
                     .known = known, .start = bo_core_now_ns(), .deadline = INT64_MAX, .rc = -1};
    (void)bo_run_call_start(&c->call, c->start, &c->key, conn_key_of, c, NULL);
    if (c->known) /* the first admission may wait (an outage): bound it too */
        c->deadline = connect_deadline(c->cfg, fd, sa->sa_family, c->start);
}

/*
 * Wait for the next attempt's slot.  CONN_PLAIN: the deadline came before
 * a first slot, the caller makes one plain attempt and returns it;
 * CONN_STANDS: a retry ran out of budget or time, the last result stands.
 */
static int conn_admit(conn_call *c)
{
    c->in_window = c->known || c->call.attempts > 0;
    if (!c->in_window)
        return CONN_GO;
    int a = bo_run_admit_intr(c->sd, &c->call, c->deadline, &c->inflight);
    if (a == EINTR)
        return CONN_EINTR;
    if (a != 0)
        return c->call.attempts > 0 ? CONN_STANDS : CONN_PLAIN;
    return CONN_GO;
}

/*
 * One attempt; returns its errno (0: connected).  A retry reuses the
 * program's own socket (Linux lets a TCP or UNIX stream socket whose
 * connect failed connect again, with every option, flag and binding as the
 * program set them), bounded by the call's deadline.
 */
static int conn_attempt(conn_call *c)
{
    struct timeval own;
    int rc;

    c->shim_bound = c->call.attempts > 1 && retry_bound(c, &own);
    rc = real_connect(c->fd, c->sa, c->len);
    int e = rc == 0 ? 0 : errno;
    if (c->shim_bound) {
        (void)setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &own, sizeof own);
        c->shim_bound = tv_ns(&own) == 0; /* the program had none of its own */
    }
    if (rc == 0 && !__atomic_load_n(&c->sd->alive, __ATOMIC_RELAXED))
        __atomic_store_n(&c->sd->alive, 1, __ATOMIC_RELAXED);
    return e;
}

/*
 * Judge, classify and complete the attempt that returned errno e.  Returns
 * true to retry at *until_ns; false when the call is done (c->rc, c->err
 * hold the result that stands).
 */
static bool conn_done(conn_call *c, int e, int64_t *until_ns)
{
    const bo_config *cfg = c->cfg;
    bo_connect_facts f = {.nonblocking = false,
                          .unix_socket = c->sa->sa_family == AF_UNIX,
                          .unknown = !c->known,
                          .reused = c->call.attempts > 1,
                          .shim_bound = c->shim_bound};
    bo_connect_verdict v = bo_connect_judge(e, &f);

    if (v.abort) { /* as a plain connect that timed out leaves the socket */
        struct sockaddr unspec = {.sa_family = AF_UNSPEC};
        (void)real_connect(c->fd, &unspec, sizeof unspec);
    }
    if (v.cls == BO_CONNECT_STALE) {
        bo_run_result gone = {.outcome = {BO_VERDICT_FINAL, BO_SIGNAL_NONE, false, BO_CAUSE_NONE},
                               .retry_after_ns = -1, .status = 0, .code = v.err,
                               .ratelimit = NULL};
        bool stood = c->call.retryable;
        (void)bo_run_complete(c->sd, &c->call, &gone, c->id, "connect", c->inflight, until_ns);
        c->rc = -1; /* c->err keeps the previous attempt's errno */
        c->call.retryable = stood; /* and the call keeps that result's nature */
        return false;
    }
    c->rc = v.cls == BO_CONNECT_OK ? 0 : -1;
    c->err = v.err;
    bo_attempt at = {.curl_code = BO_CURLE_OK,
                     .connect_errno = v.err,
                     .connect_unix = f.unix_socket,
                     .connect_unknown = f.unknown};
    bo_run_result res = {.outcome = bo_classify(cfg, &at),
                          .retry_after_ns = -1,
                          .status = 0,
                          .code = v.err};
    if (!c->in_window) {
        if (res.outcome.verdict != BO_VERDICT_RETRY)
            return false; /* handed back as plain: no slot was taken */
        c->call.attempts = 1; /* it ran outside the window, and it counts */
    }
    if (c->id == 0)
        c->id = bo_run_call_id();
    if (!bo_run_complete(c->sd, &c->call, &res, c->id, "connect", c->inflight, until_ns))
        return false;
    if (c->deadline == INT64_MAX)
        c->deadline = connect_deadline(cfg, c->fd, c->sa->sa_family, c->start);
    if (*until_ns >= c->deadline) {
        bo_run_abandoned(c->sd); /* no time for another attempt */
        return false;
    }
    return true;
}

static int conn_end(conn_call *c, int *err)
{
    bo_run_call_finish(&c->call, &c->key, conn_key_of, c,
                       c->rc != 0 && bo_call_failed_retryable(&c->call), NULL, 0);
    *err = c->err;
    return c->rc;
}

/*
 * A signal ended a wait between attempts: leave the socket as a plain
 * connect interrupted by that signal leaves it, with the connection request
 * under way (POSIX: "the connection shall be established asynchronously"),
 * so that a program that polls for it learns how it ended.  The status
 * flags are restored as they were.
 */
static void continue_asynchronously(int fd, const struct sockaddr *sa, socklen_t len)
{
    int fl = fcntl(fd, F_GETFL);

    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0)
        return;
    (void)real_connect(fd, sa, len);
    (void)fcntl(fd, F_SETFL, fl);
}

/*
 * One connect() call under the policy, the state machine driven in
 * blocking mode.  A destination that is neither known alive nor named gets
 * its first attempt outside the window (no slot, no wait, nothing counted)
 * and its "nothing here" refusal back at once, so that a failing
 * destination never holds a process's threads in line.  The call's
 * deadline (connect_deadline) bounds the retries; a signal without
 * SA_RESTART during a wait ends the call with EINTR.
 */
static int managed_connect(bo_block *sd, int fd, const struct sockaddr *sa, socklen_t len,
                           bool named, int *err)
{
    conn_call c;
    int64_t until;

    conn_begin(&c, sd, fd, sa, len, named);
    c.err = *err;
    for (;;) {
        int a = conn_admit(&c);
        if (a == CONN_EINTR)
            goto interrupted;
        if (a == CONN_STANDS)
            break;
        if (a == CONN_PLAIN) { /* outside the window, and no logical request */
            int e = conn_attempt(&c);
            *err = e;
            return e == 0 ? 0 : -1;
        }
        if (!conn_done(&c, conn_attempt(&c), &until))
            break;
        if (bo_run_wait_until(sd, until) == EINTR)
            goto interrupted;
    }
    return conn_end(&c, err);
interrupted:
    bo_run_abandoned(sd);
    continue_asynchronously(fd, sa, len);
    *err = EINTR;
    return -1;
}

static int shim_connect(int fd, const struct sockaddr *sa, socklen_t len)
{
    const bo_config *cfg;
    bo_block *sd;
    char key[BO_DEST_KEY_LEN];
    int saved = errno, err, rc;

    if (bo_core_busy || sa == NULL || (cfg = bo_core_config()) == NULL || !cfg->connect_hook)
        return real_connect(fd, sa, len);
    if (sa->sa_family != AF_INET && sa->sa_family != AF_INET6 && sa->sa_family != AF_UNIX)
        return real_connect(fd, sa, len);
    if (!manageable(fd) || dest_key(cfg, sa, len, key, sizeof key) != 0 ||
        (sd = bo_block_get(key)) == NULL) {
        errno = saved;
        return real_connect(fd, sa, len);
    }
    bo_core_busy = 1;
    err = saved;
    /* dest_key admits a destination under a non-empty BACKOFF_HOSTS only when named. */
    rc = managed_connect(sd, fd, sa, len, cfg->n_hosts > 0, &err);
    bo_block_put(sd);
    bo_core_busy = 0;
    errno = rc == 0 ? saved : err;
    return rc;
}

BO_EXPORT int connect(int fd, __CONST_SOCKADDR_ARG addr, socklen_t len)
{
    return shim_connect(fd, addr.__sockaddr__, len);
}
