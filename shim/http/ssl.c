/*
 * ssl.c: the OpenSSL side of the http room: the libssl family declared to
 * the loader, each copy's real functions, the hooks (SSL_write, SSL_read,
 * SSL_peek and their _ex forms, SSL_pending, SSL_has_pending) and a TLS
 * connection's moves (exchange.h's bo_hx_io) on an SSL object bound to a
 * socket (SSL_get_fd >= 0: Python's _ssl, Ruby's openssl, Perl's
 * Net::SSLeay, PHP's streams).  Objects on memory BIOs (asyncio, Node) and
 * libcurl's own pass through.
 *
 * The answer is looked at with SSL_peek_ex, which gives one TLS record at
 * a time: a head spread over records is read into the record's `held`
 * bytes, which the program's SSL_read, SSL_peek and SSL_pending are then
 * served from first.  A retry goes on the same connection when the answer
 * keeps it alive (the answer consumed whole), else on a new TCP connection
 * dup3()ed onto the fd, on which the program's own SSL object is cleared
 * (SSL_clear keeps its context, SNI, ALPN and verification settings) and
 * handshakes again (SSL_connect).  The answer is held whole before the old
 * connection goes: when the new handshake fails (the certificate no longer
 * verifies, the server refuses) the program gets that answer as if nothing
 * had happened, and the error on its next call on the object.
 *
 * Each exported hook finds the copy its caller was bound to (the caller's
 * own dependency: Python's _ssl and Perl's SSLeay.so load libssl
 * RTLD_LOCAL, where dlsym(RTLD_NEXT) finds nothing); a dlsym of a hooked
 * name, or a deep-bound object's GOT, gets the wrapper of that copy.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "core/core.h"
#include "http/conn.h"
#include "http/callers.h"
#include "http/exchange.h"
#include "http/sock.h"
#include "loader/loader.h"

/* OpenSSL's ABI constants this file needs (stable since 1.0: no header). */
#define SSL_ERROR_NONE 0
#define SSL_ERROR_SSL 1
#define SSL_ERROR_WANT_READ 2
#define SSL_ERROR_WANT_WRITE 3
#define SSL_ERROR_SYSCALL 5
#define SSL_ERROR_ZERO_RETURN 6

typedef struct ssl_st SSL;

/* ---- the family and its copies ------------------------------------------------- */

enum {
    SSLF_READ,
    SSLF_READ_EX,
    SSLF_WRITE,
    SSLF_WRITE_EX,
    SSLF_PEEK,
    SSLF_PEEK_EX,
    SSLF_PENDING,
    SSLF_HAS_PENDING,
    SSLF_NHOOKED,
    SSLF_GET_FD = SSLF_NHOOKED,
    SSLF_GET_ERROR,
    SSLF_CONNECT,
    SSLF_CLEAR,
    SSLF_ALPN,
    SSLF_NFNS
};

static const char *const k_fn_names[SSLF_NFNS] = {
    [SSLF_READ] = "SSL_read",
    [SSLF_READ_EX] = "SSL_read_ex",
    [SSLF_WRITE] = "SSL_write",
    [SSLF_WRITE_EX] = "SSL_write_ex",
    [SSLF_PEEK] = "SSL_peek",
    [SSLF_PEEK_EX] = "SSL_peek_ex",
    [SSLF_PENDING] = "SSL_pending",
    [SSLF_HAS_PENDING] = "SSL_has_pending",
    [SSLF_GET_FD] = "SSL_get_fd",
    [SSLF_GET_ERROR] = "SSL_get_error",
    [SSLF_CONNECT] = "SSL_connect",
    [SSLF_CLEAR] = "SSL_clear",
    [SSLF_ALPN] = "SSL_get0_alpn_selected",
};

