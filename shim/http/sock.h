/*
 * sock.h: what the plain socket's side (sock.c) lends the TLS hooks of the
 * http room (ssl.c, gnutls.c): the test that makes a socket one the room
 * follows.
 */
#ifndef BO_HTTP_SOCK_H
#define BO_HTTP_SOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "http/conn.h"
#include "http/exchange.h"

/*
 * The record of fd when the program writes a request line on it and it is
 * a socket the room follows: a connected TCP socket (IPv4 or IPv6) that
 * accept() did not return, written from outside libcurl (ret: the return
 * address of the program's call).  NULL otherwise (the fd is marked so
 * that its next such write costs no system call).  A record in NONE keeps
 * the peer (where a new connection for a retry goes); the caller adopts
 * it (bo_hx_adopt).
 */
bo_hconn *bo_hs_adopt(int fd, const void *ret);

/*
 * The record for a write of buf (n bytes) on fd through w->obj (a TLS
 * object; NULL: the plain socket itself): the one found when it is w->obj's
 * connection; else, when buf starts a request, a record of another
 * connection on that number given up (bo_hx_closed) and fd asked as
 * bo_hs_adopt asks it (w->asked).  NULL: the write passes.  errno kept.
 */
bo_hconn *bo_hs_record(int fd, bo_hx_wr *w, const char *buf, size_t n);

/* For a transport's claim (bo_hx_wr): is c in NONE, its socket one the
 * room follows (asked already, or bo_hs_adopt now)?  Then the transport
 * adopts it. */
bool bo_hs_unclaimed(bo_hconn *c, const bo_hx_wr *w);

#endif
