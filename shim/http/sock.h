/*
 * sock.h: what the plain socket's side (sock.c) lends the TLS side
 * and GnuTLS sides (ssl.c, gnutls.c), within the http room: the test that
 * makes a socket one the room follows, a new connection onto the program's
 * fd, a bounded wait, and what the socket under any record says of itself.
 */
#ifndef BO_HTTP_SOCK_H
#define BO_HTTP_SOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "http/conn.h"

/*
 * The record of fd when the program writes a request line on it and it is
 * a socket the room follows: a connected TCP socket (IPv4 or IPv6) that
 * accept() did not return, written from outside libcurl (ret: the return
 * address of the program's call).  NULL otherwise (the fd is marked so
 * that its next such write costs no system call).
 */
bo_hconn *bo_hs_adopt(int fd, const void *ret);

/* A new TCP connection to c's peer with the program's options, dup3()ed
 * onto c->fd, by until_ns: 0, or -1 with the old socket untouched. */
int bo_hs_redial(bo_hconn *c, int64_t until_ns);

/* Wait until fd is ready for `events` (poll's), no later than until_ns:
 * 0, or -1 (ETIMEDOUT, or poll's error). */
int bo_hs_wait_fd(int fd, short events, int64_t until_ns);

/* Every record's socket, read for the exchange (exchange.h's bo_hx_io
 * nonblocking, rcvtimeo and sndtimeo; ctx unused): is it O_NONBLOCK, and
 * its SO_RCVTIMEO and SO_SNDTIMEO in ns (0: none, or unreadable). */
bool bo_hs_nonblocking(bo_hconn *c, void *ctx);
int64_t bo_hs_rcvtimeo(bo_hconn *c, void *ctx);
int64_t bo_hs_sndtimeo(bo_hconn *c, void *ctx);

#endif
