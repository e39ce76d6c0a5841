/*
 * wait.c: the program's own waits, where a retry of the http room waits
 * when the program's call may not (exchange.h): the poll family (poll,
 * ppoll, select, pselect), which names the descriptors it waits for, and
 * the epoll family (epoll_wait, epoll_pwait, epoll_pwait2), an event
 * loop's wait, which does not.
 *
 * While no request is in flight anywhere in the process (bo_hc_active),
 * every hook is the real call at once.  Otherwise a poll that names a
 * followed connection sees, for it, only what the program would see
 * without the library: an answer that stands; nothing while a throttle is
 * retried (its wait, its new connection, its handshake and send are taken
 * inside this very call, which keeps waiting for the program's other
 * descriptors and never returns before its own timeout with nothing to
 * say); the answer held for it when the retry is abandoned, at the latest
 * when the call's own timeout comes.  An event loop's wait does the same
 * for the retries of its connections, bounded by its own timeout: it is
 * woken for their times and the descriptors they wait for, and returns
 * only with the program's own events or at its own timeout.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>

#include "bo_time.h"
#include "core/core.h"
#include "http/conn.h"
#include "http/fdtab.h"
#include "http/exchange.h"
#include "http/record.h"

/* ---- the real functions ---------------------------------------------------- */

typedef int (*poll_fn)(struct pollfd *, nfds_t, int);
typedef int (*ppoll_fn)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
typedef int (*select_fn)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
typedef int (*pselect_fn)(int, fd_set *, fd_set *, fd_set *, const struct timespec *,
                          const sigset_t *);
typedef int (*epoll_wait_fn)(int, struct epoll_event *, int, int);
typedef int (*epoll_pwait_fn)(int, struct epoll_event *, int, int, const sigset_t *);
typedef int (*epoll_pwait2_fn)(int, struct epoll_event *, int, const struct timespec *,
                               const sigset_t *);

static struct {
    poll_fn poll;
    ppoll_fn ppoll;
    select_fn select;
    pselect_fn pselect;
    epoll_wait_fn epoll_wait;
    epoll_pwait_fn epoll_pwait;
    epoll_pwait2_fn epoll_pwait2; /* NULL before glibc 2.35 */
} g_real;
static int g_bound;

int epoll_pwait2(int epfd, struct epoll_event *ev, int max, const struct timespec *timeout,
                 const sigset_t *mask);

static void resolve(void)
{
    *(void **)&g_real.poll = bo_core_next_fn("poll", (void *)poll);
    *(void **)&g_real.ppoll = bo_core_next_fn("ppoll", (void *)ppoll);
    *(void **)&g_real.select = bo_core_next_fn("select", (void *)select);
    *(void **)&g_real.pselect = bo_core_next_fn("pselect", (void *)pselect);
    *(void **)&g_real.epoll_wait = bo_core_next_fn("epoll_wait", (void *)epoll_wait);
    *(void **)&g_real.epoll_pwait = bo_core_next_fn("epoll_pwait", (void *)epoll_pwait);
    *(void **)&g_real.epoll_pwait2 = bo_core_next_fn_opt("epoll_pwait2", (void *)epoll_pwait2);
}

#define REAL(f) BO_CORE_REAL(g_real, g_bound, resolve, f)

/* Anything in flight that a wait must look at? */
static inline bool quiet(void)
{
    return __builtin_expect(__atomic_load_n(&bo_hc_active, __ATOMIC_RELAXED) == 0, 1) ||
           bo_core_busy;
}

/* Nothing in flight and the real calls known: the hooks' fast path, which
 * keeps no frame of its own (the resolution is the slow path's). */
static inline bool pass_at_once(void)
{
    return __builtin_expect(__atomic_load_n(&bo_hc_active, __ATOMIC_RELAXED) == 0 &&
                                __atomic_load_n(&g_bound, __ATOMIC_ACQUIRE),
                            1);
}

static int64_t deadline_of_ms(int64_t now, int timeout_ms)
{
    return timeout_ms < 0 ? INT64_MAX : now + (int64_t)timeout_ms * BO_NS_PER_MS;
}

static int64_t deadline_of_ts(int64_t now, const struct timespec *ts)
{
    if (ts == NULL)
        return INT64_MAX;
    if (ts->tv_sec > INT64_MAX / BO_NS_PER_S / 2)
        return INT64_MAX;
    return now + (int64_t)ts->tv_sec * BO_NS_PER_S + ts->tv_nsec;
}

