/*
 * conn.h: one connection's record, within the http room: what the hooks
 * know of a client socket that speaks HTTP/1.x (its request in flight, the
 * response being judged or passed, the call of the request), and the
 * table that finds it by fd (fdtab.c).  The record of an fd lives as long
 * as the process (it is reset, never freed, when the fd is closed), so a
 * hook never meets a freed one.
 */
#ifndef BO_HTTP_CONN_H
#define BO_HTTP_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "bo_engine.h"
#include "bo_http.h"
#include "bo_idem.h"
#include "dest/dest.h"

/*
 * Where a connection stands:
 *   NONE  nothing known: the next write that starts with a request line
 *         makes it IDLE (the socket is checked then: a connected TCP socket
 *         the process did not accept);
 *   IDLE  between requests: the next write must start a request;
 *   REQ   a request is being written (its call admitted);
 *   SENT  the whole request went out: the next read judges the response;
 *   PASS  the response goes to the program, read byte for byte to its end
 *         (then IDLE again);
 *   OFF   anything else (not HTTP/1.x, a tunnel, pipelining, a state the
 *         hooks lost): every call passes through until the fd is closed.
 */
typedef enum bo_hc_state {
    BO_HC_NONE = 0,
    BO_HC_IDLE,
    BO_HC_OFF,
    BO_HC_REQ,  /* from here on a read is the hooks' business (bo_hc_reads) */
    BO_HC_SENT,
    BO_HC_PASS
} bo_hc_state;

/* The response bytes judged at once: a head and the small body of a throttle. */
#define BO_HC_PEEK_MAX (BO_HTTP_HEAD_MAX + 16384)

typedef struct bo_hconn {
    int fd;
    int busy;                   /* a hook is inside (bo_hc_lock), atomic */
    int stale;                  /* closed, or met by another thread, while busy: atomic */
    bo_hc_state st;
    bool tls;                   /* an SSL object is bound to the fd (ssl.c) */
    bool https;                 /* its destination key's scheme */
    bo_http_msg req;            /* the request in flight, as written */
    bo_http_msg resp;           /* PASS: the response, as the program reads it */
    char *kept;                 /* the request's bytes while it may be sent again */
    size_t kept_len, kept_cap;
    bool kept_ok;               /* kept holds the whole request so far */
    char *peek;                 /* BO_HC_PEEK_MAX bytes: the response being judged
                                   (made with the first request) */
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
    bool idem_added;            /* the shim's Idempotency-Key is in kept */
    char idem[BO_IDEM_VALUE_SIZE];
    /* the peer (read at the adoption, and again before a new connection) */
    struct sockaddr_storage peer;
    socklen_t peer_len;
    /* TLS (ssl.c): the program's SSL object and its copy's slot */
    void *ssl;
    int ssl_slot;
    char *held;                 /* decrypted answer bytes read ahead of the program,
                                   served to it first (held_off..held_len) */
    size_t held_len, held_off, held_cap;
} bo_hconn;

/* The fd table: one slot per fd number, grown as needed. */
typedef struct bo_fdtab {
    unsigned cap;
    unsigned char *mark;        /* cap bytes: BO_HC_MARK_*, cleared when the fd is closed */
    bo_hconn *slot[];
} bo_fdtab;

/* What the table knows of an fd without a record. */
enum { BO_HC_MARK_NONE = 0, BO_HC_MARK_ACCEPTED, BO_HC_MARK_NOT_CLIENT };

extern bo_fdtab *bo_hc_tab;

/* The record of fd, or NULL: one load of the table and one of its slot. */
static inline bo_hconn *bo_hc_get(int fd)
{
    const bo_fdtab *t = __atomic_load_n(&bo_hc_tab, __ATOMIC_ACQUIRE);
    if (__builtin_expect((unsigned)fd >= t->cap, 0))
        return NULL;
    return __atomic_load_n(&t->slot[fd], __ATOMIC_ACQUIRE);
}

/* Is fd marked (accepted, or found to be no client socket of the room's)?
 * A write that looks like a request on it passes without a system call. */
static inline bool bo_hc_marked(int fd)
{
    const bo_fdtab *t = __atomic_load_n(&bo_hc_tab, __ATOMIC_ACQUIRE);
    return (unsigned)fd < t->cap && __atomic_load_n(&t->mark[fd], __ATOMIC_RELAXED) != 0;
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

/* The record of fd, made on first need (NULL: no memory, or fd < 0). */
bo_hconn *bo_hc_make(int fd);
/* Mark fd (BO_HC_MARK_*): accept() returned it, or it is no client socket;
 * a record it had starts anew.  Read back by bo_hc_mark_of. */
void bo_hc_mark(int fd, int mark);
int bo_hc_mark_of(int fd);
/* The fd was closed (or another file dup2'ed onto it): its record starts anew. */
void bo_hc_closed(int fd);

/*
 * One hook at a time in a record: a try, never a wait, so that a thread
 * that finds another inside passes its call through (and the record goes
 * OFF: two threads on one HTTP/1.x connection are not a request and its
 * answer).  bo_hc_unlock resets a record closed meanwhile.
 */
bool bo_hc_lock(bo_hconn *c);
void bo_hc_unlock(bo_hconn *c);

/* The record gives up what it has in flight and passes everything through. */
void bo_hc_off(bo_hconn *c);

#endif
