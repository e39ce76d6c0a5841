/*
 * shim_connect: the connect() hook of libbackoff.so.
 *
 * Only blocking stream sockets (TCP over IPv4/IPv6, unix sockets) are
 * managed; non-blocking connects (libcurl's own among them) and datagram
 * sockets pass straight through.  A connect that fails with ECONNREFUSED,
 * ETIMEDOUT, ENETUNREACH, EHOSTUNREACH (or EAGAIN on a unix socket) is
 * retried under the policy on a socket in a clean state, made anew with the
 * same domain/type/protocol, its status and descriptor flags and a few
 * common options copied, and placed on the caller's descriptor number.  On
 * final failure errno is what libc left after the last attempt.
 */
#include "bo_shim.h"

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
 * Is this a connect the shim manages: a blocking stream socket that the
 * caller did not bind (a binding could not be recreated on a new socket)?
 */
static bool manageable(int fd, int family)
{
    int type = 0, flags;
    socklen_t tl = sizeof type;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;

    flags = fcntl(fd, F_GETFL); /* first: most connects (libcurl's) are non-blocking */
    if (flags < 0 || (flags & O_NONBLOCK))
        return false;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) != 0 || type != SOCK_STREAM)
        return false;
    memset(&ss, 0, sizeof ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0)
        return false;
    if (family == AF_INET)
        return ((struct sockaddr_in *)&ss)->sin_port == 0;
    if (family == AF_INET6)
        return ((struct sockaddr_in6 *)&ss)->sin6_port == 0;
    return sl <= offsetof(struct sockaddr_un, sun_path);
}

static void copy_int_opt(int from, int to, int level, int name)
{
    int v;
    socklen_t l = sizeof v;
    if (getsockopt(from, level, name, &v, &l) == 0)
        (void)setsockopt(to, level, name, &v, l);
}

static void copy_tv_opt(int from, int to, int name)
{
    struct timeval tv;
    socklen_t l = sizeof tv;
    if (getsockopt(from, SOL_SOCKET, name, &tv, &l) == 0 && (tv.tv_sec || tv.tv_usec))
        (void)setsockopt(to, SOL_SOCKET, name, &tv, l);
}

/*
 * Replace the socket on `fd` by a new one in a clean state with the same
 * domain, type, protocol, status flags (restored, never overwritten with
 * constants), descriptor flags and common options.  Returns 0 or -1.
 */
static int fresh_socket(int fd, int family)
{
    int type = 0, proto = 0, fl, fdfl, nfd;
    socklen_t l = sizeof type;

    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l) != 0)
        return -1;
    l = sizeof proto;
    if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &l) != 0)
        proto = 0;
    if ((fl = fcntl(fd, F_GETFL)) < 0 || (fdfl = fcntl(fd, F_GETFD)) < 0)
        return -1;
    nfd = socket(family, type, proto);
    if (nfd < 0)
        return -1;
    copy_int_opt(fd, nfd, SOL_SOCKET, SO_KEEPALIVE);
    copy_int_opt(fd, nfd, SOL_SOCKET, SO_REUSEADDR);
    copy_tv_opt(fd, nfd, SO_RCVTIMEO);
    copy_tv_opt(fd, nfd, SO_SNDTIMEO);
    if (family != AF_UNIX)
        copy_int_opt(fd, nfd, IPPROTO_TCP, TCP_NODELAY);
    if (fcntl(nfd, F_SETFL, fl) != 0)
        goto fail;
    if (dup2(nfd, fd) < 0)
        goto fail;
    close(nfd);
    if (fcntl(fd, F_SETFD, fdfl) != 0)
        return -1;
    return 0;
fail:
    close(nfd);
    return -1;
}

static int managed_connect(bo_shim_dest *sd, int fd, const struct sockaddr *sa, socklen_t len,
                           int *err)
{
    const bo_config *cfg = bo_shim_config();
    uint64_t id = bo_shim_next_call_id();
    bo_call call;
    unsigned inflight = 0;
    int rc = -1;
    bool have_result = false;

    int64_t now = bo_shim_now_ns();
    bo_call_begin(&call, now);
    for (;;) {
        int64_t until;
        if (bo_shim_admit(sd, &call, now, &inflight) != 0) {
            if (!have_result) { /* the engine promises this never happens */
                rc = real_connect(fd, sa, len);
                *err = errno;
            }
            break;
        }
        rc = real_connect(fd, sa, len);
        *err = rc == 0 ? 0 : errno;
        have_result = true;
        bo_attempt a = {.curl_code = BO_CURLE_OK,
                        .http_status = 0,
                        .method = NULL,
                        .body_delivered = 0,
                        .has_upload = false,
                        .upload_rewindable = false,
                        .request_sent = false,
                        .connect_errno = *err};
        bo_shim_result res = {.outcome = bo_classify(cfg, &a),
                              .retry_after_ns = -1,
                              .status = 0,
                              .code = *err};
        /* EAGAIN means "listener's backlog full" only on unix sockets. */
        if (*err == EAGAIN && sa->sa_family != AF_UNIX)
            res.outcome.verdict = BO_VERDICT_FINAL;
        if (!bo_shim_complete(sd, &call, &res, id, "connect", inflight, &until))
            break;
        if (fresh_socket(fd, sa->sa_family) != 0) {
            bo_shim_call_abandoned(sd); /* no clean socket: the last failure stands */
            break;
        }
        while (bo_shim_wait_until(until) == EINTR) {
        }
        now = 0; /* the next admission reads the clock */
    }
    return rc;
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
    if (!manageable(fd, sa->sa_family) || dest_key(cfg, sa, len, key, sizeof key) != 0 ||
        (sd = bo_shim_dest_get(key)) == NULL) {
        errno = saved;
        return real_connect(fd, sa, len);
    }
    bo_shim_busy = 1;
    err = saved;
    rc = managed_connect(sd, fd, sa, len, &err);
    bo_shim_dest_put(sd);
    bo_shim_busy = 0;
    errno = rc == 0 ? saved : err;
    return rc;
}

BO_EXPORT int connect(int fd, __CONST_SOCKADDR_ARG addr, socklen_t len)
{
    return shim_connect(fd, addr.__sockaddr__, len);
}
