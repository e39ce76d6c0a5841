/*
 * transport.h: a transport's moves (bo_hx_io), within the http room: a
 * plain socket's (sock.c), an OpenSSL object's bound to one (ssl_conn.c), a
 * GnuTLS session's on one (gnutls.c).  Bytes only, never a decision: the
 * exchange (exchange.h) decides, and calls these.
 */
#ifndef BO_HTTP_TRANSPORT_H
#define BO_HTTP_TRANSPORT_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "http/conn.h"
#include "http/held.h"

/* A transport's moves: bytes only, never a decision (c->io_ctx is its own). */
typedef struct bo_hx_io {
    /*
     * The answer's bytes so far into c->x.peek (from its first byte, at most
     * BO_HC_PEEK_MAX; bytes held first), none consumed from the program's
     * view.  block: wait for a first byte as the program's blocking read
     * would (its SO_RCVTIMEO, its signals); otherwise never wait.  >0: how
     * many; 0: the peer closed before any; -1: errno (EAGAIN: nothing yet).
     */
    ssize_t (*look)(bo_hconn *c, bool block);
    /* Take the answer's first n bytes (all looked at) out of the connection
     * into c->held.buf, without waiting: 0, or -1. */
    int (*hold)(bo_hconn *c, size_t n);
    /* Nothing more to read, nothing pending, the peer not closing: the
     * connection can carry another request. */
    bool (*idle)(bo_hconn *c);
    /* Write what it can of buf now: the bytes written, or -1 with errno
     * (EAGAIN: wait for *ev on the fd). */
    ssize_t (*put)(bo_hconn *c, const char *buf, size_t n, short *ev);
    /* TLS: the program's object on the new socket now on the fd: first
     * clears it, then each call takes the handshake a step: 1 when done and
     * the peer is the one the program verified, 0 in progress (wait for *ev
     * on the fd), -1 failed.  NULL: nothing to do (a plain socket). */
    int (*shake)(bo_hconn *c, bool first, short *ev);
    /* The fd's readiness for a reader of the TLS object, beyond the
     * socket's: bytes pending in the object (NULL: none). */
    bool (*pending)(bo_hconn *c);
    /* no new connection at all (GnuTLS cannot handshake a used session
     * again): only a keep-alive answer that came whole is retried */
    bool same_only;
} bo_hx_io;

#endif
