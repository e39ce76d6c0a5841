/*
 * ssl.c: the OpenSSL side of the http room: the libssl family declared to
 * the loader, each copy's real functions, the hooks (SSL_write, SSL_read,
 * SSL_peek and their _ex forms, SSL_pending, SSL_has_pending) and a TLS
 * connection's moves (exchange.h's bo_hx_io) on an SSL object bound to a
 * socket (SSL_get_fd >= 0: Python's _ssl, Ruby's openssl, Perl's
 * Net::SSLeay, PHP's streams, nginx).  Objects on memory BIOs (asyncio,
 * Node) and libcurl's own pass through.
 *
 * The answer is read ahead into the record's `held` bytes (SSL_peek_ex
 * gives one TLS record at a time, and a head is often spread over
 * several), which the program's SSL_read, SSL_peek and SSL_pending are
 * then served from first.  A retry goes on the same connection when the
 * answer keeps it alive, else on a new TCP connection moved onto the fd,
 * on which the program's own SSL object is cleared (SSL_clear keeps its
 * context, SNI, ALPN and verification settings), its session dropped (a
 * full handshake: the server shows its certificate again) and handshaken
 * again.  The new peer must show the very certificate the program
 * accepted on its first connection (its SHA-256, taken when the first
 * request was written: many clients check the host name themselves after
 * their own handshake, so a handshake that succeeds proves nothing);
 * anything else ends the retry, the new connection is shut down, and the
 * program gets the answer it met, as it came.
 *
 * Each exported hook finds the copy its caller was bound to (the caller's
 * own dependency: Python's _ssl and Perl's SSLeay.so load libssl
 * RTLD_LOCAL, where dlsym(RTLD_NEXT) finds nothing); a dlsym of a hooked
 * name, or a deep-bound object's GOT, gets the wrapper of that copy.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "core/core.h"
#include "http/conn.h"
#include "http/fdtab.h"
#include "loader/callers.h"
#include "http/exchange.h"
#include "http/sock.h"
#include "http/sockwait.h"
#include "http/ssl_conn.h"
#include "loader/elf.h"
#include "loader/loader.h"

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
    SSLF_GET_ERROR,
    SSLF_NHOOKED,
    SSLF_GET_FD = SSLF_NHOOKED,
    SSLF_CONNECT,
    SSLF_CLEAR,
    SSLF_ALPN,
    SSLF_SET_SESSION,
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
    [SSLF_SET_SESSION] = "SSL_set_session",
};

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
    *(void **)&r->set_session = fn[SSLF_SET_SESSION];
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
static bo_lib_callers g_callers;

static void ssl_ask_global(void)
{
    g_callers.family = &g_ssl_family;
    g_callers.global_slot = bo_lib_slot_global(&g_ssl_family);
}

static inline const ssl_real *caller_real(const void *ret)
{
    const ssl_real *R = &g_reals[bo_lib_caller_slot(&g_callers, ssl_ask_global, ret)];
    if (__builtin_expect(!__atomic_load_n(&R->bound, __ATOMIC_ACQUIRE), 0))
        bo_core_die("backoff: the program's libssl is not bound; cannot continue");
    return R;
}

/* Set once a connection over TLS was adopted: until then a read is the real one at once. */
static int g_tls_used;

/* ---- the hooks' logic ---------------------------------------------------------------- */

/*
 * The record of the SSL object's socket when the program writes a request
 * line through it: the socket is one the room follows (bo_hs_adopt) and the
 * object talks HTTP/1.x (no ALPN "h2").  A record of another object, or of
 * another socket, on the same fd starts anew.  The certificate the program
 * accepted is taken now.
 */
