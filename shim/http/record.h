/*
 * record.h: a connection's record's state and life (record.c), within the
 * http room, for the exchange's files: the one state setter (and `active`,
 * which follows it and the held and pace setters), the pace's setters, a
 * record given up, reset, or found on another socket.  (The held answer's
 * setters, which the transports use too, are conn.h's.)
 */
#ifndef BO_HTTP_RECORD_H
#define BO_HTTP_RECORD_H

#include <stdbool.h>
#include <stdint.h>

#include "http/conn.h"
#include "http/held.h"

/* The one place a record's state changes (and bo_hc_active follows). */
void bo_hx_set_state(bo_hconn *c, bo_hc_state st);
/* What an event loop's wait drives: retries under way in it (c->rt.loop),
 * counted by bo_hx_set_state, and writes it holds back (c->pace.loop). */
extern int bo_hx_loop_retries;
/* A request's write held back for the pace until `until` (loop: in an
 * event loop, its EPOLLOUT taken out meanwhile); released (go: its poll's
 * time ran out first: it goes at once). */
void bo_hc_pace_hold(bo_hconn *c, int64_t until, int64_t quota, bool loop);
void bo_hc_pace_release(bo_hconn *c, bool go);
/* The buffers of an exchange in flight (lend.c): the answer's reading and
 * peek (x.resp, x.peek: 0, or -1 no memory), a grown buffer of *cap bytes from the pool
 * (NULL: none there: realloc one), and a record between exchanges giving
 * its own back (bo_hx_set_state: IDLE, OFF, NONE; held bytes and a kept
 * fallback stay). */
int bo_hc_lend_answer(bo_hconn *c);
char *bo_hc_lend_grown(size_t *cap);
void bo_hc_lend_back(bo_hconn *c);
/* A request went out on the connection: the next one is a kept-alive
 * connection's (an event loop's is paced only then). */
void bo_hc_pace_sent(bo_hconn *c);
/* An event loop's held write: EPOLLOUT taken out of the program's
 * registration of the fd (again at each wait), put back at its time. */
void bo_hc_pace_mask(bo_hconn *c);
void bo_hc_pace_unmask(bo_hconn *c);
/* Back to NONE, nothing in flight, nothing held (the record's lock held). */
void bo_hx_reset(bo_hconn *c);
/* The record as the hook finds it: a record of another socket on the same
 * fd number (the program closed the old one without a hook seeing it)
 * starts anew (NONE: false). */
bool bo_hx_same_socket(bo_hconn *c);

#endif
