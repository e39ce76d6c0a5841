/*
 * sock.h: what the plain socket's side (sock.c) lends the TLS side
 * (ssl.c), within the http room: the test that makes a socket one the room
 * follows, a new connection onto the program's fd, and a bounded wait.
 */
#ifndef BO_HTTP_SOCK_H
#define BO_HTTP_SOCK_H

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

#endif
