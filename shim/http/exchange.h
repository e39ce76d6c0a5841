/*
 * exchange.h: one request and its answer on a connection, as a call of
 * the engine, within the http room (exchange.c).  The transports (a plain
 * socket, sock.c; an OpenSSL object bound to one, ssl.c; a GnuTLS session
 * on one, gnutls.c) only move bytes, through bo_hx_io; every decision and
 * every change of a record's state is made here:
 *
 *   bo_hx_adopt     a connection the room follows from now on;
 *   bo_hx_begin     a write starts a request: its destination, its call,
 *                   the admission of its first attempt (before a byte goes);
 *   bo_hx_sent      the bytes of the request the transport accepted: read
 *                   (bo_http), kept while it may be sent again;
 *   bo_hx_read      the program's read while a request or its answer is in
 *                   flight: the answer judged when it comes (bo_classify),
 *                   a throttle retried, the answer that stands followed;
 *   bo_hx_poll_*    the same, inside the program's own poll or select;
 *   bo_hx_drive     every retry under way, from the program's event-loop
 *                   wait (epoll);
 *   bo_hx_consumed  what the program read of an answer that stands;
 *   bo_hx_off, bo_hx_closed, bo_hx_shutdown: the connection given up,
 *                   closed, or shut down by the program.
 *
 * Where the waits happen.  A retry waits only where the program itself
 * waits for the answer, never longer than it would:
 *   - a blocking read (a blocking socket, no MSG_DONTWAIT): inside it, as
 *     the read would block, bounded by its SO_RCVTIMEO;
 *   - a poll or select that names the connection: inside that call, which
 *     keeps serving the program's other descriptors, bounded by its
 *     timeout (a retry whose wait would not end before it is not made: the
 *     program gets the answer as it came);
 *   - an event loop (the socket in an epoll set): inside the loop's own
 *     epoll_wait, bounded by the loop's next timer (the program's own
 *     deadlines live there), unless the program serves connections it
 *     accepted (a reverse proxy: its upstream answers are passed on);
 *   - a non-blocking read anywhere else never waits, and its answer is
 *     handed over as it came.
 * A call the program made non-blocking (O_NONBLOCK, MSG_DONTWAIT, a TLS
 * object over such a socket) never waits inside the hooks: a first attempt
 * goes at once (counted in the window), a retry is made later, outside the
 * program's call, while its poll sees what it would have seen: nothing
 * yet, then the clean answer.
 */
#ifndef BO_HTTP_EXCHANGE_H
#define BO_HTTP_EXCHANGE_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "http/conn.h"
#include "http/transport.h"

/*
 * Does buf start like a request line ("METHOD SP target")?  The cheap
 * test a write must pass before anything else is asked.
 */
static inline bool bo_hx_request_start(const char *buf, size_t len)
{
    size_t i = 0;
    if (len < 18 || buf[0] < 'A' || buf[0] > 'Z') /* "GET / HTTP/1.0\r\n\r\n" at least */
        return false;
    while (i < 16 && buf[i] >= 'A' && buf[i] <= 'Z')
        i++;
    return buf[i] == ' ' && (buf[i + 1] == '/' || buf[i + 1] == 'h' || buf[i + 1] == '*');
}

/*
 * The record of a connection the room follows from now on, whose first
 * request is being written: io and ctx its transport, tls whether a TLS
 * object is bound to it, h2 whether that object negotiated HTTP/2 (then it
 * is left alone).  The socket's identity is taken now.
 */
void bo_hx_adopt(bo_hconn *c, const bo_hx_io *io, const void *ctx, bool tls, bool h2);

/*
 * The record as the hook finds it: a record of another socket on the same
 * fd number (the program closed the old one without a hook seeing it)
 * starts anew.  False when that happened (the record is NONE now).  For a
 * hook that finds a request in flight where none can be.
 */
bool bo_hx_same_socket(bo_hconn *c);

/*
 * Enter and leave a record (bo_hc_lock): leaving acts on what happened
 * meanwhile (its fd closed: reset; another thread on it: OFF).
 */
bool bo_hx_enter(bo_hconn *c);
void bo_hx_leave(bo_hconn *c);

/*
 * A write of buf (len bytes) on an IDLE connection: the start of a request
 * whose whole head is in buf.  dontwait: the program's call may not wait
 * (MSG_DONTWAIT); else the socket's O_NONBLOCK is asked only if the
 * admission would wait (a call that may not wait goes at once, counted in
 * the window, unless its program polls the socket itself: then the write
 * waits in that poll).
 * Returns 0 when its first attempt is admitted (REQ: write it, then
 * bo_hx_sent), EINTR when a signal ended the admission wait, EAGAIN when
 * the pace holds the write back for the program's poll (nothing written
 * either way), -1 when the hooks leave the request alone (not one they may
 * retry, its head not in one write, a destination BACKOFF_HOSTS leaves
 * out; the connection stays followed when only this request is left alone).
 */
