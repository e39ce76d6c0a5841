/*
 * sock.c: the socket hooks of the http room and a plain socket's moves
 * (exchange.h's bo_hx_io).
 *
 * Every hook has three layers (docs/STYLE.md): the real function (libc's,
 * bound once), shim_*() (the room's logic) and the exported one.  The
 * exported read and write look the fd up once (conn.h) and call libc's
 * function straight away for every fd the room does not follow: files,
 * pipes, UNIX sockets, accepted sockets, TLS connections (ssl.c's), and
 * sockets whose first bytes were not a request line.  A client socket is
 * adopted when the program writes a request line on it (a connected TCP
 * socket that accept() did not return, written from outside libcurl,
 * whose transfers are the libcurl room's).  Everything a request and its
 * answer mean is the exchange's (exchange.c); a new connection for a retry
 * is redial.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "bo_time.h"
#include "core/core.h"
#include "http/conn.h"
#include "http/fdtab.h"
#include "http/exchange.h"
#include "http/sock.h"
#include "http/sockwait.h"
#include "loader/loader.h"

/* ---- the real functions ---------------------------------------------------- */

typedef ssize_t (*read_fn)(int, void *, size_t);
typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef ssize_t (*recv_fn)(int, void *, size_t, int);
typedef ssize_t (*send_fn)(int, const void *, size_t, int);
typedef ssize_t (*recvfrom_fn)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
typedef ssize_t (*sendto_fn)(int, const void *, size_t, int, const struct sockaddr *,
                             socklen_t);
typedef ssize_t (*writev_fn)(int, const struct iovec *, int);
typedef ssize_t (*read_chk_fn)(int, void *, size_t, size_t);
typedef ssize_t (*recv_chk_fn)(int, void *, size_t, size_t, int);
typedef ssize_t (*recvfrom_chk_fn)(int, void *, size_t, size_t, int, struct sockaddr *,
                                   socklen_t *);
typedef int (*close_fn)(int);
typedef int (*dup2_fn)(int, int);
typedef int (*dup3_fn)(int, int, int);
typedef int (*accept_fn)(int, struct sockaddr *, socklen_t *);
typedef int (*accept4_fn)(int, struct sockaddr *, socklen_t *, int);
typedef int (*connect_fn)(int, const struct sockaddr *, socklen_t);
typedef int (*shutdown_fn)(int, int);

static struct {
    read_fn read;
    write_fn write;
    recv_fn recv;
    send_fn send;
    recvfrom_fn recvfrom;
    sendto_fn sendto;
    writev_fn writev;
    read_chk_fn read_chk;
    recv_chk_fn recv_chk;
    recvfrom_chk_fn recvfrom_chk;
    close_fn close;
    dup2_fn dup2;
    dup3_fn dup3;
    accept_fn accept;
    accept4_fn accept4;
    connect_fn connect;
    shutdown_fn shutdown;
} g_real;
static int g_bound;

static void resolve(void)
{
    *(void **)&g_real.read = bo_core_next_fn("read", (void *)read);
    *(void **)&g_real.write = bo_core_next_fn("write", (void *)write);
    *(void **)&g_real.recv = bo_core_next_fn("recv", (void *)recv);
    *(void **)&g_real.send = bo_core_next_fn("send", (void *)send);
    *(void **)&g_real.recvfrom = bo_core_next_fn("recvfrom", (void *)recvfrom);
    *(void **)&g_real.sendto = bo_core_next_fn("sendto", (void *)sendto);
    *(void **)&g_real.writev = bo_core_next_fn("writev", (void *)writev);
    *(void **)&g_real.read_chk = bo_core_next_fn("__read_chk", NULL);
    *(void **)&g_real.recv_chk = bo_core_next_fn("__recv_chk", NULL);
    *(void **)&g_real.recvfrom_chk = bo_core_next_fn("__recvfrom_chk", NULL);
    *(void **)&g_real.close = bo_core_next_fn("close", (void *)close);
    *(void **)&g_real.dup2 = bo_core_next_fn("dup2", (void *)dup2);
    *(void **)&g_real.dup3 = bo_core_next_fn("dup3", (void *)dup3);
    *(void **)&g_real.accept = bo_core_next_fn("accept", (void *)accept);
    *(void **)&g_real.accept4 = bo_core_next_fn("accept4", (void *)accept4);
    *(void **)&g_real.connect = bo_core_next_fn("connect", NULL);
    *(void **)&g_real.shutdown = bo_core_next_fn("shutdown", (void *)shutdown);
}

