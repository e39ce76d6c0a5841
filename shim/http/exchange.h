/*
 * exchange.h: one request and its answer on a connection, as a call of
 * the engine, within the http room: what the transports (a plain socket,
 * sock.c; an OpenSSL object bound to one, ssl.c; a GnuTLS session on one,
 * gnutls.c) and the wait hooks (wait.c) call.  A transport only moves
 * bytes (bo_hx_io) and maps verdicts to its own errors; every decision and
 * every change of a record's state is the exchange's: one write path
 * (bo_hx_write_before/after) and one read path (bo_hx_read_before, _held,
 * _after) for every transport (exchange.c, which reads as one request's
 * life), the program's poll (bo_hx_poll_*) and event loop (bo_hx_drive,
 * bo_hx_loop_wait: drive.c, waiter.c), the record's life (record.c).
 *
 * Where the waits happen.  A retry waits only where the program itself
 * waits for the answer, never longer than it would: inside a blocking read
 * (bounded by its SO_RCVTIMEO), inside a poll or select that names the
 * connection (bounded by its timeout: a retry that does not fit is not
 * made), across an event loop's waits (a state of the connection, taken a
 * step in each epoll_wait, bounded by HX_LOOP_NS or the loop's next timer,
 * the later; a server's loop passes its upstream answers on); a non-blocking
 * read anywhere else never waits, and its answer is handed over as it
 * came.  A call the program made non-blocking never waits inside the
 * hooks: a first attempt goes at once (counted in the window), a retry is
 * made later, outside the program's call, while its poll sees nothing yet,
 * then the clean answer.  docs/DESIGN.md, "The HTTP hooks", has the rules.
 */
#ifndef BO_HTTP_EXCHANGE_H
#define BO_HTTP_EXCHANGE_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

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
 * Enter and leave a record (bo_hc_lock): leaving acts on what happened
 * meanwhile (its fd closed: reset; another thread on it: OFF).
 */
bool bo_hx_enter(bo_hconn *c);
void bo_hx_leave(bo_hconn *c);

/* What a hook is to do after bo_hx_write_before or bo_hx_read_before. */
typedef enum bo_hx_verdict {
    BO_HX_PASS = 0, /* the call goes through the exchange: the real call (in place of the
                       program's first bytes, bo_hx_wr.buf; held bytes first, bo_hx_read_held),
                       then bo_hx_write_after or bo_hx_read_after */
    BO_HX_ERR,      /* the call fails with .err, errno too (EAGAIN: nothing yet, or the
                       pace holds a write back; EINTR: a signal), nothing more to do */
    BO_HX_OFF       /* the real call as the program made it, nothing more to do */
} bo_hx_verdict;

/* The one write path of every transport (socket_wrapper's
 * swrap_sendmsg_before/after): bo_hx_write_before, the real call with buf
 * in place of the program's first buffer, bo_hx_write_after. */
typedef struct bo_hx_wr {
    /* the transport's: */
    const struct iovec *iov; /* the program's buffers (its one buffer: iovcnt 1) */
    int iovcnt;
    bool dontwait;           /* the call may not wait (MSG_DONTWAIT) */
    /* Is the record the transport's (its socket, its TLS object obj)?  One
     * in NONE is adopted here when its socket is one the room follows
     * (bo_hs_record, unless asked already: then bo_hx_adopt), or false. */
    bool (*claim)(bo_hconn *c, struct bo_hx_wr *w);
    const void *obj, *ctx;   /* the transport's TLS object (NULL: none), its copy */
    const void *ret;         /* the program's call's return address (sock.h) */
    bool asked;              /* the socket was asked already (bo_hs_record) */
    /* the exchange's: */
    const char *buf;         /* what goes out in place of iov[0] (the shim's Idempotency-Key
                                line in it, bo_hx_inject), len bytes */
    size_t len;
    int err;                 /* the exchange failed the call itself with it (0: it did not) */
    bool again;              /* bo_hx_write_after: only the key line's bytes went on a call
                                that may wait: before, the real call and after again */
    int saved;               /* errno at the hook's entry */
} bo_hx_wr;

/*
 * A write on a record the transport found or may adopt: a request's start
 * is admitted before its first byte goes (bo_hx_begin: never waiting when
 * the call may not); a write where no request may start (pipelining, the
 * middle of an answer) leaves the connection alone.  PASS: write w->buf;
 * ERR: w->err is EINTR (a signal ended the admission's wait) or EAGAIN
 * (the pace holds the write back for the program's poll), nothing written.
 */
bo_hx_verdict bo_hx_write_before(bo_hconn *c, bo_hx_wr *w);

/*
 * The real call wrote `wrote` bytes of w->buf and what followed it (< 0: it
 * failed; failed: for good, not a would-block or a signal: the connection
 * is given up).  Returns the program's bytes that went (wrote itself when
 * < 0), or -1 with w->err EAGAIN when only the key line's bytes went on a
 * call that may not wait (0 and w->again on one that may); errno the real
 * call's.
 */
ssize_t bo_hx_write_after(bo_hconn *c, bo_hx_wr *w, ssize_t wrote, bool failed);

/* The one read path of every transport: bo_hx_read_before, then the bytes
 * held for the program (bo_hx_read_held) or the real read, then
 * bo_hx_read_after. */
typedef struct bo_hx_rd {
    void *buf;    /* the program's buffer, n bytes */
    size_t n;
    bool dontwait; /* the call may not wait (MSG_DONTWAIT; else the socket's mode says) */
    bool peek;    /* MSG_PEEK, SSL_peek: nothing is consumed */
    int err;      /* BO_HX_ERR: the call fails with it */
    int saved;    /* errno at the hook's entry */
} bo_hx_rd;

/*
 * A read on a record whose request or answer is in flight, or that holds
 * bytes for the program: the answer is judged when it comes and a throttle
 * retried where the program waits for it (the heading); a read that may
 * not wait finds nothing yet (ERR, EAGAIN) while a retry is under way.
 */
bo_hx_verdict bo_hx_read_before(bo_hconn *c, bo_hx_rd *r);

/* The bytes held for the program (a TLS answer read ahead, a retry's
 * answer handed back), in any state, up to r->n, copied to r->buf (kept
 * for a peek): how many (0: none, make the real read). */
size_t bo_hx_read_held(bo_hconn *c, const bo_hx_rd *r);

/* The program got `got` bytes (held or real; eof: the peer closed): an
 * answer that stands is followed to its end; the record is left. */
void bo_hx_read_after(bo_hconn *c, const bo_hx_rd *r, size_t got, bool eof);

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
 * number of which is returned.  loop_deadline: the end of this wait (a
 * retry lives across the loop's waits: it is no bound of the retry's).
 */
int bo_hx_drive(int64_t now, int64_t loop_deadline, int64_t *until, int *fds, short *evs,
                int max);

/* The time the process's event loop (its last epoll_wait with a timeout)
 * will wake by itself: a loop's retry may take until then (bo_hx_waiter). */
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