/* The time left until `until` as a timespec for ppoll (NULL: no end). */
static const struct timespec *left_ts(int64_t now, int64_t until, struct timespec *ts)
{
    if (until == INT64_MAX)
        return NULL;
    int64_t left = until > now ? until - now : 0;
    ts->tv_sec = left / BO_NS_PER_S;
    ts->tv_nsec = left % BO_NS_PER_S;
    return ts;
}

/* ---- the poll family ------------------------------------------------------------ */

/* One poll of the program's, as wait_core makes it again and again: its n
 * entries, what the kernel is asked (q: the program's entries as the
 * exchange says, then the descriptors the retries wait for, of[k - n] the
 * entry each serves), the events shown at once (pre) and the records. */
typedef struct poll_run {
    struct pollfd *fds;
    nfds_t n, m;
    struct pollfd *q;
    int *of;
    short *pre;
    bo_hconn **rec;
} poll_run;

/* Before the real call: what each followed connection's exchange asks the
 * kernel instead (bo_hx_poll_before); the time to come back (<= deadline);
 * *shown: entries the program is to see at once. */
static int64_t ask_before(poll_run *p, int64_t now, int64_t deadline, int *shown)
{
    int64_t until = deadline;
    p->m = p->n;
    *shown = 0;
    for (nfds_t i = 0; i < p->n; i++) {
        p->q[i] = p->fds[i];
        p->q[i].revents = 0;
        p->pre[i] = 0;
        bo_hconn *c = p->rec[i];
        if (c == NULL || !bo_hc_is_active(c) || !bo_hc_trylock(c))
            continue;
        short fd_ev, x_ev;
        int xfd;
        int64_t u;
        p->pre[i] = bo_hx_poll_before(c, p->fds[i].events, now, deadline, &fd_ev, &xfd, &x_ev, &u);
        bo_hx_leave(c);
        if (fd_ev == -1)
            p->q[i].fd = -1; /* nothing for the program there yet */
        else
            p->q[i].events = fd_ev;
        if (xfd >= 0) {
            p->q[p->m] = (struct pollfd){.fd = xfd, .events = x_ev};
            p->of[p->m - p->n] = (int)i;
            p->m++;
        }
        if (u < until)
            until = u;
        *shown += p->pre[i] != 0;
    }
    return until;
}

/* After it: what the program sees of each entry (bo_hx_poll_after for a
 * followed connection), in fds[].revents; how many entries have events. */
static int tell_after(poll_run *p, int64_t deadline)
{
    int count = 0;
    for (nfds_t i = 0; i < p->n; i++) {
        short rev = p->q[i].fd >= 0 ? p->q[i].revents : 0;
        bo_hconn *c = p->rec[i];
        if (c != NULL && (bo_hc_is_active(c) || p->pre[i]) && bo_hc_trylock(c)) {
            short xrev = 0;
            for (nfds_t k = p->n; k < p->m; k++)
                if (p->of[k - p->n] == (int)i)
                    xrev = p->q[k].revents;
            rev = (short)(bo_hx_poll_after(c, p->fds[i].events, rev, xrev, deadline) | p->pre[i]);
            bo_hx_leave(c);
        }
        p->fds[i].revents = rev;
        count += rev != 0;
    }
    return count;
}

/*
 * The program's poll of fds (n of them) until deadline, with mask (ppoll's
 * and pselect's signal mask; NULL: none): each followed connection's
 * events are the exchange's to say (bo_hx_poll_before, bo_hx_poll_after);
 * the real call is made again, with the time left, until the program has
 * something to see or its time is up.
 */