/* One libssl copy's real functions. */
typedef struct ssl_real {
    int (*read)(SSL *, void *, int);
    int (*read_ex)(SSL *, void *, size_t, size_t *);
    int (*write)(SSL *, const void *, int);
    int (*write_ex)(SSL *, const void *, size_t, size_t *);
    int (*peek)(SSL *, void *, int);
    int (*peek_ex)(SSL *, void *, size_t, size_t *);
    int (*pending)(const SSL *);
    int (*has_pending)(const SSL *);
    int (*get_fd)(const SSL *);
    int (*get_error)(const SSL *, int);
    int (*connect)(SSL *);
    int (*clear)(SSL *);
    void (*alpn)(const SSL *, const unsigned char **, unsigned int *);
    int bound;
} ssl_real;

static ssl_real g_reals[BO_LIB_MAX_COPIES];

static void ssl_bind(int slot, void *const *fn)
{
    ssl_real *r = &g_reals[slot];
    *(void **)&r->read = fn[SSLF_READ];
    *(void **)&r->read_ex = fn[SSLF_READ_EX];
    *(void **)&r->write = fn[SSLF_WRITE];
    *(void **)&r->write_ex = fn[SSLF_WRITE_EX];
    *(void **)&r->peek = fn[SSLF_PEEK];
    *(void **)&r->peek_ex = fn[SSLF_PEEK_EX];
    *(void **)&r->pending = fn[SSLF_PENDING];
    *(void **)&r->has_pending = fn[SSLF_HAS_PENDING];
    *(void **)&r->get_fd = fn[SSLF_GET_FD];
    *(void **)&r->get_error = fn[SSLF_GET_ERROR];
    *(void **)&r->connect = fn[SSLF_CONNECT];
    *(void **)&r->clear = fn[SSLF_CLEAR];
    *(void **)&r->alpn = fn[SSLF_ALPN];
    __atomic_store_n(&r->bound, 1, __ATOMIC_RELEASE);
}

static void *ssl_wrapper(int slot, int fn);

static bo_lib_copies g_copies;

static const bo_lib_family g_ssl_family = {
    .name = "libssl",
    .soname = "libssl",
    .prefix = "SSL_",
    .fns = k_fn_names,
    .nfns = SSLF_NFNS,
    .nhooked = SSLF_NHOOKED,
    .bind = ssl_bind,
    .wrapper = ssl_wrapper,
    .copies = &g_copies,
};
BO_LIB_FAMILY(g_ssl_family);

_Static_assert(SSLF_NFNS <= BO_LIB_MAX_FNS, "the registry holds every function of a copy");

/* The copy an exported hook's caller means (callers.h). */
static void ssl_ask_global(void);
static bo_hcallers g_callers = {.family = &g_ssl_family, .ask_global = ssl_ask_global,
                                .global_slot = -1};

static void ssl_ask_global(void)
{
    g_callers.global_slot = bo_lib_slot_global(&g_ssl_family);
}

static inline const ssl_real *caller_real(const void *ret)
{
    const ssl_real *R = &g_reals[bo_hcallers_slot(&g_callers, ret)];
    if (__builtin_expect(!__atomic_load_n(&R->bound, __ATOMIC_ACQUIRE), 0))
        bo_core_die("backoff: the program's libssl is not bound; cannot continue");
    return R;
}

/* Set once a connection over TLS was adopted: until then a read is the real one at once. */
static int g_tls_used;

/* ---- a TLS connection's moves ------------------------------------------------------ */

/* Decrypted bytes ready without a wait: held, in the SSL object, or on the socket. */
static bool ready(bo_hconn *c, const ssl_real *R)
{
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    return R->has_pending(c->ssl) || poll(&p, 1, 0) > 0;
}

static ssize_t tls_look(bo_hconn *c, void *ctx, bool nb)
{
    const ssl_real *R = ctx;
    size_t h = bo_hc_held_left(c), got = 0;

    if (h > BO_HC_PEEK_MAX)
        h = BO_HC_PEEK_MAX;
    if (h > 0)
        memcpy(c->peek, c->held + c->held_off, h);
    /* A peek on a non-blocking socket never waits, and leaves the object's
     * state as the program's own read would (SSL_get_error: WANT_READ). */
    if (h == BO_HC_PEEK_MAX || ((h > 0 || (nb && !bo_hs_nonblocking(c, NULL))) && !ready(c, R)))
        goto out;
    int r = R->peek_ex(c->ssl, c->peek + h, BO_HC_PEEK_MAX - h, &got);
    if (r == 1)
        return (ssize_t)(h + got);
    int e = R->get_error(c->ssl, r);
    if (h > 0)
        return (ssize_t)h;
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        errno = EAGAIN;
        return -1;
    }
    if (e == SSL_ERROR_ZERO_RETURN)
        return 0;
    errno = e == SSL_ERROR_SYSCALL && errno != 0 ? errno : ECONNRESET;
    return -1;
