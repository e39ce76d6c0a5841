/*
 * record.c: a connection's record, within the http room (conn.h,
 * record.h): the one place its state changes (bo_hx_set_state) and `active`,
 * which follows the state, the held answer and the pace through their
 * setters alone; the record's life (adopted, entered and left, given up,
 * reset, closed, in a fork child); the setters of the answer held for the
 * program and of a write held back for the pace.  Below the request
 * (request.c) and the paths (exchange.c); the table that finds a record by
 * fd is fdtab.c's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "core/core.h"
#include "http/exchange.h"
#include "http/exchange_int.h"
#include "http/record.h"
#include "http/http.h"
#include "http/redial.h"
#include "http/sockwait.h"

/* ---- the one state setter ------------------------------------------------- */

/* Is the record one the wait hooks must look at (bo_hc_active)? */
static bool wants_waits(const bo_hconn *c)
{
    return c->st == BO_HC_SENT || c->st == BO_HC_RETRY ||
           (c->held.deliver && bo_hc_held_left(c) > 0) || c->pace.until != 0;
}

/* `active` is derived: the setters of what it derives from (the state, the
 * held answer, the pace) call this, nothing else does. */
static void sync_active(bo_hconn *c)
{
    bool a = wants_waits(c);
    if (a != c->active) {
        __atomic_store_n(&c->active, a, __ATOMIC_RELAXED);
        __atomic_add_fetch(&bo_hc_active, a ? 1 : -1, __ATOMIC_RELAXED);
    }
}

/* Retries under way in an event loop (their steps are the loop wait's). */
int bo_hx_loop_retries;

void bo_hx_set_state(bo_hconn *c, bo_hc_state st)
{
    bool was = c->st == BO_HC_RETRY && c->rt.loop, is = st == BO_HC_RETRY && c->rt.loop;
    if (was != is)
        __atomic_add_fetch(&bo_hx_loop_retries, is ? 1 : -1, __ATOMIC_RELAXED);
    c->st = st;
    if (st == BO_HC_IDLE || st == BO_HC_OFF || st == BO_HC_NONE)
        bo_hc_lend_back(c); /* between exchanges: the buffers go round */
    sync_active(c);
}

/* ---- the records' life ------------------------------------------------------ */

/* What the connection's last exchange left (bytes held for the program,
 * its shutdowns, a deferred throttle, a write held back for the pace):
 * nothing of it carries over to what the fd is now. */
static void forget_exchange(bo_hconn *c);

/* Under the record's lock: back to NONE, nothing in flight, nothing held. */
void bo_hx_reset(bo_hconn *c)
{
    bo_hx_call_forget(c);
    bo_hr_release(c);
    c->tls = c->https = false;
    c->ssl = NULL;
    c->ssl_slot = -1;
    c->io = NULL;
    c->io_ctx = NULL;
    c->peer_id_known = false;
    forget_exchange(c);
    bo_hx_key_none(c);
    c->ino = 0;
    bo_hx_set_state(c, BO_HC_NONE);
}

void bo_hx_off(bo_hconn *c)
{
    bo_hx_drop_call(c, false);
    bo_hr_release(c);
    bo_hx_set_state(c, BO_HC_OFF);
}

void bo_hx_adopt(bo_hconn *c, const bo_hx_io *io, const void *ctx, bool tls, bool h2)
{
    c->io = io;
    c->io_ctx = ctx;
    c->tls = c->https = tls;
    forget_exchange(c);
    c->ino = bo_hc_identity(c->fd);
    bo_hx_set_state(c, h2 ? BO_HC_OFF : BO_HC_IDLE);
}

bool bo_hx_same_socket(bo_hconn *c)
{
    if (c->st == BO_HC_NONE || bo_hc_identity(c->fd) == c->ino)
        return true;
    bo_hx_reset(c);
    return false;
}

bool bo_hx_enter(bo_hconn *c)
{
    return bo_hc_lock(c);
}

void bo_hx_leave(bo_hconn *c)
{
    int stale = __atomic_exchange_n(&c->stale, 0, __ATOMIC_RELAXED);
    if (stale == 2)
        bo_hx_reset(c); /* the fd was closed meanwhile */
    else if (stale == 1 && c->st != BO_HC_NONE)
        bo_hx_off(c); /* another thread used the connection meanwhile */
    __atomic_store_n(&c->busy, 0, __ATOMIC_RELEASE);
}