static int wait_core(struct pollfd *fds, nfds_t n, int64_t deadline, const sigset_t *mask)
{
    struct pollfd stack_q[64];
    int stack_of[64];
    short stack_pre[64];
    bo_hconn *stack_c[64];
    size_t cap = (size_t)n * 2 + 1;
    poll_run p = {.fds = fds, .n = n, .q = stack_q, .of = stack_of, .pre = stack_pre,
                  .rec = stack_c};
    int ret;

    if (cap > 64) {
        p.q = malloc(cap * sizeof *p.q);
        p.of = malloc(cap * sizeof *p.of);
        p.pre = malloc((size_t)n * sizeof *p.pre);
        p.rec = malloc((size_t)n * sizeof *p.rec);
        if (p.q == NULL || p.of == NULL || p.pre == NULL || p.rec == NULL) {
            free(p.q);
            free(p.of);
            free(p.pre);
            free(p.rec);
            struct timespec ts;
            return REAL(ppoll)(fds, n, left_ts(bo_core_now_ns(), deadline, &ts), mask);
        }
    }
    for (nfds_t i = 0; i < n; i++) {
        bo_hconn *c = fds[i].fd >= 0 ? bo_hc_get(fds[i].fd) : NULL;
        p.rec[i] = c != NULL && c->st != BO_HC_NONE && c->st != BO_HC_OFF ? c : NULL;
    }
    for (;;) {
        int shown;
        int64_t now = bo_core_now_ns(), until = ask_before(&p, now, deadline, &shown);
        struct timespec ts, *tp = (struct timespec *)left_ts(now, shown ? now : until, &ts);
        if (REAL(ppoll)(p.q, p.m, tp, mask) < 0) {
            ret = -1;
            break;
        }
        int count = tell_after(&p, deadline);
        if (count > 0 || bo_core_now_ns() >= deadline) {
            ret = count;
            break;
        }
    }
    if (p.q != stack_q) {
        int e = errno;
        free(p.q);
        free(p.of);
        free(p.pre);
        free(p.rec);
        errno = e;
    }
    return ret;
}

/* Does the set name a connection with something in flight? */
static bool names_active(const struct pollfd *fds, nfds_t n)
{
    for (nfds_t i = 0; i < n; i++) {
        bo_hconn *c = fds[i].fd >= 0 ? bo_hc_get(fds[i].fd) : NULL;
        if (c != NULL && bo_hc_is_active(c))
            return true;
    }
    return false;
}

static int shim_poll(struct pollfd *fds, nfds_t n, int64_t deadline, const sigset_t *mask)
{
    int saved = errno;
    bo_core_busy = 1;
    errno = saved;
    int r = wait_core(fds, n, deadline, mask);
    int e = errno;
    bo_core_busy = 0;
    errno = e;
    return r;
}

/* glibc declares poll's array write-only (its access attribute), which it
 * is not: the events are read.  gcc then takes the program's array for
 * uninitialised here. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
/* The slow paths out of line: the hooks' fast path is one load and the
 * real call (libcurl polls several times a transfer). */
__attribute__((noinline)) static int poll_slow(struct pollfd *fds, nfds_t n, int timeout)
{
    if (bo_core_busy || !names_active(fds, n))
        return REAL(poll)(fds, n, timeout);
    return shim_poll(fds, n, deadline_of_ms(bo_core_now_ns(), timeout), NULL);
}

__attribute__((noinline)) static int ppoll_slow(struct pollfd *fds, nfds_t n,
                                                const struct timespec *timeout,
                                                const sigset_t *mask)
{
    if (bo_core_busy || !names_active(fds, n))
        return REAL(ppoll)(fds, n, timeout, mask);
    return shim_poll(fds, n, deadline_of_ts(bo_core_now_ns(), timeout), mask);
}

BO_EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout)
{
    if (pass_at_once())
        return g_real.poll(fds, n, timeout);
    return poll_slow(fds, n, timeout);
}