out:
    if (h > 0)
        return (ssize_t)h;
    errno = EAGAIN;
    return -1;
}

/* After the SSL call that returned r on c: wait, by until_ns, for what it
 * wants (the socket readable or writable): 0, or -1 when it wants neither
 * (it failed) or the wait ran out. */
static int wait_wanted(bo_hconn *c, const ssl_real *R, int r, int64_t until_ns)
{
    int e = R->get_error(c->ssl, r);
    short ev = e == SSL_ERROR_WANT_READ ? POLLIN : e == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
    return ev != 0 ? bo_hs_wait_fd(c->fd, ev, until_ns) : -1;
}

/* Read n more bytes of the answer into held (they were looked at: the SSL
 * object has them, or they come within until_ns).  0, or -1. */
static int hold(bo_hconn *c, const ssl_real *R, size_t n, int64_t until_ns)
{
    if (bo_hc_held_room(c, n) != 0)
        return -1;
    while (n > 0) {
        size_t got = 0;
        int r = R->read_ex(c->ssl, c->held + c->held_len, n, &got);
        if (r == 1) {
            c->held_len += got;
            n -= got;
            continue;
        }
        if (wait_wanted(c, R, r, until_ns) != 0)
            return -1;
    }
    return 0;
}

static int tls_more(bo_hconn *c, void *ctx, size_t have, int64_t until_ns)
{
    const ssl_real *R = ctx;
    size_t h = bo_hc_held_left(c);

    /* the record looked at past held goes into held: the next one can be peeked */
    if (have > h && hold(c, R, have - h, until_ns) != 0)
        return -1;
    for (;;) {
        if (R->has_pending(c->ssl))
            return 1;
        int64_t now = bo_core_now_ns();
        if (now >= until_ns)
            return 0;
        struct pollfd p = {.fd = c->fd, .events = POLLIN | POLLRDHUP};
        int64_t left = until_ns - now;
        int r = poll(&p, 1, left > 1000000000LL ? 1000 : (int)(left / 1000000 + 1));
        if (r > 0 && (p.revents & POLLIN))
            return 1;
        if (r > 0)
            return -1; /* closed or failed, nothing more to read */
    }
}

static bool tls_drop(bo_hconn *c, void *ctx, size_t n)
{
    const ssl_real *R = ctx;
    size_t h = bo_hc_held_left(c);
    char sink[4096];

    if (h > n) {
        c->held_off += n;
        return false; /* more bytes than the answer: not a connection to reuse */
    }
    n -= h;
    c->held_len = c->held_off = 0;
    while (n > 0) {
        size_t got = 0;
        int r = R->read_ex(c->ssl, sink, n < sizeof sink ? n : sizeof sink, &got);
        if (r != 1)
            return false;
        n -= got;
    }
    struct pollfd p = {.fd = c->fd, .events = POLLIN | POLLRDHUP};
    return !R->has_pending(c->ssl) && poll(&p, 1, 0) == 0;
}

static int tls_send(bo_hconn *c, void *ctx, const char *buf, size_t n, int64_t until_ns)
{
    const ssl_real *R = ctx;
    while (n > 0) {
        size_t w = 0;
        int r = R->write_ex(c->ssl, buf, n, &w);
        if (r == 1) {
            buf += w;
            n -= w;
            continue;
        }
        if (wait_wanted(c, R, r, until_ns) != 0)
            return -1;
    }
    return 0;
}

/*
 * A new TCP connection onto the fd, and the program's SSL object cleared
 * and handshaken on it.  The answer that came on the old one is held whole
 * first (answer: its length; BO_HX_NOT_WHOLE: it cannot be, and nothing is
 * tried), so that a failed handshake hands it back.
 */
