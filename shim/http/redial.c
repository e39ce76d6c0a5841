/*
 * redial.c: a new connection in place of a program's socket (redial.h).
 * Nothing here waits: the connect is started and looked at again by the
 * exchange, which waits where the program waits.  The library's own
 * descriptors are closed and duplicated with the system calls themselves,
 * so that its own moves never pass through its close and dup3 hooks.
 */
#include "http/redial.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/core.h"
#include "http/fdtab.h"
#include "http/sockwait.h"

#ifndef IP_BIND_ADDRESS_NO_PORT
#define IP_BIND_ADDRESS_NO_PORT 24
#endif

/* The library's own descriptors closed with the system call itself. */
static void sys_close(int fd)
{
    if (fd >= 0)
        (void)bo_core_sys_close(fd);
}

/* The options a program may have set, copied to the new socket (ints, or the
 * structures below).  Buffer sizes are left out: copying them would switch
 * the kernel's autotuning off where the program never asked for that. */
static const struct {
    int level, opt;
} k_int_opts[] = {
    {SOL_SOCKET, SO_KEEPALIVE},      {SOL_SOCKET, SO_OOBINLINE},
    {SOL_SOCKET, SO_PRIORITY},       {SOL_SOCKET, SO_MARK},
    {IPPROTO_TCP, TCP_NODELAY},      {IPPROTO_TCP, TCP_KEEPIDLE},
    {IPPROTO_TCP, TCP_KEEPINTVL},    {IPPROTO_TCP, TCP_KEEPCNT},
    {IPPROTO_TCP, TCP_USER_TIMEOUT}, {IPPROTO_TCP, TCP_SYNCNT},
};

static void copy_opts(int from, int to, int family)
{
    char dev[64];
    struct timeval tv;
    struct linger lg;
    socklen_t l;
    int v;

    for (size_t i = 0; i < sizeof k_int_opts / sizeof k_int_opts[0]; i++) {
        l = sizeof v;
        if (getsockopt(from, k_int_opts[i].level, k_int_opts[i].opt, &v, &l) == 0 &&
            (k_int_opts[i].opt != SO_MARK || v != 0))
            (void)setsockopt(to, k_int_opts[i].level, k_int_opts[i].opt, &v, sizeof v);
    }
    l = sizeof v;
    if (family == AF_INET && getsockopt(from, IPPROTO_IP, IP_TOS, &v, &l) == 0 && v != 0)
        (void)setsockopt(to, IPPROTO_IP, IP_TOS, &v, sizeof v);
    l = sizeof v;
    if (family == AF_INET6 && getsockopt(from, IPPROTO_IPV6, IPV6_TCLASS, &v, &l) == 0 && v > 0)
        (void)setsockopt(to, IPPROTO_IPV6, IPV6_TCLASS, &v, sizeof v);
    l = sizeof v;
    if (family == AF_INET6 && getsockopt(from, IPPROTO_IPV6, IPV6_V6ONLY, &v, &l) == 0)
        (void)setsockopt(to, IPPROTO_IPV6, IPV6_V6ONLY, &v, sizeof v);
    static const int tos[] = {SO_RCVTIMEO, SO_SNDTIMEO};
    for (size_t i = 0; i < 2; i++) {
        l = sizeof tv;
        if (getsockopt(from, SOL_SOCKET, tos[i], &tv, &l) == 0 && (tv.tv_sec || tv.tv_usec))
            (void)setsockopt(to, SOL_SOCKET, tos[i], &tv, sizeof tv);
    }
    l = sizeof lg;
    if (getsockopt(from, SOL_SOCKET, SO_LINGER, &lg, &l) == 0 && lg.l_onoff)
        (void)setsockopt(to, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    l = sizeof dev;
    if (getsockopt(from, SOL_SOCKET, SO_BINDTODEVICE, dev, &l) == 0 && l > 0 && dev[0] != '\0')
        (void)setsockopt(to, SOL_SOCKET, SO_BINDTODEVICE, dev, l);
}

/* The same local address (any port), when the old socket's is not a wildcard. */
static void bind_like(int from, int to)
{
    struct sockaddr_storage ss;
    socklen_t l = sizeof ss;
    int one = 1;

    if (getsockname(from, (struct sockaddr *)&ss, &l) != 0)
        return;
    if (ss.ss_family == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)&ss;
        if (in->sin_addr.s_addr == htonl(INADDR_ANY))
            return;
        in->sin_port = 0;
    } else if (ss.ss_family == AF_INET6) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
        if (IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr))
            return;
        in6->sin6_port = 0;
    } else {
        return;
    }
    (void)setsockopt(to, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
    (void)bind(to, (struct sockaddr *)&ss, l);
}

