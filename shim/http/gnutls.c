/*
 * gnutls.c: the GnuTLS side of the http room (wget over https): the
 * libgnutls family declared to the loader, the hooks (gnutls_record_send,
 * gnutls_record_recv, gnutls_record_check_pending) and a GnuTLS session's
 * moves (exchange.h's bo_hx_io) on a session whose transport is a socket
 * (gnutls_transport_get_int: a connected TCP socket the room follows).
 * libcurl's own sessions (its GnuTLS flavour) pass through.
 *
 * GnuTLS has no peek: the answer is read into the record's held bytes,
 * which the program's gnutls_record_recv is then served from first and
 * gnutls_record_check_pending counts (wget asks it before every read).  A
 * throttle is retried on the same connection only, when the answer keeps
 * it alive and came whole: a new connection would need the program's
 * session handshaken again, which GnuTLS cannot do on a session once used.
 * Otherwise the answer is handed back as it came.
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "core/core.h"
#include "loader/callers.h"
#include "http/conn.h"
#include "http/fdtab.h"
#include "http/exchange.h"
#include "http/sock.h"
#include "http/sockwait.h"
#include "loader/loader.h"

/* GnuTLS's ABI constants this file needs (no header needed). */
#define GNUTLS_E_AGAIN (-28)
#define GNUTLS_E_INTERRUPTED (-52)
#define GNUTLS_E_PULL_ERROR (-54)

typedef struct gnutls_session_int *gnutls_session_t;

enum { GT_SEND, GT_RECV, GT_CHECK_PENDING, GT_NHOOKED, GT_TRANSPORT = GT_NHOOKED, GT_NFNS };

static const char *const k_fn_names[GT_NFNS] = {
    [GT_SEND] = "gnutls_record_send",
    [GT_RECV] = "gnutls_record_recv",
    [GT_CHECK_PENDING] = "gnutls_record_check_pending",
    [GT_TRANSPORT] = "gnutls_transport_get_int",
};

/* One libgnutls copy's real functions. */
typedef struct gnutls_real {
    ssize_t (*send)(gnutls_session_t, const void *, size_t);
    ssize_t (*recv)(gnutls_session_t, void *, size_t);
    size_t (*check_pending)(gnutls_session_t);
    int (*transport)(gnutls_session_t);
    int bound;
} gnutls_real;

static gnutls_real g_reals[BO_LIB_MAX_COPIES];

static void gnutls_bind(int slot, void *const *fn)
{
    gnutls_real *r = &g_reals[slot];
    *(void **)&r->send = fn[GT_SEND];
    *(void **)&r->recv = fn[GT_RECV];
    *(void **)&r->check_pending = fn[GT_CHECK_PENDING];
    *(void **)&r->transport = fn[GT_TRANSPORT];
    __atomic_store_n(&r->bound, 1, __ATOMIC_RELEASE);
}

static void *gnutls_wrapper(int slot, int fn);

static bo_lib_copies g_copies;

static const bo_lib_family g_gnutls_family = {
    .name = "libgnutls",
    .soname = "libgnutls",
    .prefix = "gnutls_",
    .fns = k_fn_names,
    .nfns = GT_NFNS,
    .nhooked = GT_NHOOKED,
    .bind = gnutls_bind,
    .wrapper = gnutls_wrapper,
    .copies = &g_copies,
};
BO_LIB_FAMILY(g_gnutls_family);

static void gnutls_ask_global(void);
static bo_lib_callers g_callers;

static void gnutls_ask_global(void)
{
    g_callers.family = &g_gnutls_family;
    g_callers.global_slot = bo_lib_slot_global(&g_gnutls_family);
}

static inline const gnutls_real *caller_real(const void *ret)
{
    const gnutls_real *R = &g_reals[bo_lib_caller_slot(&g_callers, gnutls_ask_global, ret)];
    if (__builtin_expect(!__atomic_load_n(&R->bound, __ATOMIC_ACQUIRE), 0))
        bo_core_die("backoff: the program's libgnutls is not bound; cannot continue");
    return R;
}

/* Set once a session was adopted: until then a read is the real one at once. */
static int g_used;

/* The session's socket, when its transport is one (a plain int that is an
 * open fd: a transport pointer to the program's own structure is not). */
static int session_fd(const gnutls_real *R, gnutls_session_t s)
{
    int fd = R->transport(s);
    return fd >= 0 && fd < (1 << 20) ? fd : -1;
}

/* ---- a GnuTLS session's moves ------------------------------------------------------ */

