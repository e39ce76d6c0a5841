/*
 * conn.h: one connection's record, within the http room: what the hooks
 * know of a client socket that speaks HTTP/1.x, grouped by job (the
 * exchange, its call, its key, a retry's steps, the answer held for the
 * program, a write held back for the pace), each group written through its
 * own setters; and what the table that finds it by fd (fdtab.c) gives.  A
 * record lives as long as the process (reset, never freed, when its fd is
 * closed), so a hook never meets a freed one.  Where a record stands:
 *   NONE   nothing known: a write that starts with a request line on a
 *          connected TCP socket the process did not accept makes it IDLE;
 *   IDLE   between requests: the next write must start a request;
 *   OFF    anything else (not HTTP/1.x, a tunnel, pipelining, a state the
 *          hooks lost): every call passes through until the fd is closed;
 *   REQ    a request is being written (its call admitted);
 *   SENT   the whole request went out: its answer is judged when it comes;
 *   PASS   the answer stands: the program reads it, the hooks follow it to
 *          its end (then IDLE again);
 *   RETRY  a retry is under way (the answer that met a throttle taken out
 *          of the program's view): the program's reads find nothing yet,
 *          its poll nothing to report (exchange.h).
 */
#ifndef BO_HTTP_CONN_H
#define BO_HTTP_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "bo_engine.h"
#include "bo_http.h"
#include "bo_idem.h"
#include "dest/dest.h"

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
/* A digest of the peer's certificate (SHA-256). */
#define BO_HC_PEER_ID 32

struct bo_hx_io;

/* The exchange: the request in flight and its answer (exchange.c and its
 * judging, judge.c; the others through their setters). */
typedef struct bo_hc_xchg {
    bo_http_msg req;            /* the request in flight, as written */
    bo_http_msg *resp;          /* its answer: judged, then (PASS) as the program reads it
                                   (lent with peek from a request to the end of its answer) */
    char *kept;                 /* the request's bytes while it may be sent again */
    size_t kept_len, kept_cap;
    bool kept_ok;               /* kept holds the whole request so far */
    size_t fed_ahead;           /* bytes of it read before they were written (its head) */
    char *peek;                 /* BO_HC_PEEK_MAX bytes: the answer being judged (lent) */
    int64_t first_byte_ns;      /* when the answer's first byte was seen (0: not yet) */
    bool deferred;              /* a throttle left once for the program's poll (judge.c) */
    size_t resp_skip;           /* PASS: bytes of its head read at the judging, still the
                                   program's to read */
    bool shut_wr, shut_rd;      /* the program shut the connection down for writing after
                                   its request (reproduced on a new one), for reading */
} bo_hc_xchg;

/* The call of the request in flight (call.c). */
typedef struct bo_hc_call {
    bool begun;                 /* begun, not ended */
    bool admitted;              /* an attempt is counted in flight */
    bo_block *dest;             /* referenced while begun */
    bo_call run;                /* the engine's */
    uint64_t id, lkey;          /* trace call number; the logical request (0: not made) */
    unsigned inflight;
    bo_block *dest_cache;       /* the destination of the connection's last request (a
                                   reference), for the next one to the same Host */
    uint64_t dest_hash;
} bo_hc_call;

/* The shim's Idempotency-Key in the request (key.c). */
typedef struct bo_hc_key {
    bool keyed;                 /* the request carries it, from its first attempt on */
    bool added;                 /* ... and its line is in the kept request */
    uint64_t body;              /* the body's fingerprint, when known at its first write */
    char value[BO_IDEM_VALUE_SIZE];
    char *inj;                  /* the request's first write with the key's line in it,
                                   written in its place: length, cap, bytes written, where
                                   the line starts and its length */
    size_t inj_len, inj_cap, inj_off, inj_at, inj_line;
} bo_hc_key;

