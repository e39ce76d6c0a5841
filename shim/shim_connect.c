/*
 * shim_connect: the connect() hook of libbackoff.so.
 *
 * Only blocking stream sockets (TCP over IPv4/IPv6, UNIX sockets) are
 * managed; non-blocking connects (libcurl's own among them) and datagram
 * sockets pass straight through.  Which failures are retried is
 * bo_connect_errno_retryable's rule (policies/bo_classify.h): a refusal is
 * retried only from a destination that accepted a connection before in this
 * process, or that BACKOFF_HOSTS names, and a UNIX socket's full backlog;
 * any other refusal is handed back at once, outside the window.  A retry
 * reuses the program's own socket, so every option, flag and binding stays
 * as the program set it.  The call is bounded by connect_deadline (the
 * program's own limits, BACKOFF_MAX_TIME_MS or BO_CONNECT_MAX_TIME_MS) and
 * a signal whose handler lacks SA_RESTART ends a wait with EINTR.  On final
 * failure errno is what libc left after the last attempt.
 */
#include "bo_shim.h"
#include "bo_time.h"

#include <arpa/inet.h>
#include <dlfcn.h>
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


typedef int (*connect_fn)(int, const struct sockaddr *, socklen_t);

static connect_fn real_connect_fn;
static int g_connect_bound;

/* Bind libc's connect(); abort loudly if it is missing or is ourselves. */
static void resolve_connect(void)
{
    *(void **)&real_connect_fn = dlsym(RTLD_NEXT, "connect");
    if (real_connect_fn == NULL || (void *)real_connect_fn == (void *)connect) {
        static const char msg[] = "backoff: cannot find libc's connect; cannot continue\n";
        (void)!write(2, msg, sizeof msg - 1);
        abort();
    }
}

static int real_connect(int fd, const struct sockaddr *sa, socklen_t len)
{
    bo_shim_once(&g_connect_bound, resolve_connect);
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
    char addr[INET6_ADDRSTRLEN];
    int port;

    switch (sa->sa_family) {
    case AF_INET: {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        if (len < sizeof *in || inet_ntop(AF_INET, &in->sin_addr, addr, sizeof addr) == NULL)
            return -1;
        port = ntohs(in->sin_port);
        if (!bo_config_host_matches(cfg, addr, port))
            return -1;
        snprintf(key, keylen, "tcp://%s:%d", addr, port);
        return 0;
    }
    case AF_INET6: {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        if (len < sizeof *in6 || inet_ntop(AF_INET6, &in6->sin6_addr, addr, sizeof addr) == NULL)
            return -1;
        port = ntohs(in6->sin6_port);
        if (!bo_config_host_matches(cfg, addr, port))
            return -1;
        snprintf(key, keylen, "tcp://[%s]:%d", addr, port);
        return 0;
    }
    case AF_UNIX: {
        const struct sockaddr_un *un = (const struct sockaddr_un *)sa;
        size_t off = offsetof(struct sockaddr_un, sun_path);
        if (cfg->n_hosts > 0 || len <= off)
            return -1;
        size_t n = len - off;
        if (un->sun_path[0] == '\0') /* abstract name */
            snprintf(key, keylen, "unix:@%.*s", (int)(n - 1), un->sun_path + 1);
        else
            snprintf(key, keylen, "unix:%.*s", (int)strnlen(un->sun_path, n), un->sun_path);
        return 0;
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
    if (flags < 0 || (flags & O_NONBLOCK))
        return false;
    return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) == 0 && type == SOCK_STREAM;
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
 * One retry on the program's own socket (Linux lets a TCP or UNIX stream
 * socket whose connect failed connect again, with every option, flag and
 * binding as the program set them).  A TCP attempt may not run past the
 * call's deadline: its SO_SNDTIMEO is lowered to the time left for the
 * attempt and restored.  When that runs out the kernel answers EINPROGRESS;
 * if the program set no send timeout of its own the attempt is aborted and
 * ETIMEDOUT returned, as a plain connect that timed out leaves it.  Returns
 * connect()'s value; *err gets its errno.
 */
static int retry_attempt(int fd, const struct sockaddr *sa, socklen_t len, int64_t deadline,
                         int *err)
{
    struct timeval own, left;
    socklen_t l = sizeof own;
    int64_t rest = deadline - bo_shim_now_ns();
    bool bounded = false;
    int rc;

    if (sa->sa_family != AF_UNIX && rest > 0 &&
        getsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &own, &l) == 0 &&
        (tv_ns(&own) == 0 || tv_ns(&own) > rest)) {
        left.tv_sec = (time_t)(rest / BO_NS_PER_S);
        left.tv_usec = (suseconds_t)((rest % BO_NS_PER_S) / 1000);
        if (left.tv_sec == 0 && left.tv_usec == 0)
            left.tv_usec = 1;
        bounded = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &left, sizeof left) == 0;
    }
    rc = real_connect(fd, sa, len);
    *err = rc == 0 ? 0 : errno;
    if (bounded) {
        (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &own, sizeof own);
        if (rc != 0 && *err == EINPROGRESS && tv_ns(&own) == 0) {
            struct sockaddr unspec = {.sa_family = AF_UNSPEC};
            (void)real_connect(fd, &unspec, sizeof unspec);
            *err = ETIMEDOUT;
        }
    }
    return rc;
}