/* The real functions, bound on first use (core.h). */
#define REAL(f) BO_CORE_REAL(g_real, g_bound, resolve, f)

/* ---- a plain socket's moves ---------------------------------------------------- */

/* Without a wait first: when the answer is there (the program read after
 * its poll said so) the socket's mode does not matter and is not asked. */
static ssize_t plain_look(bo_hconn *c, bool block)
{
    ssize_t n = REAL(recv)(c->fd, c->x.peek, BO_HC_PEEK_MAX, MSG_PEEK | MSG_DONTWAIT);
    if (n >= 0 || !block || (errno != EAGAIN && errno != EWOULDBLOCK) ||
        bo_hs_nonblocking(c->fd))
        return n;
    return REAL(recv)(c->fd, c->x.peek, BO_HC_PEEK_MAX, MSG_PEEK);
}

static int plain_hold(bo_hconn *c, size_t n)
{
    if (bo_hc_held_room(c, n) != 0)
        return -1;
    while (n > 0) {
        ssize_t r = REAL(recv)(c->fd, bo_hc_held_end(c), n, MSG_DONTWAIT);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        bo_hc_held_grew(c, (size_t)r);
        n -= (size_t)r;
    }
    return 0;
}

static bool plain_idle(bo_hconn *c)
{
    struct pollfd p = {.fd = c->fd, .events = POLLIN | POLLRDHUP};
    return bo_core_sys_poll(&p, 1, 0) == 0; /* neither more bytes nor the peer's close */
}

static ssize_t plain_put(bo_hconn *c, const char *buf, size_t n, short *ev)
{
    *ev = POLLOUT;
    return REAL(send)(c->fd, buf, n, MSG_NOSIGNAL | MSG_DONTWAIT);
}

static const bo_hx_io k_plain = {
    .look = plain_look,
    .hold = plain_hold,
    .idle = plain_idle,
    .put = plain_put,
};

/* ---- which sockets are followed ---------------------------------------------- */

/*
 * Is the code at ret inside a libcurl (its transfers are the libcurl
 * room's)?  The loader's record of the libcurl family's copies says, as it
 * says it for the libcurl hooks (a copy calls out only from inside a
 * transfer, so it is known by then).
 */
static bool from_libcurl(const void *ret)
{
    static const bo_lib_family *curl; /* (the same for every thread that finds it) */
    const bo_lib_family *f = __atomic_load_n(&curl, __ATOMIC_RELAXED);
    if (f == NULL) {
        if ((f = bo_lib_family_named("libcurl")) == NULL)
            return false;
        __atomic_store_n(&curl, f, __ATOMIC_RELAXED);
    }
    return bo_lib_copy_holding(f->copies, ret) >= 0;
}

bo_hconn *bo_hs_adopt(int fd, const void *ret)
{
    const bo_config *cfg = bo_core_config();
    struct sockaddr_storage ss;
    socklen_t l = sizeof ss;
    int type = 0, acc = 1;
    socklen_t tl = sizeof type, al = sizeof acc;
    bo_hconn *c;

    int mark = bo_hc_mark_of(fd); /* a tunnel's is followed: its TLS is never redialled */
    if (cfg == NULL || !cfg->http_hook || (mark != BO_HC_MARK_NONE && mark != BO_HC_MARK_TUNNEL))
        return NULL;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) != 0 || type != SOCK_STREAM ||
        getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &al) != 0 || acc != 0 ||
        getpeername(fd, (struct sockaddr *)&ss, &l) != 0 ||
        (ss.ss_family != AF_INET && ss.ss_family != AF_INET6) || from_libcurl(ret)) {
        bo_hc_set_mark(fd, BO_HC_MARK_NOT_CLIENT);
        return NULL;
    }
    if ((c = bo_hc_make(fd)) == NULL)
        return NULL;
    if (c->st == BO_HC_NONE) { /* where a new connection for a retry goes */
        memcpy(&c->peer, &ss, l);
        c->peer_len = l;
    }
    return c;
}

bo_hconn *bo_hs_record(int fd, bo_hx_wr *w, const char *buf, size_t n)
{
    bo_hconn *c = bo_hc_get(fd);
    int saved = errno;

    if (c != NULL && c->st != BO_HC_NONE &&
        (w->obj == NULL ? !c->tls : c->tls && c->ssl == w->obj))
        return c;
    if (!bo_hx_request_start(buf, n))
        return NULL;
    if (c != NULL && c->st != BO_HC_NONE)
        bo_hx_closed(fd); /* a record of an earlier connection on that number */
    c = bo_hs_adopt(fd, w->ret);
    w->asked = true;
    errno = saved;
    return c;
}