/* A retry under way (RETRY: retry.c, its new connection redial.c). */
typedef struct bo_hc_retry {
    bo_hc_step step;            /* the second machine: changed in one place (retry.c) */
    bool shake_first;           /* SHAKE: the handshake starts at the next step */
    bool same_conn;             /* sent again on the same connection, not a new one */
    bool answered;              /* the retried attempt had an answer (held), not a close */
    bool loop;                  /* the program waits in an event loop (its fd kept quiet) */
    int dial_fd, park_fd;       /* the new connection while it connects, our end of the
                                   quiet stand-in on the fd (-1: none) */
    int orig_fd;                /* the program's socket it stands for, kept aside (-1) */
    size_t resend_off;          /* bytes of kept sent again */
    int64_t give_up_ns;         /* the program's wait ends then: not sent by then, abandoned */
    bool async;                 /* it waits in the program's poll or loop (counted here) */
    int64_t wait_from_ns;       /* when the retry began to wait */
    size_t total;               /* the retried answer's length (held from its first byte) */
    int64_t resent_ns;          /* when the request went out again (0: not yet) */
    char *fb;                   /* the last real answer of the call, once its request went
                                   out again: the program's if the retry ends with none */
    size_t fb_len, fb_cap;      /* (0: none) */
} bo_hc_retry;

/* Answer bytes taken out ahead of the program (a TLS head spread over records, a
 * GnuTLS answer, a retried answer kept), served to it first (off..len; bo_hc_held_*). */
typedef struct bo_hc_held {
    char *buf;
    size_t len, off, cap;
    bool deliver;               /* the program's to be given, its socket made readable */
} bo_hc_held;

/* A request's write held back for the pace (bo_hc_pace_*, exchange_int.h). */
typedef struct bo_hc_pace {
    int64_t until;              /* its poll shows no POLLOUT before then (0: none) */
    int64_t quota;              /* the quota's hold (0: none): past the poll's end, no wait */
    bool go;                    /* ... its poll's time ran out first: it goes at once */
    bool sent;                  /* a request went on the connection before (kept alive) */
    bool loop;                  /* an event loop's: its EPOLLOUT taken out until then */
    const void *owner;          /* ... the thread whose loop it is (its bo_core_busy's address) */
    bool masked;                /* ... out of its registration in epfd, whose events were */
    int epfd;
    uint32_t events;
} bo_hc_pace;

typedef struct bo_hconn {
    int fd;                     /* the table's (fdtab.c) */
    int busy, stale;            /* a hook is inside (bo_hc_lock); closed, or met by another
                                   thread, while busy: atomic */
    bo_hc_state st;             /* changed in one place (record.c's bo_hx_set_state) */
    bool active;                /* derived by the setters of st, held and pace: counted
                                   in bo_hc_active (the wait hooks look) */
    /* the connection (adopted: record.c; the TLS object: its transport's claim) */
    bool tls;                   /* a TLS object is bound to the fd (ssl.c, gnutls.c) */
    bool https;                 /* its destination key's scheme */
    const struct bo_hx_io *io;  /* the transport (sock.c, ssl.c, gnutls.c) */
    const void *io_ctx;         /* its copy of the library (TLS), passed back */
    uint64_t ino;               /* the socket's identity (inode), as adopted or replaced:
                                   another one means the program closed it unseen */
    struct sockaddr_storage peer; /* read at the adoption, again before a new connection */
    socklen_t peer_len;
    void *ssl;                  /* TLS: the program's object, its copy's slot */
    int ssl_slot;
    bool peer_id_known;         /* peer_id holds the certificate the program accepted */
    int tls_err;                /* SSL_get_error's answer for the hooks' own failure of its
                                   last call (0: the object's own) */
    unsigned char peer_id[BO_HC_PEER_ID];
    /* by job, each written through its own setters */
    bo_hc_xchg x;
    bo_hc_call call;
    bo_hc_key key;
    bo_hc_retry rt;
    bo_hc_held held;
    bo_hc_pace pace;
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

#endif