BO_EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *timeout,
                    const sigset_t *mask)
{
    if (pass_at_once())
        return g_real.ppoll(fds, n, timeout, mask);
    return ppoll_slow(fds, n, timeout, mask);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

/* The descriptors named in select's sets, as poll's events (read: POLLIN;
 * write: POLLOUT; except: POLLPRI). */
static short select_events(int fd, const fd_set *r, const fd_set *w, const fd_set *e)
{
    return (short)((r != NULL && FD_ISSET(fd, r) ? POLLIN : 0) |
                   (w != NULL && FD_ISSET(fd, w) ? POLLOUT : 0) |
                   (e != NULL && FD_ISSET(fd, e) ? POLLPRI : 0));
}

/* poll's answer back into select's sets: how many bits are left set. */
static int select_sets(const struct pollfd *p, nfds_t n, fd_set *r, fd_set *w, fd_set *e)
{
    int count = 0;
    for (nfds_t i = 0; i < n; i++) {
        int fd = p[i].fd;
        short rev = p[i].revents;
        if (r != NULL && FD_ISSET(fd, r) && !(rev & (POLLIN | POLLHUP | POLLERR)))
            FD_CLR(fd, r);
        if (w != NULL && FD_ISSET(fd, w) && !(rev & (POLLOUT | POLLERR)))
            FD_CLR(fd, w);
        if (e != NULL && FD_ISSET(fd, e) && !(rev & POLLPRI))
            FD_CLR(fd, e);
        count += (r != NULL && FD_ISSET(fd, r)) + (w != NULL && FD_ISSET(fd, w)) +
                 (e != NULL && FD_ISSET(fd, e));
    }
    return count;
}

/*
 * select and pselect: the sets as a poll, through the same wait, and back.
 * select's timeout is left with the time that remained, as Linux's own
 * does.
 */
static int shim_select(int nfds, fd_set *r, fd_set *w, fd_set *e, int64_t deadline,
                       const sigset_t *mask)
{
    struct pollfd stack_p[64] = {{0}}, *p = stack_p;
    nfds_t n = 0;

    if (nfds > FD_SETSIZE)
        nfds = FD_SETSIZE;
    for (int fd = 0; fd < nfds; fd++)
        n += select_events(fd, r, w, e) != 0;
    if (n > 64 && (p = malloc(n * sizeof *p)) == NULL)
        return -2;
    n = 0;
    for (int fd = 0; fd < nfds; fd++) {
        short ev = select_events(fd, r, w, e);
        if (ev != 0)
            p[n++] = (struct pollfd){.fd = fd, .events = ev};
    }
    int res = shim_poll(p, n, deadline, mask);
    if (res >= 0)
        res = select_sets(p, n, r, w, e);
    if (p != stack_p) {
        int er = errno;
        free(p);
        errno = er;
    }
    return res;
}

/* Does any of the sets name a connection with something in flight? */
static bool sets_active(int nfds, const fd_set *r, const fd_set *w, const fd_set *e)
{
    if (nfds > FD_SETSIZE)
        nfds = FD_SETSIZE;
    for (int fd = 0; fd < nfds; fd++) {
        if (!((r != NULL && FD_ISSET(fd, r)) || (w != NULL && FD_ISSET(fd, w)) ||
              (e != NULL && FD_ISSET(fd, e))))
            continue;
        bo_hconn *c = bo_hc_get(fd);
        if (c != NULL && bo_hc_is_active(c))
            return true;
    }
    return false;
}

__attribute__((noinline)) static int select_slow(int nfds, fd_set *r, fd_set *w, fd_set *e,
                                                 struct timeval *timeout)
{
    if (quiet() || !sets_active(nfds, r, w, e))
        return REAL(select)(nfds, r, w, e, timeout);
    int64_t now = bo_core_now_ns();
    int64_t deadline = timeout == NULL ? INT64_MAX
                                       : now + (int64_t)timeout->tv_sec * BO_NS_PER_S +
                                             (int64_t)timeout->tv_usec * 1000;
    int res = shim_select(nfds, r, w, e, deadline, NULL);
    if (res == -2)
        return REAL(select)(nfds, r, w, e, timeout);
    if (timeout != NULL) {
        int64_t left = deadline - bo_core_now_ns();
        if (left < 0)
            left = 0;
        timeout->tv_sec = left / BO_NS_PER_S;
        timeout->tv_usec = (left % BO_NS_PER_S) / 1000;
    }
    return res;
}

__attribute__((noinline)) static int pselect_slow(int nfds, fd_set *r, fd_set *w, fd_set *e,
                                                  const struct timespec *timeout,
                                                  const sigset_t *mask)
{
    if (quiet() || !sets_active(nfds, r, w, e))
        return REAL(pselect)(nfds, r, w, e, timeout, mask);
    int res = shim_select(nfds, r, w, e, deadline_of_ts(bo_core_now_ns(), timeout), mask);
    return res == -2 ? REAL(pselect)(nfds, r, w, e, timeout, mask) : res;
}

BO_EXPORT int select(int nfds, fd_set *r, fd_set *w, fd_set *e, struct timeval *timeout)
{
    if (pass_at_once())
        return g_real.select(nfds, r, w, e, timeout);
    return select_slow(nfds, r, w, e, timeout);
}

BO_EXPORT int pselect(int nfds, fd_set *r, fd_set *w, fd_set *e, const struct timespec *timeout,
                      const sigset_t *mask)
{
    if (pass_at_once())
        return g_real.pselect(nfds, r, w, e, timeout, mask);
    return pselect_slow(nfds, r, w, e, timeout, mask);
}

/* ---- the epoll family ------------------------------------------------------------ */

#define DRIVE_FDS 8

/*
 * The event loop's wait on epfd until deadline: the retries of its
 * connections are taken a step each time it wakes (bo_hx_drive), and it
 * is woken for their times and the descriptors they wait for (the epoll
 * fd itself is pollable: it polls readable when events are ready); it
 * returns only with events of the program's or at its own time.
 */
static int shim_epoll(int epfd, struct epoll_event *ev, int max, int64_t deadline,
                      const sigset_t *mask)
{
    int fds[DRIVE_FDS];
    short evs[DRIVE_FDS];

    for (;;) {
        int64_t now = bo_core_now_ns(), until;
        int saved = errno;
        bo_core_busy = 1;
        int k = bo_hx_drive(now, deadline, &until, fds, evs, DRIVE_FDS);
        bo_core_busy = 0;
        errno = saved;
        if (until > deadline)
            until = deadline;
        struct timespec ts;
        const struct timespec *tp = left_ts(now, until, &ts);
        int r;
        if (k == 0) {
            int ms = tp == NULL ? -1
                                : (int)((until - now + BO_NS_PER_MS - 1) / BO_NS_PER_MS);
            if (tp != NULL && until <= now)
                ms = 0;
            r = REAL(epoll_pwait)(epfd, ev, max, ms, mask);
        } else {
            struct pollfd q[DRIVE_FDS + 1];
            q[0] = (struct pollfd){.fd = epfd, .events = POLLIN};
            for (int i = 0; i < k; i++)
                q[i + 1] = (struct pollfd){.fd = fds[i], .events = evs[i]};
            r = REAL(ppoll)(q, (nfds_t)k + 1, tp, mask);
            if (r > 0)
                r = (q[0].revents & POLLIN) ? REAL(epoll_wait)(epfd, ev, max, 0) : 0;
        }
        if (r != 0 || bo_core_now_ns() >= deadline)
            return r;
    }
}

/* The loop's next timer, as its wait's timeout says, for the retries its
 * reads judge (exchange.h: bo_hx_loop_wait). */
static int64_t note_loop(int timeout_ms)
{
    int64_t now = bo_core_now_ns();
    bo_hx_loop_wait(now, timeout_ms);
    return now;
}

/* A look of the loop's (a wait of 0: work at hand) while it holds a write
 * back or drives a retry: taken a step first, so that a held write's
 * EPOLLOUT is out of sight (a loop looking again and again would see the
 * writable socket). */
static inline bool looks_only(int64_t timeout_ns)
{
    return timeout_ns == 0 &&
           (bo_core_busy || __atomic_load_n(&bo_hx_loop_retries, __ATOMIC_RELAXED) == 0);
}

BO_EXPORT int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
    if (bo_core_busy || looks_only(timeout))
        return REAL(epoll_wait)(epfd, ev, max, timeout);
    int64_t now = note_loop(timeout);
    if (quiet())
        return REAL(epoll_wait)(epfd, ev, max, timeout);
    return shim_epoll(epfd, ev, max, deadline_of_ms(now, timeout), NULL);
}