static int tls_redial(bo_hconn *c, void *ctx, int64_t until_ns, size_t answer)
{
    const ssl_real *R = ctx;

    if (answer == BO_HX_NOT_WHOLE)
        return -1;
    if (answer > bo_hc_held_left(c) && hold(c, R, answer - bo_hc_held_left(c), until_ns) != 0)
        return -1;
    if (bo_hs_redial(c, until_ns) != 0)
        return -1; /* the old connection and the answer are as they were */
    if (R->clear(c->ssl) != 1)
        goto failed;
    for (;;) {
        int r = R->connect(c->ssl);
        if (r == 1)
            break;
        if (wait_wanted(c, R, r, until_ns) != 0)
            goto failed;
    }
    c->held_len = c->held_off = 0; /* the retried answer is gone for good */
    return 0;
failed:
    /* The old connection is gone: the program reads the held answer, then
     * meets this connection's failure on its next call. */
    return -1;
}

static const bo_hx_io k_tls = {
    .look = tls_look,
    .nonblocking = bo_hs_nonblocking,
    .more = tls_more,
    .drop = tls_drop,
    .send = tls_send,
    .redial = tls_redial,
    .rcvtimeo = bo_hs_rcvtimeo,
    .sndtimeo = bo_hs_sndtimeo,
    .redial_holds = true,
};

/* ---- the hooks' logic ---------------------------------------------------------------- */

/*
 * The record of the SSL object's socket when the program writes a request
 * line through it: the socket is one the room follows (bo_hs_adopt) and the
 * object talks HTTP/1.x (no ALPN "h2").  A record of another object on the
 * same fd starts anew.
 */
static bo_hconn *tls_adopt(const ssl_real *R, int slot, SSL *ssl, int fd, const void *ret)
{
    const unsigned char *alpn = NULL;
    unsigned alen = 0;
    bo_hconn *c = bo_hc_get(fd);

    if (c != NULL && c->st != BO_HC_NONE && (!c->tls || c->ssl != ssl))
        bo_hc_closed(fd); /* a record of an earlier connection on that number */
    if ((c = bo_hs_adopt(fd, ret)) == NULL || !bo_hc_lock(c))
        return NULL;
    if (c->st == BO_HC_NONE) {
        R->alpn(ssl, &alpn, &alen);
        c->tls = c->https = true;
        c->ssl = ssl;
        c->ssl_slot = slot;
        c->held_len = c->held_off = 0;
        c->st = alen == 2 && memcmp(alpn, "h2", 2) == 0 ? BO_HC_OFF : BO_HC_IDLE;
        __atomic_store_n(&g_tls_used, 1, __ATOMIC_RELAXED);
    }
    bo_hc_unlock(c);
    return c->tls && c->ssl == ssl ? c : NULL;
}

/* One write-like call: SSL_write or SSL_write_ex. */
typedef struct wcall {
    bool ex;
    SSL *ssl;
    const void *buf;
    size_t n;
    size_t *written;
} wcall;

static int real_w(const ssl_real *R, const wcall *w)
{
    if (w->ex)
        return R->write_ex(w->ssl, w->buf, w->n, w->written);
    return R->write(w->ssl, w->buf, (int)w->n);
}

/* The bytes a write's result says went out. */
static size_t w_sent(const wcall *w, int r)
{
    if (w->ex)
        return r == 1 && w->written != NULL ? *w->written : 0;
    return r > 0 ? (size_t)r : 0;
}

