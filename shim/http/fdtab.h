/*
 * fdtab.h: the table that finds a connection's record by fd (fdtab.c),
 * within the http room: one load of the table and one of its slot for a
 * hook's lookup, marks for fds without a record, a record's lock (a try,
 * never a wait), and the socket's identity.
 */
#ifndef BO_HTTP_FDTAB_H
#define BO_HTTP_FDTAB_H

#include <stdbool.h>
#include <stdint.h>

#include "http/conn.h"

/* The fd table: one slot per fd number, grown as needed. */
typedef struct bo_fdtab {
    unsigned cap;
    unsigned char *mark;        /* cap bytes: BO_HC_MARK_*, cleared when the fd is closed */
    bo_hconn *slot[];
} bo_fdtab;

/* What the table knows of an fd without a record. */
/* TUNNEL: a CONNECT went out first (a proxy's tunnel: never redialled) */
enum { BO_HC_MARK_NONE = 0, BO_HC_MARK_ACCEPTED, BO_HC_MARK_NOT_CLIENT, BO_HC_MARK_TUNNEL };

extern bo_fdtab *bo_hc_tab;

/* Records whose request is in flight or being retried, or that hold an
 * answer to deliver: while there are none, the wait hooks (wait.c) pass
 * straight through. */
extern int bo_hc_active;

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

/* The record of fd, made on first need (NULL: no memory, or fd < 0). */
bo_hconn *bo_hc_make(int fd);
/* Mark fd (BO_HC_MARK_*), read back by bo_hc_mark_of; 0 clears it. */
void bo_hc_set_mark(int fd, int mark);
int bo_hc_mark_of(int fd);

/*
 * One hook at a time in a record: a try, never a wait.  bo_hc_lock marks
 * the record shared when another thread is inside (two threads on one
 * HTTP/1.x connection are not a request and its answer: the holder gives
 * the connection up on its way out, exchange.h's bo_hx_leave); a wait
 * hook stepping every retry takes bo_hc_trylock, which marks nothing, and
 * passes by a record it finds busy.  bo_hc_mark_closed: the fd was closed
 * while a hook was inside, which resets the record on its way out.
 */
bool bo_hc_lock(bo_hconn *c);
bool bo_hc_trylock(bo_hconn *c);
void bo_hc_mark_shared(bo_hconn *c);
void bo_hc_mark_closed(bo_hconn *c);

/* Fork: the table's lock made anew in the child (exchange.c does the rest). */
void bo_hc_child_fork_table(void);

/* The socket's identity (its inode); 0 when fd is no open file. */
uint64_t bo_hc_identity(int fd);

/*
 * Every record, one at a time: fn(c, ud) for each record whose fd is below
 * the table's size (a record's lock is fn's to take).  For the sweeps of
 * the wait hooks, which run while bo_hc_active says something is in flight.
 */
void bo_hc_each(void (*fn)(bo_hconn *c, void *ud), void *ud);

#endif