BO_EXPORT int epoll_pwait(int epfd, struct epoll_event *ev, int max, int timeout,
                          const sigset_t *mask)
{
    if (bo_core_busy || looks_only(timeout))
        return REAL(epoll_pwait)(epfd, ev, max, timeout, mask);
    int64_t now = note_loop(timeout);
    if (quiet())
        return REAL(epoll_pwait)(epfd, ev, max, timeout, mask);
    return shim_epoll(epfd, ev, max, deadline_of_ms(now, timeout), mask);
}

BO_EXPORT int epoll_pwait2(int epfd, struct epoll_event *ev, int max,
                           const struct timespec *timeout, const sigset_t *mask)
{
    if (REAL(epoll_pwait2) == NULL) {
        errno = ENOSYS;
        return -1;
    }
    if (bo_core_busy ||
        (timeout != NULL && looks_only(timeout->tv_sec * BO_NS_PER_S + timeout->tv_nsec)))
        return REAL(epoll_pwait2)(epfd, ev, max, timeout, mask);
    int64_t now = bo_core_now_ns();
    int64_t deadline = deadline_of_ts(now, timeout);
    bo_hx_loop_wait(now, deadline == INT64_MAX ? -1
                         : deadline == now     ? 0
                                               : (int)((deadline - now) / BO_NS_PER_MS + 1));
    if (quiet())
        return REAL(epoll_pwait2)(epfd, ev, max, timeout, mask);
    return shim_epoll(epfd, ev, max, deadline, mask);
}
