/*
 * fdtab.c: the records of the connections the http room follows, found by
 * fd (conn.h).  One array of slots indexed by fd, grown by doubling under
 * a lock and published whole: a reader makes one load of the table and one
 * of its slot, with no lock (socket_wrapper keeps its sockets the same
 * way).  A table that was replaced is never freed (a reader may still be
 * in it; the tables left behind sum to less than the one in use), and a
 * record is never freed either: closing its fd resets it for the next
 * connection that gets that number.  This file keeps the records; what a
 * record's state means, and every change of it, is the exchange's
 * (exchange.c), which depends on this file and not the other way round.
 */
#include "http/conn.h"
#include "http/fdtab.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "http/http.h"

#define FDTAB_FIRST 1024

static bo_fdtab g_empty = {.cap = 0, .mark = NULL};
bo_fdtab *bo_hc_tab = &g_empty;
int bo_hc_active;

/* Guards growing the table and making records (a leaf lock). */
static pthread_mutex_t g_tab_lock = PTHREAD_MUTEX_INITIALIZER;

/* Under the lock: a table with room for fd (NULL: no memory). */
static bo_fdtab *grow(int fd)
{
    bo_fdtab *t = bo_hc_tab;
    unsigned cap = t->cap ? t->cap : FDTAB_FIRST;

    if ((unsigned)fd < t->cap)
        return t;
    while (cap <= (unsigned)fd && cap < (1u << 30))
        cap *= 2;
    if (cap <= (unsigned)fd)
        return NULL;
    bo_fdtab *n = calloc(1, sizeof *n + (size_t)cap * sizeof n->slot[0]);
    unsigned char *mark = calloc(cap, 1);
    if (n == NULL || mark == NULL) {
        free(n);
        free(mark);
        return NULL;
    }
    n->cap = cap;
    n->mark = mark;
    if (t->cap > 0) {
        memcpy(n->slot, t->slot, (size_t)t->cap * sizeof t->slot[0]);
        memcpy(mark, t->mark, t->cap);
    }
    __atomic_store_n(&bo_hc_tab, n, __ATOMIC_RELEASE);
    return n;
}

bo_hconn *bo_hc_make(int fd)
{
    bo_hconn *c;

    if (fd < 0)
        return NULL;
    if ((c = bo_hc_get(fd)) != NULL)
        return c;
    pthread_mutex_lock(&g_tab_lock);
    bo_fdtab *t = grow(fd);
    c = t != NULL ? t->slot[fd] : NULL;
    if (t != NULL && c == NULL && (c = calloc(1, sizeof *c)) != NULL) {
        c->fd = fd;
        c->ssl_slot = -1;
        c->rt.dial_fd = c->rt.park_fd = c->rt.orig_fd = -1;
        __atomic_store_n(&t->slot[fd], c, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&g_tab_lock);
    return c;
}

void bo_hc_set_mark(int fd, int mark)
{
    const bo_fdtab *cur = __atomic_load_n(&bo_hc_tab, __ATOMIC_ACQUIRE);

    if (fd < 0)
        return;
    if ((unsigned)fd < cur->cap) { /* no lock needed to change a byte of a published table */
        if (__atomic_load_n(&cur->mark[fd], __ATOMIC_RELAXED) != mark)
            __atomic_store_n(&cur->mark[fd], (unsigned char)mark, __ATOMIC_RELAXED);
        return;
    }
    if (mark == BO_HC_MARK_NONE)
        return;
    pthread_mutex_lock(&g_tab_lock);
    bo_fdtab *t = grow(fd);
    if (t != NULL)
        __atomic_store_n(&t->mark[fd], (unsigned char)mark, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&g_tab_lock);
}

int bo_hc_mark_of(int fd)
{
    const bo_fdtab *t = __atomic_load_n(&bo_hc_tab, __ATOMIC_ACQUIRE);
    return (unsigned)fd < t->cap ? __atomic_load_n(&t->mark[fd], __ATOMIC_RELAXED) : 0;
}

void bo_hc_mark_shared(bo_hconn *c)
{
    int none = 0; /* two threads on one connection (a close, 2, stays) */
    __atomic_compare_exchange_n(&c->stale, &none, 1, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

bool bo_hc_lock(bo_hconn *c)
{
    if (__atomic_exchange_n(&c->busy, 1, __ATOMIC_ACQUIRE) == 0)
        return true;
    bo_hc_mark_shared(c);
    return false;
}

bool bo_hc_trylock(bo_hconn *c)
{
    return __atomic_exchange_n(&c->busy, 1, __ATOMIC_ACQUIRE) == 0;
}

void bo_hc_mark_closed(bo_hconn *c)
{
    __atomic_store_n(&c->stale, 2, __ATOMIC_RELAXED);
}

uint64_t bo_hc_identity(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 ? (uint64_t)st.st_ino : 0;
}

void bo_hc_each(void (*fn)(bo_hconn *c, void *ud), void *ud)
{
    const bo_fdtab *t = __atomic_load_n(&bo_hc_tab, __ATOMIC_ACQUIRE);
    for (unsigned fd = 0; fd < t->cap; fd++) {
        bo_hconn *c = __atomic_load_n(&t->slot[fd], __ATOMIC_ACQUIRE);
        if (c != NULL)
            fn(c, ud);
    }
}

/* ---- fork ------------------------------------------------------------------ */

void bo_http_prepare_fork(void)
{
    pthread_mutex_lock(&g_tab_lock);
}

void bo_http_parent_fork(void)
{
    pthread_mutex_unlock(&g_tab_lock);
}

void bo_hc_child_fork_table(void)
{
    pthread_mutex_init(&g_tab_lock, NULL);
}