int bo_hr_dial(bo_hconn *c)
{
    /* the program's socket, or while a stand-in holds the fd, the original
     * the record kept aside for this */
    int fd = c->rt.orig_fd >= 0 ? c->rt.orig_fd : c->fd, dom, type, proto, nfd;
    socklen_t l = sizeof dom;

    /* The peer as the socket knows it now (a socket reset knows none: the
     * one of the adoption, then) */
    struct sockaddr_storage now;
    socklen_t nl = sizeof now;
    if (getpeername(fd, (struct sockaddr *)&now, &nl) == 0 && nl <= sizeof c->peer &&
        now.ss_family == c->peer.ss_family) {
        memcpy(&c->peer, &now, nl);
        c->peer_len = nl;
    }
    if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &l) != 0 ||
        (l = sizeof type, getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l)) != 0 ||
        (l = sizeof proto, getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &l)) != 0 ||
        dom != c->peer.ss_family)
        return -1;
    if ((nfd = socket(dom, type | SOCK_NONBLOCK | SOCK_CLOEXEC, proto)) < 0)
        return -1;
    copy_opts(fd, nfd, dom);
    bind_like(fd, nfd);
    if (bo_core_sys_connect(nfd, (struct sockaddr *)&c->peer, c->peer_len) != 0 &&
        errno != EINPROGRESS) {
        int e = errno;
        sys_close(nfd);
        errno = e; /* (a refusal is a failed attempt, not a retry abandoned) */
        return -1;
    }
    c->rt.dial_fd = nfd;
    return 0;
}

int bo_hr_dial_done(bo_hconn *c)
{
    struct pollfd p = {.fd = c->rt.dial_fd, .events = POLLOUT};
    int err = 0;
    socklen_t l = sizeof err;

    if (c->rt.dial_fd < 0)
        return -1;
    if (bo_core_sys_poll(&p, 1, 0) == 0)
        return 0;
    if (getsockopt(c->rt.dial_fd, SOL_SOCKET, SO_ERROR, &err, &l) == 0 && err == 0 &&
        (p.revents & POLLOUT))
        return 1;
    sys_close(c->rt.dial_fd);
    c->rt.dial_fd = -1;
    return -1;
}

/* nfd onto c->fd, as the heading of bo_hr_swap says; nfd is closed. */
static int move_onto(bo_hconn *c, int nfd)
{
    bo_hs_epreg regs[BO_HC_EPOLL_MAX];
    int fd = c->fd, fl = fcntl(fd, F_GETFL), fdfl = fcntl(fd, F_GETFD);

    if (fl < 0 || fdfl < 0 || fcntl(nfd, F_SETFL, fl & (O_NONBLOCK | O_APPEND | O_ASYNC)) != 0) {
        sys_close(nfd);
        return -1;
    }
    int nregs = bo_hs_epoll_regs(fd, regs, BO_HC_EPOLL_MAX);
    if (bo_core_sys_dup3(nfd, fd, (fdfl & FD_CLOEXEC) ? O_CLOEXEC : 0) != fd) {
        sys_close(nfd);
        return -1;
    }
    sys_close(nfd);
    for (int i = 0; i < nregs; i++)
        if (epoll_ctl(regs[i].epfd, EPOLL_CTL_ADD, fd, &regs[i].ev) != 0 && errno == EEXIST)
            (void)epoll_ctl(regs[i].epfd, EPOLL_CTL_MOD, fd, &regs[i].ev);
    c->ino = bo_hc_identity(fd);
    return 0;
}

int bo_hr_swap(bo_hconn *c)
{
    int nfd = c->rt.dial_fd;

    c->rt.dial_fd = -1;
    if (nfd < 0 || move_onto(c, nfd) != 0)
        return -1;
    sys_close(c->rt.park_fd); /* a stand-in is gone with it, and the original it stood for */
    sys_close(c->rt.orig_fd);
    c->rt.park_fd = c->rt.orig_fd = -1;
    return 0;
}

int bo_hr_park(bo_hconn *c)
{
    int pair[2];

    if (c->rt.park_fd >= 0)
        return 0;
    /* the original is kept aside: a new connection is made like it */
    int orig = fcntl(c->fd, F_DUPFD_CLOEXEC, 0);
    if (orig < 0)
        return -1;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
        sys_close(orig);
        return -1;
    }
    if (move_onto(c, pair[0]) != 0) {
        sys_close(pair[1]);
        sys_close(orig);
        return -1;
    }
    c->rt.park_fd = pair[1];
    c->rt.orig_fd = orig;
    return 0;
}

void bo_hr_unpark(bo_hconn *c)
{
    sys_close(c->rt.park_fd);
    c->rt.park_fd = -1;
}

void bo_hr_release(bo_hconn *c)
{
    sys_close(c->rt.dial_fd);
    sys_close(c->rt.park_fd);
    sys_close(c->rt.orig_fd);
    c->rt.dial_fd = c->rt.park_fd = c->rt.orig_fd = -1;
}