void bo_hx_closed(int fd)
{
    bo_hconn *c;

    if (bo_hc_mark_of(fd) != BO_HC_MARK_NONE)
        bo_hc_set_mark(fd, BO_HC_MARK_NONE);
    if ((c = bo_hc_get(fd)) == NULL || c->st == BO_HC_NONE)
        return;
    if (!bo_hc_trylock(c)) {
        /* a hook of another thread is inside: it resets the record on its way out */
        bo_hc_mark_closed(c);
        return;
    }
    __atomic_store_n(&c->stale, 0, __ATOMIC_RELAXED);
    bo_hx_reset(c);
    __atomic_store_n(&c->busy, 0, __ATOMIC_RELEASE);
}

/* ---- the bytes held for the program ------------------------------------------- */

int bo_hc_held_room(bo_hconn *c, size_t n)
{
    if (c->held.len + n <= c->held.cap)
        return 0;
    if (c->held.buf == NULL && (c->held.buf = bo_hc_lend_grown(&c->held.cap)) != NULL &&
        n <= c->held.cap)
        return 0;
    size_t cap = c->held.cap ? c->held.cap : 4096;
    while (cap < c->held.len + n)
        cap *= 2;
    char *h = realloc(c->held.buf, cap);
    if (h == NULL)
        return -1;
    c->held.buf = h;
    c->held.cap = cap;
    return 0;
}

ssize_t bo_hc_held_peek(bo_hconn *c)
{
    size_t h = bo_hc_held_left(c);
    if (h == 0) {
        errno = EAGAIN;
        return -1;
    }
    if (h > BO_HC_PEEK_MAX)
        h = BO_HC_PEEK_MAX;
    if (c->x.peek == NULL) {
        errno = ENOMEM; /* (no exchange in flight: nothing is judged) */
        return -1;
    }
    memcpy(c->x.peek, c->held.buf + c->held.off, h);
    return (ssize_t)h;
}

int bo_hc_held_has(bo_hconn *c, size_t n)
{
    return bo_hc_held_left(c) >= n ? 0 : -1;
}

size_t bo_hc_held_take(bo_hconn *c, void *buf, size_t n, bool peek)
{
    size_t h = bo_hc_held_left(c);
    if (h == 0 || n == 0)
        return 0;
    if (n > h)
        n = h;
    memcpy(buf, c->held.buf + c->held.off, n);
    if (!peek && (c->held.off += n) == c->held.len) {
        c->held.len = c->held.off = 0;
        c->held.deliver = false; /* the answer held for the program went to it */
        sync_active(c);
    }
    return n;
}

void bo_hc_held_drop(bo_hconn *c)
{
    if (c->held.len == 0 && !c->held.deliver)
        return; /* (the common case: nothing held, nothing to follow) */
    c->held.len = c->held.off = 0;
    c->held.deliver = false;
    sync_active(c);
}

void bo_hc_held_deliver(bo_hconn *c)
{
    c->held.deliver = true;
    sync_active(c);
}

/*
 * The call's last real answer (the retried one, held whole from its first
 * byte, total bytes) kept aside once its request goes out again: the
 * buffers are swapped, nothing copied.  An earlier one is kept when this
 * retry met no answer of its own.
 */
void bo_hc_fallback_keep(bo_hconn *c, bool answered, size_t total)
{
    if (!answered || c->held.off != 0 || c->held.len < total || total == 0) {
        bo_hc_held_drop(c);
        return;
    }
    char *b = c->rt.fb;
    size_t cap = c->rt.fb_cap;
    c->rt.fb = c->held.buf;
    c->rt.fb_cap = c->held.cap;
    c->rt.fb_len = total;
    c->held.buf = b;
    c->held.cap = cap;
    c->held.len = c->held.off = 0;
    c->held.deliver = false;
    sync_active(c);
}

/* The kept answer back in the held bytes (none held now), for the program. */
void bo_hc_fallback_restore(bo_hconn *c)
{
    char *b = c->held.buf;
    size_t cap = c->held.cap;
    c->held.buf = c->rt.fb;
    c->held.cap = c->rt.fb_cap;
    c->held.len = c->rt.fb_len;
    c->held.off = 0;
    c->rt.fb = b;
    c->rt.fb_cap = cap;
    c->rt.fb_len = 0;
    sync_active(c);
}

