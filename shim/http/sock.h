/*
 * sock.h: what the plain socket's side (sock.c) lends the rest of the http
 * room: the test that makes a socket one the room follows, a bounded wait
 * for a descriptor, and what a socket says of itself (its mode, its
 * timeouts).
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
 * that its next such write costs no system call).  A record in NONE keeps
 * the peer (where a new connection for a retry goes); the caller adopts
 * it (bo_hx_adopt).
 */
bo_hconn *bo_hs_adopt(int fd, const void *ret);

/* Wait until fd is ready for `events` (poll's), no later than until_ns:
 * 0, or -1 (ETIMEDOUT, or poll's error). */
int bo_hs_wait_fd(int fd, short events, int64_t until_ns);

/* Is fd O_NONBLOCK now?  Its SO_RCVTIMEO and SO_SNDTIMEO in ns (0: none,
 * or unreadable). */
bool bo_hs_nonblocking(int fd);
int64_t bo_hs_rcvtimeo(int fd);
int64_t bo_hs_sndtimeo(int fd);

#endif