static int shim_write(const ssl_real *R, int slot, const wcall *w, const void *ret)
{
    int saved = errno, fd;
    bo_hconn *c;

    if (bo_core_busy || w->buf == NULL || (fd = R->get_fd(w->ssl)) < 0)
        return real_w(R, w);
    c = bo_hc_get(fd);
    if (c == NULL || c->st == BO_HC_NONE || !c->tls || c->ssl != w->ssl) {
        if (!bo_hx_request_start(w->buf, w->n) ||
            (c = tls_adopt(R, slot, w->ssl, fd, ret)) == NULL) {
            errno = saved;
            return real_w(R, w);
        }
    }
    if (c->st == BO_HC_OFF || !bo_hc_lock(c)) {
        errno = saved;
        return real_w(R, w);
    }
    bo_core_busy = 1;
    switch (c->st) {
    case BO_HC_IDLE:
        if (!bo_hx_request_start(w->buf, w->n)) {
            bo_hc_off(c);
            break;
        }
        if (bo_hx_begin(c, &k_tls, (void *)R, w->buf, w->n) == EINTR) {
            /* the admission's wait was interrupted: nothing was written; the
             * program sees the write refused as a system call's EINTR */
            bo_core_busy = 0;
            bo_hc_unlock(c);
            errno = EINTR;
            if (w->ex && w->written != NULL)
                *w->written = 0;
            return w->ex ? 0 : -1;
        }
        break;
    case BO_HC_REQ:
        break;
    default: /* SENT, PASS: another request before the answer was read whole */
        bo_hc_off(c);
        break;
    }
    errno = saved;
    int r = real_w(R, w);
    int e = errno;
    size_t n = w_sent(w, r);
    if (c->st == BO_HC_REQ) {
        if (n > 0) {
            bo_hx_sent(c, w->buf, n);
        } else {
            int se = R->get_error(w->ssl, r);
            if (se != SSL_ERROR_WANT_READ && se != SSL_ERROR_WANT_WRITE)
                bo_hc_off(c); /* the connection failed under the request */
        }
    }
    bo_core_busy = 0;
    bo_hc_unlock(c);
    errno = e;
    return r;
}

/* One read-like call: SSL_read, SSL_read_ex, SSL_peek or SSL_peek_ex. */
typedef struct rcall {
    bool ex, peek;
    SSL *ssl;
    void *buf;
    size_t n;
    size_t *got;
} rcall;

static int real_r(const ssl_real *R, const rcall *r)
{
    if (r->ex)
        return r->peek ? R->peek_ex(r->ssl, r->buf, r->n, r->got)
                       : R->read_ex(r->ssl, r->buf, r->n, r->got);
    return r->peek ? R->peek(r->ssl, r->buf, (int)r->n) : R->read(r->ssl, r->buf, (int)r->n);
}

/* The result of k bytes served from held, as the function returns it. */
static int served(const rcall *r, size_t k)
{
    if (!r->ex)
        return (int)k;
    if (r->got != NULL)
        *r->got = k;
    return 1;
}

/* The bytes a read's result says came. */
static size_t r_got(const rcall *r, int ret)
{
    if (r->ex)
        return ret == 1 && r->got != NULL ? *r->got : 0;
    return ret > 0 ? (size_t)ret : 0;
}

/*
 * A read on a connection whose request or answer is in flight: the first
 * read after the whole request judges the answer (bo_hx_judge); bytes held
 * are served first; the reads of an answer that stands are followed to its
 * end.
 */