bool bo_hs_unclaimed(bo_hconn *c, const bo_hx_wr *w)
{
    return c->st == BO_HC_NONE && (w->asked || bo_hs_adopt(c->fd, w->ret) != NULL);
}

/* ---- the hooks' logic ------------------------------------------------------------- */

/* One write-like call, whatever its form. */
typedef struct wcall {
    enum { W_WRITE, W_SEND, W_SENDTO, W_WRITEV } kind;
    int fd, flags;
    const void *buf;
    size_t n;
    const struct sockaddr *to;
    socklen_t tolen;
    const struct iovec *iov;
    int iovcnt;
} wcall;

static ssize_t real_w(const wcall *w)
{
    switch (w->kind) {
    case W_WRITE:
        return REAL(write)(w->fd, w->buf, w->n);
    case W_SEND:
        return REAL(send)(w->fd, w->buf, w->n, w->flags);
    case W_SENDTO:
        return REAL(sendto)(w->fd, w->buf, w->n, w->flags, w->to, w->tolen);
    default:
        return REAL(writev)(w->fd, w->iov, w->iovcnt);
    }
}

/* The real call with buf (len bytes) in place of the program's first
 * buffer (the shim's Idempotency-Key line in it, bo_hx_write_before). */
static ssize_t real_w_as(const wcall *w, const char *buf, size_t len)
{
    wcall k = *w;
    struct iovec iov[64];
    if (w->kind == W_WRITEV) {
        memcpy(iov, w->iov, (size_t)w->iovcnt * sizeof iov[0]);
        iov[0].iov_base = (void *)buf;
        iov[0].iov_len = len;
        k.iov = iov;
    } else {
        k.buf = buf;
        k.n = len;
    }
    return real_w(&k);
}

/* A plain socket's record (bo_hx_wr.claim); a TLS connection's socket is
 * not the plain side's. */
static bool plain_claim(bo_hconn *c, bo_hx_wr *x)
{
    if (bo_hs_unclaimed(c, x))
        bo_hx_adopt(c, &k_plain, NULL, false, false);
    return c->st != BO_HC_NONE && !c->tls;
}

/*
 * A write on a socket the room follows or may adopt, through the exchange's
 * write path (bo_hx_write_before/after): errno as the real call's.
 */
static ssize_t shim_write(const wcall *w, const void *ret)
{
    struct iovec one = {.iov_base = (void *)w->buf, .iov_len = w->n};
    bo_hx_wr x = {.iov = w->kind == W_WRITEV ? w->iov : &one,
                  .iovcnt = w->kind == W_WRITEV ? w->iovcnt : 1,
                  .dontwait = (w->kind == W_SEND || w->kind == W_SENDTO) &&
                              (w->flags & MSG_DONTWAIT),
                  .claim = plain_claim,
                  .ret = ret};
    bo_hconn *c;
    ssize_t r;

    if (bo_core_busy || x.iovcnt <= 0 ||
        (c = bo_hs_record(w->fd, &x, x.iov[0].iov_base, x.iov[0].iov_len)) == NULL)
        return real_w(w);
    do {
        bo_hx_verdict v = bo_hx_write_before(c, &x);
        if (v != BO_HX_PASS)
            return v == BO_HX_OFF ? real_w(w) : -1;
        if (x.buf != x.iov[0].iov_base && w->kind == W_WRITEV && w->iovcnt > 64) {
            x.buf = x.iov[0].iov_base; /* (not a request the hooks made: as it is) */
            x.len = x.iov[0].iov_len;
        }
        r = x.buf == x.iov[0].iov_base ? real_w(w) : real_w_as(w, x.buf, x.len);
        r = bo_hx_write_after(c, &x, r, r < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
                                            errno != EINTR);
    } while (x.again);
    return r;
}

/* One read-like call, whatever its form. */
typedef struct rcall {
    enum { R_READ, R_RECV, R_RECVFROM, R_READ_CHK, R_RECV_CHK, R_RECVFROM_CHK } kind;
    int fd, flags;
    void *buf;
    size_t n, buflen;
    struct sockaddr *from;
    socklen_t *fromlen;
} rcall;

