/*
 * ssl_conn.h: an OpenSSL copy's real functions and a TLS connection's moves
 * (ssl_conn.c: the transport of exchange.h, and who the program verified),
 * within the http room, for ssl.c's hooks.
 */
#ifndef BO_HTTP_SSL_CONN_H
#define BO_HTTP_SSL_CONN_H

#include <stdbool.h>
#include <stddef.h>

#include "http/conn.h"
#include "http/exchange.h"

/* OpenSSL's ABI constants this file needs (stable since 1.0: no header). */
#define SSL_ERROR_NONE 0
#define SSL_ERROR_SSL 1
#define SSL_ERROR_WANT_READ 2
#define SSL_ERROR_WANT_WRITE 3
#define SSL_ERROR_SYSCALL 5
#define SSL_ERROR_ZERO_RETURN 6

typedef struct ssl_st SSL;

typedef struct ssl_st SSL;

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
    int (*set_session)(SSL *, void *);
    int bound;
    /* the peer's certificate and its digest (libcrypto's, found through the
     * copy's own handle when first needed: peer_fns) */
    void *(*get_peer)(const SSL *);
    int (*digest)(const void *, const void *, unsigned char *, unsigned int *);
    const void *(*sha256)(void);
    void (*x509_free)(void *);
    int peer_state; /* 0 not looked up, 1 found, -1 missing */
} ssl_real;

/* A TLS connection's moves on an SSL object bound to a socket (ctx: its
 * copy's ssl_real). */
extern const bo_hx_io bo_ssl_io;

/* The SHA-256 of the certificate the peer of ssl showed, by R's own
 * libcrypto (found through the copy's handle when first needed): 0, or -1
 * (no certificate, or the functions are missing: then no new connection
 * is ever made for that copy). */
int bo_ssl_peer_id(const ssl_real *R, const SSL *ssl, unsigned char out[BO_HC_PEER_ID]);

#endif
