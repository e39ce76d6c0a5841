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

/* One write-like call: SSL_write or SSL_write_ex. */
typedef struct wcall {
    bool ex;
    SSL *ssl;
    const void *buf;
    size_t n;
    size_t *written;
} wcall;

/* The real call with buf (len bytes) in place of the program's: the bytes
 * written, or -1 (*r the function's own result); pass_w: the program's
 * own call, its result. */
static ssize_t real_w(const ssl_real *R, const wcall *w, const void *buf, size_t len, int *r)
{
    size_t got = 0;
    if (w->ex) {
        *r = R->write_ex(w->ssl, buf, len, &got);
        return *r == 1 ? (ssize_t)got : -1;
    }
    *r = R->write(w->ssl, buf, (int)len);
    return *r > 0 ? *r : -1;
}

static int pass_w(const ssl_real *R, const wcall *w)
{
    return w->ex ? R->write_ex(w->ssl, w->buf, w->n, w->written)
                 : R->write(w->ssl, w->buf, (int)w->n);
}

/* The record of the SSL object's socket (bo_hx_wr.claim): adopted when the
 * object talks HTTP/1.x (no ALPN "h2"), with the certificate the program
 * accepted. */
static bool tls_claim(bo_hconn *c, bo_hx_wr *x)
{
    const ssl_real *R = x->ctx;
    SSL *ssl = (SSL *)x->obj;
    const unsigned char *alpn = NULL;
    unsigned alen = 0;

    if (bo_hs_unclaimed(c, x)) {
        R->alpn(ssl, &alpn, &alen);
        c->ssl = ssl;
        c->ssl_slot = (int)(R - g_reals);
        bo_hx_adopt(c, &bo_ssl_io, R, true, alen == 2 && memcmp(alpn, "h2", 2) == 0);
        c->peer_id_known = bo_ssl_peer_id(R, ssl, c->peer_id) == 0;
        __atomic_store_n(&g_tls_used, 1, __ATOMIC_RELAXED);
    }
    return c->tls && c->ssl == ssl;
}

/* The exchange failed the call itself with err (nothing of the program's
 * went): what SSL_get_error says of it, as the function returns it. */
static int write_failed(bo_hconn *c, const wcall *w, int err)
{
    __atomic_store_n(&c->tls_err, err == EAGAIN ? SSL_ERROR_WANT_WRITE : SSL_ERROR_SYSCALL,
                     __ATOMIC_RELAXED);
    errno = err;
    if (w->ex && w->written != NULL)
        *w->written = 0;
    return w->ex ? 0 : -1;
}

/*
 * A write through the exchange's write path (bo_hx_write_before/after),
 * the record found, or made for a request line on an object bound to a
 * socket: a record of another object, or of another connection, on the
 * same fd starts anew.
 */
static int shim_write(const ssl_real *R, const wcall *w, const void *ret)
{
    int fd, r = 0;
    bo_hconn *c;
    struct iovec one = {.iov_base = (void *)w->buf, .iov_len = w->n};
    bo_hx_wr x = {.iov = &one, .iovcnt = 1, .claim = tls_claim, .obj = w->ssl, .ctx = R,
                  .ret = ret};
    ssize_t n;

    if (bo_core_busy || w->buf == NULL || (fd = R->get_fd(w->ssl)) < 0)
        return pass_w(R, w);
    c = bo_hc_get(fd);
    if (c != NULL && c->tls && c->ssl == w->ssl)
        __atomic_store_n(&c->tls_err, 0, __ATOMIC_RELAXED); /* the object's own from here on */
    if ((c = bo_hs_record(fd, &x, w->buf, w->n)) == NULL)
        return pass_w(R, w);
    do {
        bo_hx_verdict v = bo_hx_write_before(c, &x);
        if (v != BO_HX_PASS)
            return v == BO_HX_OFF ? pass_w(R, w) : write_failed(c, w, x.err);
        ssize_t k = real_w(R, w, x.buf, x.len, &r);
        int se = k < 0 ? R->get_error(w->ssl, r) : SSL_ERROR_NONE;
        n = bo_hx_write_after(c, &x, k,
                              k < 0 && se != SSL_ERROR_WANT_READ && se != SSL_ERROR_WANT_WRITE);
    } while (x.again);
    if (n < 0)
        return x.err != 0 ? write_failed(c, w, x.err) : r;
    if (w->ex && w->written != NULL)
        *w->written = (size_t)n;
    return w->ex ? 1 : (int)n;
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
    __atomic_store_n(&c->tls_err,
                     err == EAGAIN || err == EWOULDBLOCK ? SSL_ERROR_WANT_READ : SSL_ERROR_SYSCALL,
                     __ATOMIC_RELAXED);
}

/* The exchange failed the read itself with err (failed_as says how), as
 * the function returns it. */
static int read_failed(bo_hconn *c, const rcall *r, int err)
{
    failed_as(c, err);
    errno = err;
    if (r->ex && r->got != NULL)
        *r->got = 0;
    return r->ex ? 0 : -1;
}

/* A read through the exchange's read path (bo_hx_read_before, _held,
 * _after) on the record of the object's socket. */
static int shim_read(const ssl_real *R, const rcall *r)
{
    int fd, ret;
    bo_hconn *c;

    if (!__atomic_load_n(&g_tls_used, __ATOMIC_RELAXED) || bo_core_busy ||
        (fd = R->get_fd(r->ssl)) < 0 || (c = bo_hc_get(fd)) == NULL || !c->tls ||
        c->ssl != r->ssl)
        return real_r(R, r);
    __atomic_store_n(&c->tls_err, 0, __ATOMIC_RELAXED); /* the object's own from here on */
    bo_hx_rd x = {.buf = r->buf, .n = r->n, .peek = r->peek};
    bo_hx_verdict v = bo_hx_read_before(c, &x);
    if (v != BO_HX_PASS)
        return v == BO_HX_OFF ? real_r(R, r) : read_failed(c, r, x.err);
    size_t n = bo_hx_read_held(c, &x);
    bool eof = false;
    if (n > 0) {
        ret = served(r, n);
    } else {
        ret = real_r(R, r);
        n = r_got(r, ret);
        eof = n == 0 && R->get_error(r->ssl, ret) == SSL_ERROR_ZERO_RETURN;
    }
    bo_hx_read_after(c, &x, n, eof);
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
    return bo_hc_held_pending(c);
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

static int do_write(const ssl_real *R, SSL *s, const void *buf, int num, const void *ret)
{
    wcall w = {.ex = false, .ssl = s, .buf = buf, .n = num > 0 ? (size_t)num : 0};
    return num <= 0 ? R->write(s, buf, num) : shim_write(R, &w, ret);
}

static int do_write_ex(const ssl_real *R, SSL *s, const void *buf, size_t num,
                       size_t *written, const void *ret)
{
    wcall w = {.ex = true, .ssl = s, .buf = buf, .n = num, .written = written};
    return shim_write(R, &w, ret);
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
    return do_write(caller_real(RET), s, buf, num, RET);
}

BO_EXPORT int SSL_write_ex(SSL *s, const void *buf, size_t num, size_t *written)
{
    return do_write_ex(caller_real(RET), s, buf, num, written, RET);
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
        return do_write(&g_reals[i], s, buf, num, RET);                            \
    }                                                                                 \
    static int write_ex_##i(SSL *s, const void *buf, size_t num, size_t *written)     \
    {                                                                                 \
        return do_write_ex(&g_reals[i], s, buf, num, written, RET);                \
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
