/*
 * held.h: the answer bytes a record holds for the program (bo_hc_held,
 * conn.h), within the http room: its setters (record.c).  A transport's
 * look and hold put bytes at bo_hc_held_end (room first: 0, or -1 no
 * memory) and say bo_hc_held_grew; the read path takes them; _peek copies
 * them (up to BO_HC_PEEK_MAX) to peek (-1 EAGAIN: none), _has: n bytes
 * held?; _drop forgets them; _deliver makes them the program's (until read).
 */
#ifndef BO_HTTP_HELD_H
#define BO_HTTP_HELD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "http/conn.h"

static inline size_t bo_hc_held_left(const bo_hconn *c) { return c->held.len - c->held.off; }
static inline char *bo_hc_held_end(bo_hconn *c) { return c->held.buf + c->held.len; }
static inline void bo_hc_held_grew(bo_hconn *c, size_t n) { c->held.len += n; }
static inline size_t bo_hc_held_pending(const bo_hconn *c) /* outside the lock; none in RETRY */
{
    size_t n = __atomic_load_n(&c->held.len, __ATOMIC_RELAXED);
    return c->st == BO_HC_RETRY ? 0 : n - __atomic_load_n(&c->held.off, __ATOMIC_RELAXED);
}
int bo_hc_held_room(bo_hconn *c, size_t n);
size_t bo_hc_held_take(bo_hconn *c, void *buf, size_t n, bool peek);
ssize_t bo_hc_held_peek(bo_hconn *c);
int bo_hc_held_has(bo_hconn *c, size_t n);
void bo_hc_held_drop(bo_hconn *c);
void bo_hc_held_deliver(bo_hconn *c);
/* The call's last real answer kept aside once its request went out again
 * (rt.fb: the retried answer, held whole, total bytes; an earlier one kept
 * when this retry met none), and put back in the held bytes for the
 * program (none held then). */
void bo_hc_fallback_keep(bo_hconn *c, bool answered, size_t total);
static inline void bo_hc_fallback_drop(bo_hconn *c) { c->rt.fb_len = 0; }
void bo_hc_fallback_restore(bo_hconn *c);


#endif