/* One record (or what GnuTLS has) read into held: >0, 0 (closed), -1 (errno). */
static ssize_t read_one(bo_hconn *c, const gnutls_real *R)
{
    if (bo_hc_held_left(c) >= BO_HC_PEEK_MAX || bo_hc_held_room(c, 16384 + 512) != 0) {
        errno = ENOBUFS;
        return -1;
    }
    ssize_t r = R->recv(c->ssl, bo_hc_held_end(c), 16384 + 512);
    if (r > 0) {
        bo_hc_held_grew(c, (size_t)r);
        return r;
    }
    if (r == 0)
        return 0;
    errno = r == GNUTLS_E_AGAIN ? EAGAIN : r == GNUTLS_E_INTERRUPTED ? EINTR : ECONNRESET;
    return -1;
}

static bool gt_ready(bo_hconn *c, const gnutls_real *R)
{
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    return R->check_pending(c->ssl) > 0 || bo_core_sys_poll(&p, 1, 0) > 0;
}

/* The answer so far, read into held as GnuTLS gives it, copied to peek. */
static ssize_t gt_look(bo_hconn *c, bool block)
{
    const gnutls_real *R = c->io_ctx;
    size_t h;

    for (;;) {
        h = bo_hc_held_left(c);
        /* never a read that would wait where the program's would not */
        if (h >= BO_HC_PEEK_MAX ||
            (!gt_ready(c, R) && (h > 0 || !block || bo_hs_nonblocking(c->fd))))
            break;
        ssize_t r = read_one(c, R); /* waits as the program's read would */
        if (r <= 0 && bo_hc_held_left(c) == 0)
            return r;
        if (r <= 0)
            break; /* what came is what there is */
    }
    return bo_hc_held_peek(c);
}

static bool gt_idle(bo_hconn *c)
{
    const gnutls_real *R = c->io_ctx;
    struct pollfd p = {.fd = c->fd, .events = POLLIN | POLLRDHUP};
    return R->check_pending(c->ssl) == 0 && bo_core_sys_poll(&p, 1, 0) == 0;
}

static ssize_t gt_put(bo_hconn *c, const char *buf, size_t n, short *ev)
{
    const gnutls_real *R = c->io_ctx;
    ssize_t w = R->send(c->ssl, buf, n);
    if (w >= 0)
        return w;
    *ev = POLLOUT;
    errno = w == GNUTLS_E_AGAIN ? EAGAIN : w == GNUTLS_E_INTERRUPTED ? EINTR : EPIPE;
    return -1;
}

static bool gt_pending(bo_hconn *c)
{
    const gnutls_real *R = c->io_ctx;
    return R->check_pending(c->ssl) > 0;
}

/* No new connection: GnuTLS does not handshake a used session again. */
static const bo_hx_io k_gnutls = {
    .look = gt_look,
    .hold = bo_hc_held_has, /* the answer was read whole into held by gt_look */
    .idle = gt_idle,
    .put = gt_put,
    .pending = gt_pending,
    .same_only = true,
};

/* ---- the hooks' logic ---------------------------------------------------------------- */

/* The exchange's error as GnuTLS says it. */
static ssize_t gt_error(int err)
{
    errno = err;
    return err == EAGAIN ? GNUTLS_E_AGAIN
           : err == EINTR ? GNUTLS_E_INTERRUPTED
                          : GNUTLS_E_PULL_ERROR;
}

/* The record of the session's socket (bo_hx_wr.claim). */
static bool gt_claim(bo_hconn *c, bo_hx_wr *x)
{
    if (bo_hs_unclaimed(c, x)) {
        c->ssl = (void *)x->obj;
        bo_hx_adopt(c, &k_gnutls, x->ctx, true, false);
        __atomic_store_n(&g_used, 1, __ATOMIC_RELAXED);
    }
    return c->tls && c->ssl == x->obj;
}

/*
 * A send through the exchange's write path (bo_hx_write_before/after), the
 * record found, or made for a request line on a session over a socket: a
 * record of another session, or of another connection, on the same fd
 * starts anew.  The same bytes go again after GNUTLS_E_AGAIN, as GnuTLS
 * asks (bo_hx_inject).
 */