static ssize_t real_r(const rcall *r)
{
    switch (r->kind) {
    case R_READ:
        return REAL(read)(r->fd, r->buf, r->n);
    case R_RECV:
        return REAL(recv)(r->fd, r->buf, r->n, r->flags);
    case R_RECVFROM:
        return REAL(recvfrom)(r->fd, r->buf, r->n, r->flags, r->from, r->fromlen);
    case R_READ_CHK:
        return REAL(read_chk)(r->fd, r->buf, r->n, r->buflen);
    case R_RECV_CHK:
        return REAL(recv_chk)(r->fd, r->buf, r->n, r->buflen, r->flags);
    default:
        return REAL(recvfrom_chk)(r->fd, r->buf, r->n, r->buflen, r->flags, r->from,
                                  r->fromlen);
    }
}

static bool r_flag(const rcall *r, int flag)
{
    return r->kind != R_READ && r->kind != R_READ_CHK && (r->flags & flag);
}

/* A read on a connection whose request or answer is in flight, through the
 * exchange's read path (bo_hx_read_before, _held, _after). */
static ssize_t shim_read(bo_hconn *c, const rcall *r)
{
    bo_hx_rd x = {.buf = r->buf,
                  .n = r->n,
                  .dontwait = r_flag(r, MSG_DONTWAIT),
                  .peek = r_flag(r, MSG_PEEK)};

    bo_hx_verdict v = bo_hx_read_before(c, &x);
    if (v != BO_HX_PASS)
        return v == BO_HX_OFF ? real_r(r) : -1;
    ssize_t n = (ssize_t)bo_hx_read_held(c, &x);
    if (n == 0)
        n = real_r(r);
    bo_hx_read_after(c, &x, n > 0 ? (size_t)n : 0, n == 0 && r->n > 0);
    return n;
}

/* ---- the exported hooks ------------------------------------------------------------ */

/* A CONNECT written on a socket (a proxy's tunnel: HTTPS_PROXY): marked,
 * so that the TLS connection it carries is never redialled straight to the
 * proxy (bo_hx_may_redial); out of line, past the hooks' one-byte test. */
__attribute__((noinline)) static void note_tunnel(int fd, const char *buf)
{
    if (memcmp(buf, "CONNECT ", 8) == 0 && !bo_core_busy && !bo_hc_marked(fd))
        bo_hc_set_mark(fd, BO_HC_MARK_TUNNEL);
}

/* One lookup; then only the first bytes of a write on an fd without a
 * record (or whose record starts anew) are looked at.  A request written
 * from inside the shim's own call (libcurl's, during a perform the shim
 * manages) or on an fd already marked (libcurl's socket under the multi
 * interface, a server's) goes straight through, as shim_write would pass
 * it on. */
#define WRITE_HOOK(call, ...)                                                  \
    do {                                                                       \
        bo_hconn *c_ = bo_hc_get(fd);                                          \
        if (__builtin_expect(c_ == NULL || c_->st == BO_HC_NONE, 1)) {         \
            if (__builtin_expect(!bo_hx_request_start(first_, flen_), 1) ||    \
                bo_core_busy || bo_hc_marked(fd)) {                            \
                if (__builtin_expect(flen_ > 8 && first_[0] == 'C', 0))        \
                    note_tunnel(fd, first_);                                   \
                return call;                                                   \
            }                                                                  \
        } else if (c_->st == BO_HC_OFF || c_->tls) {                           \
            return call;                                                       \
        }                                                                      \
        wcall w_ = {__VA_ARGS__};                                              \
        return shim_write(&w_, __builtin_return_address(0));               \
    } while (0)

BO_EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
    const char *first_ = buf;
    size_t flen_ = n;
    WRITE_HOOK(REAL(write)(fd, buf, n), .kind = W_WRITE, .fd = fd, .buf = buf, .n = n);
}

BO_EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags)
{
    const char *first_ = buf;
    size_t flen_ = n;
    WRITE_HOOK(REAL(send)(fd, buf, n, flags), .kind = W_SEND, .fd = fd, .flags = flags,
               .buf = buf, .n = n);
}

BO_EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags,
                         __CONST_SOCKADDR_ARG to, socklen_t tolen)
{
    const char *first_ = buf;
    size_t flen_ = n;
    WRITE_HOOK(REAL(sendto)(fd, buf, n, flags, to.__sockaddr__, tolen), .kind = W_SENDTO, .fd = fd,
               .flags = flags, .buf = buf, .n = n, .to = to.__sockaddr__, .tolen = tolen);
}