static int shim_read(const ssl_real *R, const rcall *r)
{
    int saved = errno, fd, err = 0, ret;
    bo_hconn *c;

    if (!__atomic_load_n(&g_tls_used, __ATOMIC_RELAXED) || bo_core_busy ||
        (fd = R->get_fd(r->ssl)) < 0 || (c = bo_hc_get(fd)) == NULL || !c->tls ||
        c->ssl != r->ssl || (c->st < BO_HC_REQ && bo_hc_held_left(c) == 0) || !bo_hc_lock(c))
        return real_r(R, r);
    bo_core_busy = 1;
    if (c->st == BO_HC_REQ)
        bo_hc_off(c);
    if (c->st == BO_HC_SENT && r->n > 0) {
        /* (SSL_peek_ex waits as the program's SSL_read would: not on a
         * non-blocking socket) */
        if (bo_hx_judge(c, &k_tls, (void *)R, false, &err) == BO_HX_ERR) {
            bo_core_busy = 0;
            bo_hc_unlock(c);
            errno = err;
            if (r->ex && r->got != NULL)
                *r->got = 0;
            return r->ex ? 0 : -1; /* SSL_get_error reads the object's own state */
        }
    }
    size_t h = bo_hc_held_left(c), n;
    if (h > 0 && r->n > 0) {
        n = h < r->n ? h : r->n;
        if (!r->ex && n > INT_MAX)
            n = INT_MAX;
        memcpy(r->buf, c->held + c->held_off, n);
        if (!r->peek && (c->held_off += n) == c->held_len)
            c->held_len = c->held_off = 0;
        ret = served(r, n);
        errno = saved;
    } else {
        errno = saved;
        ret = real_r(R, r);
        n = r_got(r, ret);
    }
    int e = errno;
    if (c->st == BO_HC_PASS && !r->peek) {
        if (n > 0)
            bo_hx_consumed(c, r->buf, n);
        else if (R->get_error(r->ssl, ret) == SSL_ERROR_ZERO_RETURN)
            bo_hx_consumed(c, NULL, 0); /* the peer closed: a close-delimited answer ends */
    }
    bo_core_busy = 0;
    bo_hc_unlock(c);
    errno = e;
    return ret;
}

/* SSL_pending and SSL_has_pending count the bytes held. */
static size_t held_of(const ssl_real *R, const SSL *ssl)
{
    int fd;
    bo_hconn *c;
    if (!__atomic_load_n(&g_tls_used, __ATOMIC_RELAXED) || (fd = R->get_fd(ssl)) < 0 ||
        (c = bo_hc_get(fd)) == NULL || !c->tls || c->ssl != ssl)
        return 0;
    return __atomic_load_n(&c->held_len, __ATOMIC_RELAXED) -
           __atomic_load_n(&c->held_off, __ATOMIC_RELAXED);
}

static int shim_pending(const ssl_real *R, const SSL *ssl)
{
    int saved = errno;
    size_t h = held_of(R, ssl);
    errno = saved;
    if (h == 0)
        return R->pending(ssl);
    long p = (long)R->pending(ssl) + (long)h;
    return p > INT_MAX ? INT_MAX : (int)p;
}

static int shim_has_pending(const ssl_real *R, const SSL *ssl)
{
    int saved = errno;
    size_t h = held_of(R, ssl);
    errno = saved;
    return h > 0 ? 1 : R->has_pending(ssl);
}

/* ---- the exported hooks, and each copy's wrappers ----------------------------------------- */

/* The calls, as every hook makes them with its copy and slot. */
static int do_read(const ssl_real *R, SSL *s, void *buf, int num, bool peek)
{
    rcall r = {.ex = false, .peek = peek, .ssl = s, .buf = buf, .n = num > 0 ? (size_t)num : 0};
    if (num <= 0)
        return peek ? R->peek(s, buf, num) : R->read(s, buf, num);
    return shim_read(R, &r);
}

static int do_read_ex(const ssl_real *R, SSL *s, void *buf, size_t num, size_t *got, bool peek)
{
    rcall r = {.ex = true, .peek = peek, .ssl = s, .buf = buf, .n = num, .got = got};
    return shim_read(R, &r);
}

static int do_write(const ssl_real *R, int slot, SSL *s, const void *buf, int num,
                    const void *ret)
{
    wcall w = {.ex = false, .ssl = s, .buf = buf, .n = num > 0 ? (size_t)num : 0};
    return num <= 0 ? R->write(s, buf, num) : shim_write(R, slot, &w, ret);
}

static int do_write_ex(const ssl_real *R, int slot, SSL *s, const void *buf, size_t num,
                       size_t *written, const void *ret)
{
    wcall w = {.ex = true, .ssl = s, .buf = buf, .n = num, .written = written};
    return shim_write(R, slot, &w, ret);
}

int SSL_read(SSL *s, void *buf, int num);
int SSL_read_ex(SSL *s, void *buf, size_t num, size_t *readbytes);
int SSL_write(SSL *s, const void *buf, int num);
int SSL_write_ex(SSL *s, const void *buf, size_t num, size_t *written);
int SSL_peek(SSL *s, void *buf, int num);
int SSL_peek_ex(SSL *s, void *buf, size_t num, size_t *readbytes);
int SSL_pending(const SSL *s);
int SSL_has_pending(const SSL *s);

