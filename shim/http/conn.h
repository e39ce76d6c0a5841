/*
 * conn.h: one connection's record, within the http room: what the hooks
 * know of a client socket that speaks HTTP/1.x (its request in flight, the
 * answer being judged, passed or retried, the call of the request), and
 * the table that finds it by fd (fdtab.c).  The record of an fd lives as
 * long as the process (it is reset, never freed, when the fd is closed),
 * so a hook never meets a freed one.  The exchange (exchange.c) is the one
 * place that moves a record from one state to another.
 */
#ifndef BO_HTTP_CONN_H
#define BO_HTTP_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "bo_engine.h"
#include "bo_http.h"
#include "bo_idem.h"
#include "dest/dest.h"

/*
 * Where a connection stands:
 *   NONE   nothing known: the next write that starts with a request line
 *          makes it IDLE (the socket is checked then: a connected TCP
 *          socket the process did not accept);
 *   IDLE   between requests: the next write must start a request;
 *   OFF    anything else (not HTTP/1.x, a tunnel, pipelining, a state the
 *          hooks lost): every call passes through until the fd is closed;
 *   REQ    a request is being written (its call admitted);
 *   SENT   the whole request went out: its answer is judged when it comes;
 *   PASS   the answer stands: the program reads it, the hooks follow it to
 *          its end (then IDLE again);
 *   RETRY  a retry is under way (the answer that met a throttle taken out
 *          of the program's view): its wait, its admission, a new
 *          connection, the request sent again; the program's reads find
 *          nothing yet, its poll nothing to report (exchange.h).
 */
typedef enum bo_hc_state {
    BO_HC_NONE = 0,
    BO_HC_IDLE,
    BO_HC_OFF,
    BO_HC_REQ,  /* from here on a read is the hooks' business (bo_hc_reads) */
    BO_HC_SENT,
    BO_HC_PASS,
    BO_HC_RETRY
} bo_hc_state;

/* The steps of a retry under way (RETRY). */
typedef enum bo_hc_step {
    BO_HC_STEP_WAIT = 0, /* the engine's wait, then the admission */
    BO_HC_STEP_DIAL,     /* a new connection connecting (dial_fd) */
    BO_HC_STEP_SHAKE,    /* TLS: the program's object handshaking on it */
    BO_HC_STEP_SEND      /* the kept request going out (resend_off) */
} bo_hc_step;

/* The response bytes judged at once: a head and the small body of a throttle. */
#define BO_HC_PEEK_MAX (BO_HTTP_HEAD_MAX + 16384)
/* Epoll registrations of a socket a new connection takes over, at most. */
#define BO_HC_EPOLL_MAX 8
/* A digest of the peer's certificate (SHA-256). */
#define BO_HC_PEER_ID 32

struct bo_hx_io;