static bo_hconn *tls_adopt(const ssl_real *R, int slot, SSL *ssl, int fd, const void *ret)
{
    const unsigned char *alpn = NULL;
    unsigned alen = 0;
    bo_hconn *c = bo_hc_get(fd);

    if (c != NULL && c->st != BO_HC_NONE && (!c->tls || c->ssl != ssl))
        bo_hx_closed(fd); /* a record of an earlier connection on that number */
    if ((c = bo_hs_adopt(fd, ret)) == NULL || !bo_hx_enter(c))
        return NULL;
    if (c->st != BO_HC_NONE && !bo_hx_same_socket(c))
        (void)bo_hs_adopt(fd, ret); /* another socket on that number: its peer taken */
    if (c->st == BO_HC_NONE) {
        R->alpn(ssl, &alpn, &alen);
        c->ssl = ssl;
        c->ssl_slot = slot;
        bo_hx_adopt(c, &bo_ssl_io, R, true, alen == 2 && memcmp(alpn, "h2", 2) == 0);
        c->peer_id_known = bo_ssl_peer_id(R, ssl, c->peer_id) == 0;
        __atomic_store_n(&g_tls_used, 1, __ATOMIC_RELAXED);
    }
    bool mine = c->tls && c->ssl == ssl;
    bo_hx_leave(c);
    return mine ? c : NULL;
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

/*
 * The program's write of a request, with the shim's Idempotency-Key line
 * in it while the exchange says so (bo_hx_inject): the same call with those
 * bytes in place of the program's (the very same buffer again when the
 * program repeats a write that wanted more: OpenSSL asks for that); the
 * result counts the program's bytes.  A partial write that took only line
 * bytes is a write that wants more.
 */
static int write_keyed(const ssl_real *R, bo_hconn *c, const wcall *w)
{
    size_t ilen = 0;
    const char *ib = bo_hx_inject(c, w->n, &ilen);
    if (ib == NULL)
        return real_w(R, w);
    wcall k = *w;
    size_t got = 0;
    k.buf = ib;
    k.n = ilen;
    if (w->ex)
        k.written = &got;
    int r = real_w(R, &k);
    size_t wrote = w->ex ? (r == 1 ? got : 0) : (r > 0 ? (size_t)r : 0);
    if (wrote == 0)
        return r;
    size_t share = bo_hx_injected(c, wrote);
    if (share == 0) {
        c->tls_err = SSL_ERROR_WANT_WRITE;
        errno = EAGAIN;
        return w->ex ? 0 : -1;
    }
    if (w->ex) {
        if (w->written != NULL)
            *w->written = share;
        return 1;
    }
    return (int)share;
}

static int shim_write(const ssl_real *R, int slot, const wcall *w, const void *ret)
{
    int saved = errno, fd;
    bo_hconn *c;

    if (bo_core_busy || w->buf == NULL || (fd = R->get_fd(w->ssl)) < 0)
        return real_w(R, w);
    c = bo_hc_get(fd);
    if (c != NULL && c->tls && c->ssl == w->ssl)
        __atomic_store_n(&c->tls_err, 0, __ATOMIC_RELAXED); /* the object's own from here on */
    if (c == NULL || c->st == BO_HC_NONE || !c->tls || c->ssl != w->ssl) {
        if (!bo_hx_request_start(w->buf, w->n) ||
            (c = tls_adopt(R, slot, w->ssl, fd, ret)) == NULL) {
            errno = saved;
            return real_w(R, w);
        }
    }
    if (c->st == BO_HC_OFF || !bo_hx_enter(c)) {
        errno = saved;
        return real_w(R, w);
    }
    bo_core_busy = 1;
    switch (c->st) {
    case BO_HC_IDLE:
        if (!bo_hx_request_start(w->buf, w->n)) {
            bo_hx_off(c);
            break;
        }
        if (bo_hx_begin(c, w->buf, w->n, false) == EINTR) {
            /* the admission's wait was interrupted: nothing was written; the
             * program sees the write refused as a system call's EINTR */
            c->tls_err = SSL_ERROR_SYSCALL;
            bo_core_busy = 0;
            bo_hx_leave(c);
            errno = EINTR;
            if (w->ex && w->written != NULL)
                *w->written = 0;
            return w->ex ? 0 : -1;
        }
        break;
    case BO_HC_REQ:
        break;
    default: /* SENT, PASS, RETRY: another request before the answer was read whole */
        bo_hx_off(c);
        break;
    }
    errno = saved;
    int r = c->st == BO_HC_REQ ? write_keyed(R, c, w) : real_w(R, w);
    int e = errno;
    size_t n = w_sent(w, r);
    if (c->st == BO_HC_REQ) {
        if (n > 0) {
            bo_hx_sent(c, w->buf, n);
        } else {
            int se = R->get_error(w->ssl, r);
            if (se != SSL_ERROR_WANT_READ && se != SSL_ERROR_WANT_WRITE)
                bo_hx_off(c); /* the connection failed under the request */
        }
    }
    bo_core_busy = 0;
    bo_hx_leave(c);
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

/* What SSL_get_error is to say of a call the hooks failed themselves
 * (the object's own state knows nothing of it): EAGAIN is WANT_READ, any
 * other error a system call's (errno tells it). */
static void failed_as(bo_hconn *c, int err)
{
    c->tls_err = err == EAGAIN || err == EWOULDBLOCK ? SSL_ERROR_WANT_READ : SSL_ERROR_SYSCALL;
}

/* The read failed (failed_as said how), as the function returns it. */
static int failed(const rcall *r)
{
    if (r->ex && r->got != NULL)
        *r->got = 0;
    return r->ex ? 0 : -1;
}

/*
 * A read on a connection whose request or answer is in flight: the answer
 * is judged when it comes and a throttle retried where the program waits
 * (bo_hx_read); bytes held are served first; the reads of an answer that
 * stands are followed to its end.
 */
static int shim_read(const ssl_real *R, const rcall *r)
{
    int saved = errno, fd, err = 0, ret;
    bo_hconn *c;

    if (!__atomic_load_n(&g_tls_used, __ATOMIC_RELAXED) || bo_core_busy ||
        (fd = R->get_fd(r->ssl)) < 0 || (c = bo_hc_get(fd)) == NULL || !c->tls ||
        c->ssl != r->ssl)
        return real_r(R, r);
    __atomic_store_n(&c->tls_err, 0, __ATOMIC_RELAXED); /* the object's own from here on */
    if (c->st < BO_HC_REQ && bo_hc_held_left(c) == 0)
        return real_r(R, r);
    if (!bo_hc_trylock(c)) {
        if (c->st == BO_HC_RETRY && bo_hs_nonblocking(fd)) {
            c->tls_err = SSL_ERROR_WANT_READ; /* a wait hook takes the retry a step */
            errno = EAGAIN;
            return failed(r);
        }
        bo_hc_mark_shared(c);
        return real_r(R, r);
    }
    bo_core_busy = 1;
    if (c->st >= BO_HC_REQ && c->st != BO_HC_PASS && r->n > 0 &&
        bo_hx_read(c, BO_HX_ASK, &err) == BO_HX_ERR) {
        failed_as(c, err);
        bo_core_busy = 0;
        bo_hx_leave(c);
        errno = err;
        return failed(r);
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
    bo_hx_leave(c);
    errno = e;
    return ret;
}

/* SSL_pending and SSL_has_pending count the bytes held. */
static size_t held_of(const ssl_real *R, const SSL *ssl)
{
    int fd;
    bo_hconn *c;
    if (!__atomic_load_n(&g_tls_used, __ATOMIC_RELAXED) || (fd = R->get_fd(ssl)) < 0 ||
        (c = bo_hc_get(fd)) == NULL || !c->tls || c->ssl != ssl || c->st == BO_HC_RETRY)
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

/* SSL_get_error of a call the hooks failed themselves says what they made
 * of it (failed_as); of any other call, what the object says. */
static int shim_get_error(const ssl_real *R, const SSL *ssl, int ret)
{
    int saved = errno, fd, e = 0;
    bo_hconn *c;

    if (ret <= 0 && __atomic_load_n(&g_tls_used, __ATOMIC_RELAXED) &&
        (fd = R->get_fd(ssl)) >= 0 && (c = bo_hc_get(fd)) != NULL && c->tls && c->ssl == ssl)
        e = __atomic_exchange_n(&c->tls_err, 0, __ATOMIC_RELAXED); /* said once */
    errno = saved;
    return e != 0 ? e : R->get_error(ssl, ret);
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
int SSL_get_error(const SSL *s, int ret);

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

BO_EXPORT int SSL_get_error(const SSL *s, int ret)
{
    return shim_get_error(caller_real(RET), s, ret);
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
    }                                                                                 \
    static int get_error_##i(const SSL *s, int ret)                                   \
    {                                                                                 \
        return shim_get_error(&g_reals[i], s, ret);                                   \
    }

BO_LIB_EACH_SLOT(SLOT_WRAPPERS)


#define SLOT_ROW(i)                                                                   \
    {(void *)read_##i, (void *)read_ex_##i, (void *)write_##i, (void *)write_ex_##i, \
     (void *)peek_##i, (void *)peek_ex_##i, (void *)pending_##i, (void *)has_pending_##i, \
     (void *)get_error_##i}

static void *const g_wrappers[BO_LIB_MAX_COPIES][SSLF_NHOOKED] = {
    BO_LIB_SLOT_LIST(SLOT_ROW),
};

static void *ssl_wrapper(int slot, int fn)
{
    return g_wrappers[slot][fn];
}