static void forget_exchange(bo_hconn *c)
{
    bo_hc_held_drop(c);
    c->rt.fb_len = 0;
    bo_hc_pace_release(c, false);
    c->pace.sent = false;
    bo_hx_request_forget(c);
}

/* ---- a write held back for the pace --------------------------------------------- */

/* An event loop's held write is its wait's to drive (bo_hx_loop_retries). */
static void set_loop_hold(bo_hconn *c, bool loop)
{
    if (loop != c->pace.loop)
        __atomic_add_fetch(&bo_hx_loop_retries, loop ? 1 : -1, __ATOMIC_RELAXED);
    c->pace.loop = loop;
    __atomic_store_n(&c->pace.owner, loop ? (const void *)&bo_core_busy : NULL, __ATOMIC_RELAXED);
    if (!loop)
        c->pace.masked = false; /* (put back by bo_hx_loop_unhold, or gone with the fd) */
}

void bo_hc_pace_hold(bo_hconn *c, int64_t until, int64_t quota, bool loop)
{
    c->pace.until = until;
    c->pace.quota = quota;
    set_loop_hold(c, loop);
    sync_active(c);
}

void bo_hc_pace_sent(bo_hconn *c)
{
    c->pace.sent = true;
}

void bo_hc_pace_release(bo_hconn *c, bool go)
{
    c->pace.go = go;
    c->pace.quota = 0;
    set_loop_hold(c, false);
    if (c->pace.until != 0) {
        c->pace.until = 0;
        sync_active(c);
    }
}

/*
 * An event loop's write held back: the program, told EAGAIN, asked its
 * loop for EPOLLOUT, which a writable socket would give at once (a loop
 * spinning on the write); it is taken out of the registration until the
 * pace's time (bo_hc_pace_mask, at each of the loop's waits: the program
 * may have put it back meanwhile), then put back as the program left it
 * (bo_hc_pace_unmask: unless the program changed it since).
 */
void bo_hc_pace_mask(bo_hconn *c)
{
    bo_hs_epreg reg;
    if (!c->pace.loop || bo_hs_epoll_regs(c->fd, &reg, 1) != 1 || !(reg.ev.events & EPOLLOUT))
        return;
    struct epoll_event ev = reg.ev;
    ev.events &= ~(uint32_t)EPOLLOUT;
    if (epoll_ctl(reg.epfd, EPOLL_CTL_MOD, c->fd, &ev) != 0)
        return;
    c->pace.masked = true;
    c->pace.epfd = reg.epfd;
    c->pace.events = reg.ev.events;
}

void bo_hc_pace_unmask(bo_hconn *c)
{
    bo_hs_epreg regs[4];
    if (!c->pace.masked)
        return;
    c->pace.masked = false;
    int n = bo_hs_epoll_regs(c->fd, regs, 4);
    for (int i = 0; i < n; i++)
        if (regs[i].epfd == c->pace.epfd &&
            regs[i].ev.events == (c->pace.events & ~(uint32_t)EPOLLOUT)) {
            struct epoll_event ev = regs[i].ev;
            ev.events = c->pace.events;
            (void)epoll_ctl(c->pace.epfd, EPOLL_CTL_MOD, c->fd, &ev);
        }
}

/* ---- fork ------------------------------------------------------------------ */

/*
 * The child has the parent's fds, so the records stay; but only the
 * forking thread came along: a record some other thread was inside, and
 * any call in flight or retry under way (the parent's attempt, counted in
 * the parent's window), is left alone for good (OFF) without completing
 * anything; the descriptors a retry made are the parent's to use.
 */
static void child_one(bo_hconn *c, void *ud)
{
    (void)ud;
    bool busy = c->busy != 0;
    c->busy = c->stale = 0;
    if (busy || c->call.begun || c->st == BO_HC_REQ || c->st == BO_HC_SENT ||
        c->st == BO_HC_RETRY) {
        bo_hx_call_disown(c); /* the parent's: not ours to complete */
        bo_hr_release(c);
        c->held.deliver = false;
        c->st = BO_HC_OFF;
    }
    c->pace.until = 0; /* (a write held back is the parent's; the counts start anew) */
    c->pace.loop = c->pace.masked = false;
    __atomic_store_n(&c->active, false, __ATOMIC_RELAXED);
}

void bo_http_child_fork(void)
{
    bo_hc_child_fork_table();
    bo_hc_active = 0;
    bo_hx_loop_retries = 0;
    bo_hc_each(child_one, NULL);
}
