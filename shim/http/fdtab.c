/*
 * fdtab.c: the records of the connections the http room follows, found by
 * fd (conn.h).  One array of slots indexed by fd, grown by doubling under
 * a lock and published whole: a reader makes one load of the table and one
 * of its slot, with no lock (socket_wrapper keeps its sockets the same
 * way).  A table that was replaced is never freed (a reader may still be
 * in it; the tables left behind sum to less than the one in use), and a
 * record is never freed either: closing its fd resets it for the next
 * connection that gets that number.
 */
#include "http/conn.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "call/call.h"
#include "dest/dest.h"
#include "http/exchange.h"
#include "http/http.h"

#define FDTAB_FIRST 1024

static bo_fdtab g_empty = {.cap = 0, .mark = NULL};
bo_fdtab *bo_hc_tab = &g_empty;

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
        __atomic_store_n(&t->slot[fd], c, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&g_tab_lock);
    return c;
}

void bo_hc_mark(int fd, int mark)
{
    bo_hconn *c = bo_hc_get(fd);

    if (c != NULL && c->st != BO_HC_NONE)
        bo_hc_closed(fd); /* a stale record of another socket of that number */
    pthread_mutex_lock(&g_tab_lock);
    bo_fdtab *t = fd >= 0 ? grow(fd) : NULL;
    if (t != NULL)
        __atomic_store_n(&t->mark[fd], (unsigned char)mark, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&g_tab_lock);
}

int bo_hc_mark_of(int fd)
{
    const bo_fdtab *t = __atomic_load_n(&bo_hc_tab, __ATOMIC_ACQUIRE);
    return (unsigned)fd < t->cap ? __atomic_load_n(&t->mark[fd], __ATOMIC_RELAXED) : 0;
}

bool bo_hc_lock(bo_hconn *c)
{
    if (__atomic_exchange_n(&c->busy, 1, __ATOMIC_ACQUIRE) == 0)
        return true;
    __atomic_store_n(&c->stale, 1, __ATOMIC_RELAXED); /* two threads on one connection */
    return false;
}

/* Under the record's lock: back to NONE, nothing in flight, nothing held. */
static void reset(bo_hconn *c)
{
    bo_hx_drop(c);
    bo_block_put(c->dest_cache);
    c->dest_cache = NULL;
    c->st = BO_HC_NONE;
    c->tls = c->https = false;
    c->kept_len = 0;
    c->ssl = NULL;
    c->ssl_slot = -1;
    c->held_len = c->held_off = 0;
}

void bo_hc_unlock(bo_hconn *c)
{
    int stale = __atomic_exchange_n(&c->stale, 0, __ATOMIC_RELAXED);
    if (stale == 2)
        reset(c); /* the fd was closed meanwhile */
    else if (stale == 1)
        bo_hc_off(c); /* another thread used the connection meanwhile */
    __atomic_store_n(&c->busy, 0, __ATOMIC_RELEASE);
}

int bo_hc_held_room(bo_hconn *c, size_t n)
{
    if (c->held_len + n <= c->held_cap)
        return 0;
    size_t cap = c->held_cap ? c->held_cap : 4096;
    while (cap < c->held_len + n)
        cap *= 2;
    char *h = realloc(c->held, cap);
    if (h == NULL)
        return -1;
    c->held = h;
    c->held_cap = cap;
    return 0;
}

/* (Bytes held for the program stay: it still gets them, first.) */
void bo_hc_off(bo_hconn *c)
{
    bo_hx_drop(c);
    c->st = BO_HC_OFF;
}

void bo_hc_closed(int fd)
{
    const bo_fdtab *t = __atomic_load_n(&bo_hc_tab, __ATOMIC_ACQUIRE);
    bo_hconn *c;

    if ((unsigned)fd >= t->cap)
        return;
    if (t->mark[fd] != BO_HC_MARK_NONE)
        __atomic_store_n(&t->mark[fd], BO_HC_MARK_NONE, __ATOMIC_RELAXED);
    if ((c = __atomic_load_n(&t->slot[fd], __ATOMIC_ACQUIRE)) == NULL || c->st == BO_HC_NONE)
        return;
    if (!bo_hc_lock(c)) {
        /* a hook of another thread is inside: it resets the record on its way out */
        __atomic_store_n(&c->stale, 2, __ATOMIC_RELAXED);
        return;
    }
    __atomic_store_n(&c->stale, 0, __ATOMIC_RELAXED);
    reset(c);
    __atomic_store_n(&c->busy, 0, __ATOMIC_RELEASE);
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

/*
 * The child has the parent's fds, so the records stay; but only the
 * forking thread came along: a record some other thread was inside, and
 * any call in flight (the parent's attempt, counted in the parent's
 * window), is left alone for good (OFF) without completing anything.
 */
void bo_http_child_fork(void)
{
    pthread_mutex_init(&g_tab_lock, NULL);
    bo_fdtab *t = bo_hc_tab;
    for (unsigned fd = 0; fd < t->cap; fd++) {
        bo_hconn *c = t->slot[fd];
        if (c == NULL)
            continue;
        bool busy = c->busy != 0;
        c->busy = c->stale = 0;
        if (busy || c->in_call || c->st == BO_HC_REQ || c->st == BO_HC_SENT) {
            c->in_call = c->admitted = false; /* the parent's: not ours to complete */
            c->dest = c->dest_cache = NULL;
            c->st = BO_HC_OFF;
        }
    }
}
