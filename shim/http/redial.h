/*
 * redial.h: a new connection in place of a program's socket, within the
 * http room (redial.c): the socket made like the program's, connected
 * without waiting, then moved onto the program's fd number; and a quiet
 * stand-in that holds the fd while a retry waits in an event loop.
 */
#ifndef BO_HTTP_REDIAL_H
#define BO_HTTP_REDIAL_H

#include <stdint.h>

#include "http/conn.h"

/* Epoll registrations of a socket a new connection takes over, at most. */
#define BO_HC_EPOLL_MAX 8

/*
 * Start a new connection to c's peer: a socket of the same family, type
 * and protocol with the program's options copied (timeouts, keep-alive,
 * TCP_NODELAY and the other TCP and IP options; not the buffer sizes,
 * whose copy would switch the kernel's autotuning off), bound to the same
 * local address (any port), non-blocking, its connect started: c->rt.dial_fd.
 * 0, or -1 (nothing made).
 */
int bo_hr_dial(bo_hconn *c);

/* Is the connection on c->rt.dial_fd made: 1, 0 not yet (wait for POLLOUT on
 * it), -1 failed (dial_fd closed). */
int bo_hr_dial_done(bo_hconn *c);

/*
 * Move c->rt.dial_fd onto the program's fd: the program's status flags
 * (O_NONBLOCK) and its FD_CLOEXEC kept, the epoll sets that held the old
 * file (read from /proc/self/fdinfo, which needs no hook and cannot go
 * stale) given the new one with the same events and data, the record's
 * identity taken anew.  The old socket goes with whatever it still held.
 * 0, or -1 (the fd is as it was, dial_fd closed).
 */
int bo_hr_swap(bo_hconn *c);

/*
 * A quiet stand-in on the program's fd (one end of a socket pair whose
 * other end the record keeps: c->rt.park_fd), in place of a socket that would
 * wake an event loop over and over while a retry waits (the peer closed
 * it, or more bytes follow).  Moved like bo_hr_swap.  0, or -1.
 */
int bo_hr_park(bo_hconn *c);

/* The stand-in's far end closed: a reader of the fd meets its end. */
void bo_hr_unpark(bo_hconn *c);

/* Whatever the record made and still holds (dial_fd, park_fd) is closed. */
void bo_hr_release(bo_hconn *c);

#endif