/* The exported hooks: the copy the caller (their return address) was bound to. */
#define RET __builtin_return_address(0)

BO_EXPORT int SSL_read(SSL *s, void *buf, int num)
{
    return do_read(caller_real(RET), s, buf, num, false);
}

BO_EXPORT int SSL_read_ex(SSL *s, void *buf, size_t num, size_t *readbytes)
{
    return do_read_ex(caller_real(RET), s, buf, num, readbytes, false);
}

BO_EXPORT int SSL_write(SSL *s, const void *buf, int num)
{
    const ssl_real *R = caller_real(RET);
    return do_write(R, (int)(R - g_reals), s, buf, num, RET);
}

BO_EXPORT int SSL_write_ex(SSL *s, const void *buf, size_t num, size_t *written)
{
    const ssl_real *R = caller_real(RET);
    return do_write_ex(R, (int)(R - g_reals), s, buf, num, written, RET);
}

BO_EXPORT int SSL_peek(SSL *s, void *buf, int num)
{
    return do_read(caller_real(RET), s, buf, num, true);
}

BO_EXPORT int SSL_peek_ex(SSL *s, void *buf, size_t num, size_t *readbytes)
{
    return do_read_ex(caller_real(RET), s, buf, num, readbytes, true);
}

BO_EXPORT int SSL_pending(const SSL *s)
{
    return shim_pending(caller_real(RET), s);
}

BO_EXPORT int SSL_has_pending(const SSL *s)
{
    return shim_has_pending(caller_real(RET), s);
}

/* The wrappers handed out for one copy (dlsym through a handle, a deep-bound
 * GOT): bound to that slot's real functions, never another copy's. */
#define SLOT_WRAPPERS(i)                                                              \
    static int read_##i(SSL *s, void *buf, int num)                                   \
    {                                                                                 \
        return do_read(&g_reals[i], s, buf, num, false);                              \
    }                                                                                 \
    static int read_ex_##i(SSL *s, void *buf, size_t num, size_t *got)                \
    {                                                                                 \
        return do_read_ex(&g_reals[i], s, buf, num, got, false);                      \
    }                                                                                 \
    static int write_##i(SSL *s, const void *buf, int num)                            \
    {                                                                                 \
        return do_write(&g_reals[i], i, s, buf, num, RET);                            \
    }                                                                                 \
    static int write_ex_##i(SSL *s, const void *buf, size_t num, size_t *written)     \
    {                                                                                 \
        return do_write_ex(&g_reals[i], i, s, buf, num, written, RET);                \
    }                                                                                 \
    static int peek_##i(SSL *s, void *buf, int num)                                   \
    {                                                                                 \
        return do_read(&g_reals[i], s, buf, num, true);                               \
    }                                                                                 \
    static int peek_ex_##i(SSL *s, void *buf, size_t num, size_t *got)                \
    {                                                                                 \
        return do_read_ex(&g_reals[i], s, buf, num, got, true);                       \
    }                                                                                 \
    static int pending_##i(const SSL *s)                                              \
    {                                                                                 \
        return shim_pending(&g_reals[i], s);                                          \
    }                                                                                 \
    static int has_pending_##i(const SSL *s)                                          \
    {                                                                                 \
        return shim_has_pending(&g_reals[i], s);                                      \
    }

BO_LIB_EACH_SLOT(SLOT_WRAPPERS)


#define SLOT_ROW(i)                                                                   \
    {(void *)read_##i, (void *)read_ex_##i, (void *)write_##i, (void *)write_ex_##i, \
     (void *)peek_##i, (void *)peek_ex_##i, (void *)pending_##i, (void *)has_pending_##i}

static void *const g_wrappers[BO_LIB_MAX_COPIES][SSLF_NHOOKED] = {
    BO_LIB_SLOT_LIST(SLOT_ROW),
};

static void *ssl_wrapper(int slot, int fn)
{
    return g_wrappers[slot][fn];
}
