/*
 * lend.c: the buffers of an exchange in flight, within the http room
 * (record.h): the answer's reading and peek, the kept request, the held answer and the
 * kept fallback are a record's only while an exchange is under way.  A
 * record between exchanges (IDLE, OFF, NONE: bo_hx_set_state) gives them
 * back to a small pool that the next exchange of any record takes from, so
 * that two thousand kept-alive connections cost their records alone, and a
 * program's steady calls allocate nothing (the same buffers go round).
 *
 * A pool is taken with a try, never waited for: a thread that finds it
 * busy (or a fork child that inherited it busy) allocates or frees instead.
 */
#include <stdlib.h>

#include "http/held.h"
#include "http/record.h"

/* Buffers kept for the next exchanges: about what a program has in flight
 * at once; the rest is freed. */
#define LEND_MAX 16

typedef struct lend_pool {
    int busy;
    int n;
    char *buf[LEND_MAX];
    size_t cap[LEND_MAX];
} lend_pool;

static lend_pool g_peeks; /* an answer's reading and its peek (LENT_ANSWER) each */

/* One block: the answer's reading (x.resp), then its peek. */
#define LENT_ANSWER (sizeof(bo_http_msg) + BO_HC_PEEK_MAX)
static lend_pool g_grown; /* kept requests, held answers: of any capacity */

static bool pool_try(lend_pool *p)
{
    return !__atomic_exchange_n(&p->busy, 1, __ATOMIC_ACQUIRE);
}

static void pool_done(lend_pool *p)
{
    __atomic_store_n(&p->busy, 0, __ATOMIC_RELEASE);
}

/* A buffer from the pool (its capacity in *cap), or NULL: none there. */
static char *pool_take(lend_pool *p, size_t *cap)
{
    char *b = NULL;
    if (!pool_try(p))
        return NULL;
    if (p->n > 0) {
        p->n--;
        b = p->buf[p->n];
        *cap = p->cap[p->n];
    }
    pool_done(p);
    return b;
}

static void pool_give(lend_pool *p, char *b, size_t cap)
{
    if (b == NULL)
        return;
    if (pool_try(p)) {
        if (p->n < LEND_MAX) {
            p->buf[p->n] = b;
            p->cap[p->n++] = cap;
            b = NULL;
        }
        pool_done(p);
    }
    free(b);
}

int bo_hc_lend_answer(bo_hconn *c)
{
    size_t cap;
    char *b = pool_take(&g_peeks, &cap);
    if (b == NULL && (b = malloc(LENT_ANSWER)) == NULL)
        return -1;
    c->x.resp = (bo_http_msg *)(void *)b;
    c->x.peek = b + sizeof(bo_http_msg);
    return 0;
}

char *bo_hc_lend_grown(size_t *cap)
{
    return pool_take(&g_grown, cap);
}

void bo_hc_lend_back(bo_hconn *c)
{
    pool_give(&g_peeks, (char *)c->x.resp, LENT_ANSWER);
    c->x.resp = NULL;
    c->x.peek = NULL;
    pool_give(&g_grown, c->x.kept, c->x.kept_cap);
    c->x.kept = NULL;
    c->x.kept_len = c->x.kept_cap = 0;
    if (bo_hc_held_left(c) == 0) {
        bo_hc_held_drop(c); /* (the held group's own setter: its length, its delivery) */
        pool_give(&g_grown, c->held.buf, c->held.cap);
        c->held.buf = NULL;
        c->held.cap = 0;
    }
    if (c->rt.fb_len == 0) {
        pool_give(&g_grown, c->rt.fb, c->rt.fb_cap);
        c->rt.fb = NULL;
        c->rt.fb_cap = 0;
    }
}
