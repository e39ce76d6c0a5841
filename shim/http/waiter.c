/*
 * waiter.c: where the program of a non-blocking read waits for its answer
 * (exchange_int.h's bo_hx_waiter), within the http room: whether the
 * socket is in an epoll set (/proc/self/fdinfo: an event loop), the loop's
 * next timer (its thread's last wait, bo_hx_loop_wait), whether the
 * process serves connections (bo_hx_serving); and the margin a retry
 * leaves before the end of the program's wait (bo_hx_before).
 */
#include <unistd.h>

#include "bo_time.h"
#include "core/core.h"
#include "http/exchange.h"
#include "http/exchange_int.h"
#include "http/sockwait.h"

/* Is the fd in an epoll set (an event loop waits on it)? */
static bool in_epoll(int fd)
{
    bo_hs_epreg reg;
    return bo_hs_epoll_regs(fd, &reg, 1) > 0;
}

/* The end of this thread's event-loop wait (bo_hx_loop_wait): a loop's
 * timers are its thread's, and another thread's wait (a wait for ever in a
 * helper thread) says nothing of them.  0: the thread has not waited yet
 * (only ever looked, with a timeout of 0): its timers are not known. */
static BO_TLS int64_t tl_loop_deadline;

/* The process serves connections it accepted (bo_hx_serving). */
static int g_serving;

void bo_hx_serving(void)
{
    if (!__atomic_load_n(&g_serving, __ATOMIC_RELAXED))
        __atomic_store_n(&g_serving, 1, __ATOMIC_RELAXED);
}

void bo_hx_loop_wait(int64_t now, int timeout_ms)
{
    if (timeout_ms == 0)
        return; /* a loop with work at hand says nothing of its timers */
    tl_loop_deadline = timeout_ms < 0 ? INT64_MAX : now + (int64_t)timeout_ms * BO_NS_PER_MS;
}

int64_t bo_hx_before(int64_t now, int64_t deadline)
{
    if (deadline == INT64_MAX || deadline <= now)
        return deadline;
    int64_t margin = (deadline - now) / 10;
    if (margin < HX_MARGIN_NS)
        margin = HX_MARGIN_NS;
    return deadline - margin;
}

bo_hx_waits bo_hx_writer(const bo_hconn *c)
{
    if (__atomic_load_n(&g_serving, __ATOMIC_RELAXED))
        return BO_HX_WAITS_PASSED;
    return in_epoll(c->fd) ? BO_HX_WAITS_IN_LOOP : BO_HX_WAITS_UNSEEN;
}

bo_hx_waits bo_hx_waiter(const bo_hconn *c, int64_t *deadline)
{
    if (!in_epoll(c->fd))
        return BO_HX_WAITS_UNSEEN;
    if (__atomic_load_n(&g_serving, __ATOMIC_RELAXED))
        return BO_HX_WAITS_PASSED; /* a server's answers */
    /* A loop's retry lives across its turns, not inside one wait: the
     * loop's next timer is no bound (a tick, a keep-alive timer may come
     * first).  The program's own deadline for the request is not seen
     * behind them, so the retry takes HX_LOOP_NS of the program's time
     * (retry.h); or more when the loop's next timer is farther: no deadline
     * of the program's comes before it (none: a loop that waits for ever,
     * the engine's bounds alone). */
    int64_t now = bo_core_now_ns(), end = now + HX_LOOP_NS;
    if (tl_loop_deadline > end)
        end = tl_loop_deadline;
    *deadline = bo_hx_before(now, end);
    return BO_HX_WAITS_IN_LOOP;
}