BO_EXPORT ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
    const char *first_ = iovcnt > 0 && iov != NULL ? iov[0].iov_base : NULL;
    size_t flen_ = iovcnt > 0 && iov != NULL ? iov[0].iov_len : 0;
    if (first_ == NULL)
        return REAL(writev)(fd, iov, iovcnt);
    WRITE_HOOK(REAL(writev)(fd, iov, iovcnt), .kind = W_WRITEV, .fd = fd, .iov = iov,
               .iovcnt = iovcnt);
}

/* glibc's checked forms (_FORTIFY_SOURCE), which programs call in place of
 * read, recv and recvfrom when the buffer's size is known. */
ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags);
ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags,
                       __SOCKADDR_ARG from, socklen_t *fromlen);

#define READ_HOOK(call, ...)                                                   \
    do {                                                                       \
        bo_hconn *c_ = bo_hc_get(fd);                                          \
        if (__builtin_expect(!bo_hc_reads(c_), 1))                             \
            return call;                                                       \
        rcall r_ = {__VA_ARGS__};                                              \
        return shim_read(c_, &r_);                                             \
    } while (0)

BO_EXPORT ssize_t read(int fd, void *buf, size_t n)
{
    READ_HOOK(REAL(read)(fd, buf, n), .kind = R_READ, .fd = fd, .buf = buf, .n = n);
}

BO_EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags)
{
    READ_HOOK(REAL(recv)(fd, buf, n, flags), .kind = R_RECV, .fd = fd, .flags = flags,
              .buf = buf, .n = n);
}

BO_EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags, __SOCKADDR_ARG from,
                           socklen_t *fromlen)
{
    READ_HOOK(REAL(recvfrom)(fd, buf, n, flags, from.__sockaddr__, fromlen),
              .kind = R_RECVFROM, .fd = fd, .flags = flags, .buf = buf, .n = n,
              .from = from.__sockaddr__, .fromlen = fromlen);
}

BO_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
    READ_HOOK(REAL(read_chk)(fd, buf, n, buflen), .kind = R_READ_CHK, .fd = fd, .buf = buf,
              .n = n, .buflen = buflen);
}

BO_EXPORT ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags)
{
    READ_HOOK(REAL(recv_chk)(fd, buf, n, buflen, flags), .kind = R_RECV_CHK, .fd = fd,
              .flags = flags, .buf = buf, .n = n, .buflen = buflen);
}

BO_EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags,
                                 __SOCKADDR_ARG from, socklen_t *fromlen)
{
    READ_HOOK(REAL(recvfrom_chk)(fd, buf, n, buflen, flags, from.__sockaddr__, fromlen),
              .kind = R_RECVFROM_CHK, .fd = fd, .flags = flags, .buf = buf, .n = n,
              .buflen = buflen, .from = from.__sockaddr__, .fromlen = fromlen);
}

/* An fd that closes, or that another file takes, starts anew in the table. */
BO_EXPORT int close(int fd)
{
    bo_hx_closed(fd);
    return REAL(close)(fd);
}

BO_EXPORT int dup2(int oldfd, int newfd)
{
    int r = REAL(dup2)(oldfd, newfd);
    if (r >= 0 && oldfd != newfd)
        bo_hx_closed(newfd);
    return r;
}

BO_EXPORT int dup3(int oldfd, int newfd, int flags)
{
    int r = REAL(dup3)(oldfd, newfd, flags);
    if (r >= 0)
        bo_hx_closed(newfd);
    return r;
}

/* A server's sockets are never adopted. */
BO_EXPORT int accept(int fd, __SOCKADDR_ARG addr, socklen_t *len)
{
    int r = REAL(accept)(fd, addr.__sockaddr__, len);
    if (r >= 0) {
        int saved = errno;
        bo_hx_closed(r); /* a record of an earlier socket of that number */
        bo_hc_set_mark(r, BO_HC_MARK_ACCEPTED);
        bo_hx_serving();
        errno = saved;
    }
    return r;
}

BO_EXPORT int accept4(int fd, __SOCKADDR_ARG addr, socklen_t *len, int flags)
{
    int r = REAL(accept4)(fd, addr.__sockaddr__, len, flags);
    if (r >= 0) {
        int saved = errno;
        bo_hx_closed(r); /* a record of an earlier socket of that number */
        bo_hc_set_mark(r, BO_HC_MARK_ACCEPTED);
        bo_hx_serving();
        errno = saved;
    }
    return r;
}

/* A request whose writer shut down is sent again on a new connection only
 * with the same shutdown; one that will not be read is not retried. */
BO_EXPORT int shutdown(int fd, int how)
{
    int saved = errno;
    bo_hx_shutdown(fd, how);
    errno = saved;
    return REAL(shutdown)(fd, how);
}