typedef struct bo_hconn {
    int fd;
    int busy;                   /* a hook is inside (bo_hc_lock), atomic */
    int stale;                  /* closed, or met by another thread, while busy: atomic */
    bo_hc_state st;
    bool tls;                   /* a TLS object is bound to the fd (ssl.c, gnutls.c) */
    bool https;                 /* its destination key's scheme */
    bool active;                /* counted in bo_hc_active (exchange.c keeps it) */
    const struct bo_hx_io *io;  /* the transport (sock.c, ssl.c, gnutls.c) */
    const void *io_ctx;         /* its copy of the library (TLS), passed back */
    uint64_t ino;               /* the socket's identity (its inode) as adopted or
                                   as the hooks last replaced it: another socket on
                                   the fd number means the program closed this one
                                   without a hook seeing it (libuv's system call) */
    bo_http_msg req;            /* the request in flight, as written */
    bo_http_msg resp;           /* PASS: the response, as the program reads it */
    char *kept;                 /* the request's bytes while it may be sent again */
    size_t kept_len, kept_cap;
    bool kept_ok;               /* kept holds the whole request so far */
    char *peek;                 /* BO_HC_PEEK_MAX bytes: the response being judged
                                   (made with the first request) */
    bool shut_wr;               /* the program shut the connection down for writing
                                   after its request (shutdown): reproduced on a new one */
    bool shut_rd;               /* ... for reading: nothing of it is retried */
    bool deferred;              /* a non-blocking read met an unjudged throttle and
                                   left it for the program's poll (exchange.c) */
    int64_t paced_until;        /* a request's write held back for the pace: the program's
                                   poll shows no POLLOUT before then (0: none) */
    bool paced_go;              /* ... its poll's time ran out first: it goes at once */
    int64_t first_byte_ns;      /* when the answer's first byte was seen (0: not yet) */
    /* the call of the request in flight */
    bool in_call;               /* begun, not ended */
    bool admitted;              /* an attempt is counted in flight */
    bo_block *dest;             /* referenced while in_call */
    bo_call call;
    uint64_t id, lkey;          /* trace call number; the logical request (0: not made) */
    unsigned inflight;
    size_t fed_ahead;           /* bytes of the request read before they were written
                                   (bo_hx_begin reads the head first) */
    size_t resp_skip;           /* PASS: bytes of the answer's head, read at the judging,
                                   that the program has still to read */
    bo_block *dest_cache;       /* the destination of the connection's last request
                                   (a reference), for the next one to the same Host */
    uint64_t dest_hash;
    bool idem_keyed;            /* the request carries the shim's Idempotency-Key, from its
                                   first attempt on (idem) */
    bool idem_added;            /* ... and its line is in kept */
    uint64_t idem_body;         /* the body's fingerprint, when known at its first write */
    char idem[BO_IDEM_VALUE_SIZE];
    char *inj;                  /* the program's first write of the request with the key's
                                   line in it, which the hooks write in its place */
    size_t inj_len, inj_cap, inj_off, inj_at, inj_line; /* its length, bytes written, where
                                   the line starts and its length */
    /* a retry under way (RETRY) */
    bo_hc_step step;
    bool shake_first;           /* SHAKE: the handshake starts at the next step */
    bool same_conn;             /* sent again on the same connection, not a new one */
    bool answered;              /* the retried attempt had an answer (held), not a close */
    bool loop;                  /* the program waits in an event loop (epoll): the
                                   socket is kept quiet while the retry waits */
    bool loop_late;             /* ... whose next timer was not known: each later wait
                                   of the loop bounds the retry (give_up_ns) */
    int dial_fd;                /* the new connection while it connects (-1: none) */
    int park_fd;                /* our end of the quiet stand-in on the fd (-1: none) */
    int orig_fd;                /* the program's socket the stand-in holds the place of,
                                   kept aside to make the new connection like it */
    size_t resend_off;          /* bytes of kept sent again */
    int64_t give_up_ns;         /* the program's wait for this answer ends then: a
                                   retry not sent by then is abandoned */
    bool async;                 /* the retry waits in the program's poll or loop (the
                                   time it waits is counted here, not by call/'s waits) */
    int64_t wait_from_ns;       /* when the retry began to wait */
    /* the peer (read at the adoption, and again before a new connection) */
    struct sockaddr_storage peer;
    socklen_t peer_len;
    /* TLS (ssl.c, gnutls.c): the program's object, and who it verified */
    void *ssl;
    int ssl_slot;
    bool peer_id_known;         /* peer_id holds the certificate the program accepted */
    int tls_err;                /* SSL_get_error's answer for the hooks' own failure of the
                                   object's last call (0: the object's own) */
    unsigned char peer_id[BO_HC_PEER_ID];
    /* answer bytes taken out of the connection ahead of the program (a TLS head
     * spread over records, a GnuTLS answer, a retried answer kept in case the
     * retry is abandoned), served to it first (held_off..held_len) */
    char *held;
    size_t held_len, held_off, held_cap;
    bool deliver;               /* held is an answer the program is to be given, and
                                   its socket was made readable for it */
} bo_hconn;

/* Is the record one the wait hooks must look at (read outside its lock)? */
static inline bool bo_hc_is_active(const bo_hconn *c)
{
    return __atomic_load_n(&c->active, __ATOMIC_RELAXED);
}

/* Does a read on this record go through the hooks (a plain socket's
 * request or answer in flight)?  One compare for everything else. */
static inline bool bo_hc_reads(const bo_hconn *c)
{
    return c != NULL && c->st >= BO_HC_REQ && !c->tls;
}

/* Held answer bytes the program has not read yet. */
static inline size_t bo_hc_held_left(const bo_hconn *c)
{
    return c->held_len - c->held_off;
}

/* Room for n more held bytes (the buffer doubles from 4 KiB): 0, or -1 (no memory). */
int bo_hc_held_room(bo_hconn *c, size_t n);

/* A TLS transport's look and hold, whose answer is read ahead into held:
 * bo_hc_held_peek copies what is held (BO_HC_PEEK_MAX at most) to peek
 * (-1 EAGAIN when nothing is), bo_hc_held_has says whether n bytes are. */
ssize_t bo_hc_held_peek(bo_hconn *c);
int bo_hc_held_has(bo_hconn *c, size_t n);

#endif