int bo_hx_begin(bo_hconn *c, const char *buf, size_t len, bool dontwait);

/* n bytes of the request went out (REQ): read, kept. */
void bo_hx_sent(bo_hconn *c, const char *buf, size_t n);

/*
 * The shim's Idempotency-Key goes into the request's first write
 * (BACKOFF_IDEMPOTENCY_KEY): while it does, bo_hx_inject gives the bytes to
 * write in place of the program's next n (its bytes with the key's line in
 * them, the same bytes again after a write that did not take them: a TLS
 * library asks for that), NULL when the program's own are to be written;
 * bo_hx_injected says how many of the program's bytes the w written stand
 * for (0 when only the line's went: a non-blocking write then says EAGAIN,
 * a blocking one writes on).
 */
const char *bo_hx_inject(const bo_hconn *c, size_t n, size_t *len);
size_t bo_hx_injected(bo_hconn *c, size_t w);

/* What the program's read is to do after bo_hx_read. */
typedef enum bo_hx_verdict {
    BO_HX_PASS = 0, /* read as the program asked (held bytes first): the answer stands */
    BO_HX_ERR,      /* return -1 with *err (EAGAIN: nothing yet; EINTR: a signal) */
    BO_HX_OFF       /* read as the program asked; the connection is left alone */
} bo_hx_verdict;

/*
 * The program's read on a connection whose request or answer is in flight
 * (REQ, SENT, RETRY; PASS passes).  blocking: 1 the read may wait (a
 * blocking socket without MSG_DONTWAIT; the program's own blocking read
 * waits as it would have), 0 it may not, BO_HX_ASK: the socket's
 * O_NONBLOCK says, asked only when it matters (not for a clean answer).
 * Judges the answer when it comes and retries a throttle where the program
 * waits for it (the heading); a read that may not wait finds nothing yet
 * (EAGAIN) while a retry is under way.
 */
#define BO_HX_ASK (-1)
bo_hx_verdict bo_hx_read(bo_hconn *c, int blocking, int *err);

/* The program consumed n bytes of the answer that stands (PASS; n 0: the
 * peer closed), held bytes included. */
void bo_hx_consumed(bo_hconn *c, const char *buf, size_t n);

/*
 * The program's poll or select names c's fd with events ev (POLLIN...),
 * deadline its end (INT64_MAX: none).  Before the real call:
 * bo_hx_poll_before says what to ask the kernel instead (*fd_ev: events
 * on the fd, -1 to leave the fd out; *xfd, *x_ev: another descriptor the
 * record waits for, -1 none; *until: come back no later), and returns the
 * events the program is to see at once (an answer held for it), 0 none.
 * After it: bo_hx_poll_after takes the kernel's answer for both (rev,
 * xrev), judges an answer that came, takes a retry a step, and returns the
 * events the program is to see (0: nothing yet).  The record is entered by
 * the caller (bo_hx_enter) around both.
 */
short bo_hx_poll_before(bo_hconn *c, short ev, int64_t now, int64_t deadline, short *fd_ev,
                        int *xfd, short *x_ev, int64_t *until);
short bo_hx_poll_after(bo_hconn *c, short ev, short rev, short xrev, int64_t deadline);

/*
 * Every retry under way in the process, taken a step from the program's
 * event-loop wait (the epoll hooks): *until the time to come back, and up
 * to max descriptors with the events they wait for (fds[], evs[]), the
 * number of which is returned.  loop_deadline: the loop's next timer
 * (INT64_MAX: none): a retry not sent by then is abandoned, its answer
 * handed to the program.
 */
int bo_hx_drive(int64_t now, int64_t loop_deadline, int64_t *until, int *fds, short *evs,
                int max);

/* The time the process's event loop (its last epoll_wait with a timeout)
 * will wake by itself: the bound of a retry judged in a non-blocking read. */
void bo_hx_loop_wait(int64_t now, int timeout_ms);

/*
 * The process accepted a connection: it serves (a server, a reverse
 * proxy).  Its event loop's upstream answers are then passed on as they
 * came: its own clients decide whether to retry (retry layers never
 * multiply), and its loop serves them meanwhile.
 */
void bo_hx_serving(void);

/* Give up the connection: what is in flight cancelled, everything passes. */
void bo_hx_off(bo_hconn *c);

/* The program closed fd (close, or another file dup2'ed onto it). */
void bo_hx_closed(int fd);

/* The program shut fd down (shutdown(2)'s how). */
void bo_hx_shutdown(int fd, int how);

#endif