/* Errors that say the kernel would not take the socket again (not seen on Linux). */
static bool not_reusable(int e)
{
    return e == EALREADY || e == EISCONN || e == EBADFD || e == EINVAL;
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
 * One connect() call under the policy.  A destination that is neither known
 * alive nor named gets its first attempt outside the window (no slot, no
 * wait, nothing counted) and its "nothing here" refusal back at once, so
 * that a failing destination never holds a process's threads in line.  The
 * call's deadline (connect_deadline) bounds the retries; a signal without
 * SA_RESTART during a wait ends the call with EINTR.
 */
static int managed_connect(bo_shim_dest *sd, int fd, const struct sockaddr *sa, socklen_t len,
                           bool named, int *err)
{
    const bo_config *cfg = bo_shim_config();
    bool is_unix = sa->sa_family == AF_UNIX;
    bool known = named || __atomic_load_n(&sd->alive, __ATOMIC_RELAXED);
    int64_t start = bo_shim_now_ns(), deadline = INT64_MAX, until;
    uint64_t id = 0;
    unsigned inflight = 0;
    bo_call call;
    int rc = -1, e = 0;
    /* the logical request: a connect to this destination refused (or
     * failed) after our retries and tried again by the program */
    uint64_t key = known ? bo_key_add(bo_key_add(BO_KEY_INIT, "connect"), sd->key) : 0;
    bool retryable = false;

    bo_call_begin(&call, start);
    (void)bo_shim_lineage_begin(key, &call);
    if (known) /* the first admission may wait (an outage): bound it too */
        deadline = connect_deadline(cfg, fd, sa->sa_family, start);
    for (;;) {
        bool admitted = known || call.attempts > 0;
        if (admitted) {
            int a = bo_shim_admit_intr(sd, &call, deadline, &inflight);
            if (a == EINTR)
                goto interrupted;
            if (a != 0 && call.attempts > 0) /* a retry past the deadline: the last result stands */
                break;
            if (a != 0) { /* the deadline came before a first slot: one plain attempt */
                rc = real_connect(fd, sa, len);
                *err = rc == 0 ? 0 : errno;
                if (rc == 0)
                    __atomic_store_n(&sd->alive, 1, __ATOMIC_RELAXED);
                return rc;
            }
        }
        if (call.attempts <= 1) {
            rc = real_connect(fd, sa, len);
            e = rc == 0 ? 0 : errno;
        } else {
            rc = retry_attempt(fd, sa, len, deadline, &e);
            if (rc != 0 && not_reusable(e)) {
                bo_shim_result gone = {.outcome = {BO_VERDICT_FINAL, BO_SIGNAL_NONE, false},
                                      .retry_after_ns = -1, .status = 0, .code = e,
                                      .ratelimit = NULL};
                (void)bo_shim_complete(sd, &call, &gone, id, "connect", inflight, &until);
                rc = -1; /* *err keeps the previous attempt's errno */
                break;
            }
        }
        *err = e;
        if (rc == 0 && !__atomic_load_n(&sd->alive, __ATOMIC_RELAXED))
            __atomic_store_n(&sd->alive, 1, __ATOMIC_RELAXED);
        bo_attempt at = {.curl_code = BO_CURLE_OK,
                         .connect_errno = e,
                         .connect_unix = is_unix,
                         .connect_unknown = !known};
        bo_shim_result res = {.outcome = bo_classify(cfg, &at),
                              .retry_after_ns = -1,
                              .status = 0,
                              .code = e};
        if (!admitted) {
            if (res.outcome.verdict != BO_VERDICT_RETRY)
                return rc; /* handed back as plain: no slot was taken */
            call.attempts = 1; /* it ran outside the window, and it counts */
        }
        retryable = res.outcome.verdict == BO_VERDICT_RETRY;
        if (id == 0)
            id = bo_shim_next_call_id();
        if (!bo_shim_complete(sd, &call, &res, id, "connect", inflight, &until))
            break;
        if (deadline == INT64_MAX)
            deadline = connect_deadline(cfg, fd, sa->sa_family, start);
        if (until >= deadline) {
            bo_shim_call_abandoned(sd); /* no time for another attempt */
            break;
        }
        if (bo_shim_wait_until(until) == EINTR)
            goto interrupted;
    }
    bo_shim_lineage_end(key, &call, rc != 0 && retryable);
    return rc;
interrupted:
    bo_shim_call_abandoned(sd);
    continue_asynchronously(fd, sa, len);
    *err = EINTR;
    return -1;
}

static int shim_connect(int fd, const struct sockaddr *sa, socklen_t len)
{
    const bo_config *cfg;
    bo_shim_dest *sd;
    char key[BO_DEST_KEY_LEN];
    int saved = errno, err, rc;

    if (bo_shim_busy || sa == NULL || (cfg = bo_shim_config()) == NULL || !cfg->connect_hook)
        return real_connect(fd, sa, len);
    if (sa->sa_family != AF_INET && sa->sa_family != AF_INET6 && sa->sa_family != AF_UNIX)
        return real_connect(fd, sa, len);
    if (!manageable(fd) || dest_key(cfg, sa, len, key, sizeof key) != 0 ||
        (sd = bo_shim_dest_get(key)) == NULL) {
        errno = saved;
        return real_connect(fd, sa, len);
    }
    bo_shim_busy = 1;
    err = saved;
    /* dest_key admits a destination under a non-empty BACKOFF_HOSTS only when named. */
    rc = managed_connect(sd, fd, sa, len, cfg->n_hosts > 0, &err);
    bo_shim_dest_put(sd);
    bo_shim_busy = 0;
    errno = rc == 0 ? saved : err;
    return rc;
}

BO_EXPORT int connect(int fd, __CONST_SOCKADDR_ARG addr, socklen_t len)
{
    return shim_connect(fd, addr.__sockaddr__, len);
}
