/*
 * exchange.h: one request and its answer on a connection, as a call of
 * the engine, within the http room (exchange.c).  The transport (a plain
 * socket, sock.c; an SSL object bound to one, ssl.c) gives the exchange
 * its few moves through bo_hx_io; everything else is the same for both:
 *
 *   bo_hx_begin     a write starts a request: its destination, its call,
 *                   the admission of its first attempt (before a byte goes);
 *   bo_hx_sent      the bytes of the request the transport accepted: read
 *                   (bo_http), kept while it may be sent again;
 *   bo_hx_judge     the program's first read after the whole request: the
 *                   response is looked at without being consumed, judged
 *                   (bo_classify), completed, and a throttle retried: the
 *                   wait, the admission, the same connection (the response
 *                   consumed whole) or a new one, the request sent again;
 *   bo_hx_consumed  what the program read of a response that stands, so
 *                   that its end (and the next request) is known;
 *   bo_hx_drop      the record gives up its call (close, OFF, fork).
 */
#ifndef BO_HTTP_EXCHANGE_H
#define BO_HTTP_EXCHANGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "http/conn.h"

/* The transport's moves (ctx: the transport's own, passed back). */
typedef struct bo_hx_io {
    /* The response's bytes so far into c->peek (from its first byte, at most
     * BO_HC_PEEK_MAX), none consumed from the program's view.  Waits for a
     * first byte as the program's read would: not when nb, nor on a
     * non-blocking socket.  >0: how many; 0: the peer closed before any;
     * -1: errno (EAGAIN: nothing yet). */
    ssize_t (*look)(bo_hconn *c, void *ctx, bool nb);
    /* Is the connection's socket non-blocking (O_NONBLOCK) now? */
    bool (*nonblocking)(bo_hconn *c, void *ctx);
    /* Wait until more than `have` bytes can be looked at: 1; 0 when until_ns
     * came first; -1 when no more will come (closed, an error). */
    int (*more)(bo_hconn *c, void *ctx, size_t have, int64_t until_ns);
    /* Consume and throw away the response's first n bytes (all of them
     * looked at already); then false when the connection cannot carry
     * another request (the peer closed it, or more bytes follow).  A
     * same_only transport then consumes nothing: the answer stands. */
    bool (*drop)(bo_hconn *c, void *ctx, size_t n);
    /* Send buf whole on the connection by until_ns: 0, or -1 (errno). */
    int (*send)(bo_hconn *c, void *ctx, const char *buf, size_t n, int64_t until_ns);
    /* A new connection in place of the old one, on the program's fd, by
     * until_ns: 0, or -1 with the answer the program is to get untouched.
     * answer: the length of the whole answer that came on the old one
     * (looked at, not consumed), 0 when none came, BO_HX_NOT_WHOLE when its
     * end is not among the bytes looked at (a transport that must hold the
     * answer before the old connection goes, TLS, then refuses). */
    int (*redial)(bo_hconn *c, void *ctx, int64_t until_ns, size_t answer);
    /* The program's receive timeout on the connection (0: none), in ns. */
    int64_t (*rcvtimeo)(bo_hconn *c, void *ctx);
    /* The program's send timeout (0: none), in ns. */
    int64_t (*sndtimeo)(bo_hconn *c, void *ctx);
    /* redial needs the answer's length (it holds the answer first) */
    bool redial_holds;
    /* no redial at all (GnuTLS): only a keep-alive answer that came whole is
     * retried, on the same connection; any other stands at once, no wait */
    bool same_only;
} bo_hx_io;

#define BO_HX_NOT_WHOLE ((size_t)-1)

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
 * A write of buf (len bytes) on an IDLE connection: the start of a request
 * whose whole head is in buf.  Returns 0 when its first attempt is admitted
 * (REQ: write it, then bo_hx_sent), EINTR when a signal ended the admission
 * wait (nothing written), -1 when the hooks leave the connection alone (OFF:
 * not a request they may retry, its head not in one write, a destination
 * BACKOFF_HOSTS leaves out).
 */
int bo_hx_begin(bo_hconn *c, const bo_hx_io *io, void *ctx, const char *buf, size_t len);

/* n bytes of the request went out (REQ): read, kept. */
void bo_hx_sent(bo_hconn *c, const char *buf, size_t n);

/* What the program's read is to do after bo_hx_judge. */
typedef enum bo_hx_verdict {
    BO_HX_PASS = 0, /* read as the program asked (the response stands: PASS) */
    BO_HX_ERR,      /* return -1 with *err (EAGAIN: nothing yet; the state stays) */
    BO_HX_OFF       /* read as the program asked; the connection is left alone */
} bo_hx_verdict;

/*
 * The program's first read after the whole request (SENT); nb: its call
 * says not to wait (MSG_DONTWAIT).  Judges the response, retrying
 * throttles.  A retry's wait and admission block the read, even a
 * non-blocking one (the answer it met was there: the read would not have
 * waited); then the read returns EAGAIN (BO_HX_ERR) until the retry's
 * answer comes on a non-blocking socket (the program polls, as it does for
 * any read), and waits for that answer on a blocking one, as long as the
 * socket's SO_RCVTIMEO, else BO_HX_ANSWER_NS (then EAGAIN).  A blocking
 * socket read with MSG_DONTWAIT after the program's own poll (PHP) is such
 * a read: an EAGAIN there would read as the end of the answer.
 */
#define BO_HX_ANSWER_NS (60 * 1000000000LL)
bo_hx_verdict bo_hx_judge(bo_hconn *c, const bo_hx_io *io, void *ctx, bool nb, int *err);

/* The program consumed n bytes of the response that stands (PASS; n 0:
 * the peer closed). */
void bo_hx_consumed(bo_hconn *c, const char *buf, size_t n);

/* Give up the call in flight, if any (its attempt cancelled). */
void bo_hx_drop(bo_hconn *c);

#endif
