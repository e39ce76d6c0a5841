/*
 * ssl_conn.c: a TLS connection's moves on an OpenSSL object bound to a
 * socket (exchange.h's bo_hx_io, ssl_conn.h) and who the program verified.
 * The answer is read ahead into the record's held bytes (SSL_peek_ex gives
 * one record at a time, and a head is often spread over several), which
 * the hooks serve the program first.  A new connection's handshake is a
 * full one (the session dropped), and it is done only when the new peer
 * shows the very certificate the program accepted on its first connection.
 */
#include "http/ssl_conn.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <poll.h>
#include <string.h>

#include "core/core.h"
#include "http/sockwait.h"
#include "loader/elf.h"

/* ---- who the program verified -------------------------------------------------------- */

/*
 * The functions that read the peer's certificate, from the copy's own
 * handle (libcrypto is its dependency): SSL_get1_peer_certificate (3.x) or
 * SSL_get_peer_certificate (1.1), X509_digest, EVP_sha256, X509_free.
 * Missing ones leave the copy without redials (peer_state -1).
 */
static void peer_fns(ssl_real *R)
{
    Dl_info info;
    struct link_map *lm = NULL;
    void *h = NULL;

    if (__atomic_load_n(&R->peer_state, __ATOMIC_ACQUIRE) != 0)
        return;
    if (dladdr1((void *)R->read, &info, (void **)&lm, RTLD_DL_LINKMAP) != 0)
        h = bo_dl_handle_of(lm);
    if (h != NULL) {
        void *g = bo_dl_real_dlsym(h, "SSL_get1_peer_certificate");
        if (g == NULL)
            g = bo_dl_real_dlsym(h, "SSL_get_peer_certificate");
        *(void **)&R->get_peer = g;
        *(void **)&R->digest = bo_dl_real_dlsym(h, "X509_digest");
        *(void **)&R->sha256 = bo_dl_real_dlsym(h, "EVP_sha256");
        *(void **)&R->x509_free = bo_dl_real_dlsym(h, "X509_free");
        (void)dlerror();
    }
    bool ok = R->get_peer != NULL && R->digest != NULL && R->sha256 != NULL &&
              R->x509_free != NULL;
    __atomic_store_n(&R->peer_state, ok ? 1 : -1, __ATOMIC_RELEASE);
}

/* The SHA-256 of the certificate the peer of ssl showed: 0, or -1 (none). */
int bo_ssl_peer_id(const ssl_real *R, const SSL *ssl, unsigned char out[BO_HC_PEER_ID])
{
    unsigned int len = 0;
    peer_fns((ssl_real *)R);
    if (R->peer_state != 1)
        return -1;
    void *x = R->get_peer(ssl);
    if (x == NULL)
        return -1;
    int ok = R->digest(x, R->sha256(), out, &len);
    R->x509_free(x);
    return ok == 1 && len == BO_HC_PEER_ID ? 0 : -1;
}

/* ---- a TLS connection's moves ------------------------------------------------------ */

/* Decrypted bytes ready without a wait: in the SSL object, or on the socket. */
static bool ready(bo_hconn *c, const ssl_real *R)
{
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    return R->has_pending(c->ssl) || bo_core_sys_poll(&p, 1, 0) > 0;
}

/* The answer so far, read ahead into held (the object gives one record a
 * time), copied to peek. */
static ssize_t tls_look(bo_hconn *c, bool block)
{
    const ssl_real *R = c->io_ctx;
    size_t h;

    for (;;) {
        h = bo_hc_held_left(c);
        if (h >= BO_HC_PEEK_MAX)
            break;
        /* never a read that would wait where the program's would not (on a
         * non-blocking socket the real read says WANT_READ, and leaves the
         * object's state as the program's own read would) */
        if (!ready(c, R) && (h > 0 || (!block && !bo_hs_nonblocking(c->fd))))
            break;
        size_t got = 0, want = BO_HC_PEEK_MAX - h;
        if (bo_hc_held_room(c, want) != 0)
            break;
        int r = R->read_ex(c->ssl, bo_hc_held_end(c), want, &got);
        if (r == 1) {
            bo_hc_held_grew(c, got);
            continue;
        }
        if (h > 0)
            break;
        int e = R->get_error(c->ssl, r);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
            errno = EAGAIN;
            return -1;
        }
        if (e == SSL_ERROR_ZERO_RETURN)
            return 0;
        errno = e == SSL_ERROR_SYSCALL && errno != 0 ? errno : ECONNRESET;
        return -1;
    }
    return bo_hc_held_peek(c);
}

static bool tls_idle(bo_hconn *c)
{
    const ssl_real *R = c->io_ctx;
    struct pollfd p = {.fd = c->fd, .events = POLLIN | POLLRDHUP};
    return !R->has_pending(c->ssl) && bo_core_sys_poll(&p, 1, 0) == 0;
}

/* What a failed SSL call wants, as poll events (0: it failed for good). */
static short wanted(const ssl_real *R, bo_hconn *c, int r)
{
    int e = R->get_error(c->ssl, r);
    return e == SSL_ERROR_WANT_READ ? POLLIN : e == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
}

static ssize_t tls_put(bo_hconn *c, const char *buf, size_t n, short *ev)
{
    const ssl_real *R = c->io_ctx;
    size_t w = 0;
    int r = R->write_ex(c->ssl, buf, n, &w);
    if (r == 1)
        return (ssize_t)w;
    *ev = wanted(R, c, r);
    errno = *ev != 0 ? EAGAIN : EPIPE;
    return -1;
}

/* The program's object on the new connection: cleared, its session
 * dropped, handshaken; done only when the peer shows the certificate the
 * program accepted on its first connection. */
static int tls_shake(bo_hconn *c, bool first, short *ev)
{
    const ssl_real *R = c->io_ctx;
    unsigned char id[BO_HC_PEER_ID];
    const unsigned char *alpn = NULL;
    unsigned alen = 0;

    if (first) {
        if (R->clear(c->ssl) != 1)
            return -1;
        (void)R->set_session(c->ssl, NULL); /* a full handshake: a certificate to compare */
    }
    int r = R->connect(c->ssl);
    if (r != 1) {
        *ev = wanted(R, c, r);
        return *ev != 0 ? 0 : -1;
    }
    R->alpn(c->ssl, &alpn, &alen);
    if ((alen == 2 && memcmp(alpn, "h2", 2) == 0) || bo_ssl_peer_id(R, c->ssl, id) != 0 ||
        memcmp(id, c->peer_id, BO_HC_PEER_ID) != 0)
        return -1; /* not the peer the program verified */
    return 1;
}

static bool tls_pending(bo_hconn *c)
{
    const ssl_real *R = c->io_ctx;
    return R->has_pending(c->ssl);
}

const bo_hx_io bo_ssl_io = {
    .look = tls_look,
    .hold = bo_hc_held_has, /* the answer was read ahead whole into held by tls_look */
    .idle = tls_idle,
    .put = tls_put,
    .shake = tls_shake,
    .pending = tls_pending,
};