static ssize_t shim_send(const gnutls_real *R, gnutls_session_t s, const void *buf, size_t n,
                         const void *ret)
{
    int fd;
    bo_hconn *c;
    struct iovec one = {.iov_base = (void *)buf, .iov_len = n};
    bo_hx_wr x = {.iov = &one, .iovcnt = 1, .claim = gt_claim, .obj = s, .ctx = R, .ret = ret};
    ssize_t r, k;

    if (bo_core_busy || buf == NULL || (fd = session_fd(R, s)) < 0 ||
        (c = bo_hs_record(fd, &x, buf, n)) == NULL)
        return R->send(s, buf, n);
    do {
        bo_hx_verdict v = bo_hx_write_before(c, &x);
        if (v != BO_HX_PASS)
            return v == BO_HX_OFF ? R->send(s, buf, n) : gt_error(x.err);
        r = R->send(s, x.buf, x.len);
        k = bo_hx_write_after(c, &x, r >= 0 ? r : -1,
                              r < 0 && r != GNUTLS_E_AGAIN && r != GNUTLS_E_INTERRUPTED);
    } while (x.again);
    return k >= 0 ? k : x.err != 0 ? gt_error(x.err) : r;
}

/* A receive through the exchange's read path (bo_hx_read_before, _held,
 * _after) on the record of the session's socket. */
static ssize_t shim_recv(const gnutls_real *R, gnutls_session_t s, void *buf, size_t n)
{
    int fd;
    bo_hconn *c;

    if (!__atomic_load_n(&g_used, __ATOMIC_RELAXED) || bo_core_busy ||
        (fd = session_fd(R, s)) < 0 || (c = bo_hc_get(fd)) == NULL || !c->tls ||
        c->ssl != (void *)s)
        return R->recv(s, buf, n);
    bo_hx_rd x = {.buf = buf, .n = n};
    bo_hx_verdict v = bo_hx_read_before(c, &x);
    if (v != BO_HX_PASS)
        return v == BO_HX_OFF ? R->recv(s, buf, n) : gt_error(x.err);
    ssize_t r = (ssize_t)bo_hx_read_held(c, &x);
    if (r == 0)
        r = R->recv(s, buf, n);
    bo_hx_read_after(c, &x, r > 0 ? (size_t)r : 0, r == 0 && n > 0);
    return r;
}

static size_t shim_check_pending(const gnutls_real *R, gnutls_session_t s)
{
    int saved = errno, fd;
    bo_hconn *c;
    size_t h = 0;

    if (__atomic_load_n(&g_used, __ATOMIC_RELAXED) && (fd = session_fd(R, s)) >= 0 &&
        (c = bo_hc_get(fd)) != NULL && c->tls && c->ssl == (void *)s)
        h = bo_hc_held_pending(c);
    errno = saved;
    return R->check_pending(s) + h;
}

/* ---- the exported hooks, and each copy's wrappers ----------------------------------------- */

ssize_t gnutls_record_send(gnutls_session_t s, const void *data, size_t n);
ssize_t gnutls_record_recv(gnutls_session_t s, void *data, size_t n);
size_t gnutls_record_check_pending(gnutls_session_t s);

#define RET __builtin_return_address(0)

BO_EXPORT ssize_t gnutls_record_send(gnutls_session_t s, const void *data, size_t n)
{
    return shim_send(caller_real(RET), s, data, n, RET);
}

BO_EXPORT ssize_t gnutls_record_recv(gnutls_session_t s, void *data, size_t n)
{
    return shim_recv(caller_real(RET), s, data, n);
}

BO_EXPORT size_t gnutls_record_check_pending(gnutls_session_t s)
{
    return shim_check_pending(caller_real(RET), s);
}

#define SLOT_WRAPPERS(i)                                                          \
    static ssize_t send_##i(gnutls_session_t s, const void *data, size_t n)       \
    {                                                                             \
        return shim_send(&g_reals[i], s, data, n, RET);                           \
    }                                                                             \
    static ssize_t recv_##i(gnutls_session_t s, void *data, size_t n)             \
    {                                                                             \
        return shim_recv(&g_reals[i], s, data, n);                                \
    }                                                                             \
    static size_t check_pending_##i(gnutls_session_t s)                           \
    {                                                                             \
        return shim_check_pending(&g_reals[i], s);                                \
    }

BO_LIB_EACH_SLOT(SLOT_WRAPPERS)


#define SLOT_ROW(i) {(void *)send_##i, (void *)recv_##i, (void *)check_pending_##i}

static void *const g_wrappers[BO_LIB_MAX_COPIES][GT_NHOOKED] = {
    BO_LIB_SLOT_LIST(SLOT_ROW),
};

static void *gnutls_wrapper(int slot, int fn)
{
    return g_wrappers[slot][fn];
}
