/*
 * multi.c: the hooks of libcurl's multi interface.
 *
 * A transfer driven by a multi handle gets the promises of curl_easy_perform
 * (easy.c): the same call state machine (xfer.c), driven here from the
 * program's own loop instead of a blocking one.
 *
 *   curl_multi_add_handle   a managed transfer is admitted by its
 *                           destination's window first; one that must wait
 *                           is not yet added to the real multi handle;
 *   curl_multi_perform, curl_multi_socket_action
 *                           after libcurl's own work, its finished
 *                           transfers are read (curl_multi_info_read): one
 *                           whose outcome is retried is removed from the
 *                           real multi (never inside a callback: libcurl
 *                           refuses that) and re-added at its deadline, its
 *                           CURLMSG_DONE hidden; the others' messages are
 *                           copied (a message's data does not survive its
 *                           removal) and queued for the program.
 *                           running_handles counts the waiting transfers,
 *                           and those admitted after libcurl counted its
 *                           own, so `while (still_running)` loops go on;
 *   curl_multi_info_read    the queued messages;
 *   curl_multi_timeout, curl_multi_wait, curl_multi_poll
 *                           clamped to the next retry or admission time,
 *                           so that the program wakes up for it;
 *   curl_multi_setopt       CURLMOPT_TIMERFUNCTION is wrapped: a
 *                           socket_action loop is told the sooner of
 *                           libcurl's timer and the shim's next deadline;
 *   curl_multi_remove_handle, curl_multi_cleanup
 *                           end the transfers' calls.
 *
 * Only multi handles the program created are managed: curl_easy_perform
 * drives a private multi handle of libcurl's, whose calls come through the
 * exported hooks from inside libcurl itself (its PLT); those, recognised by
 * their return address (real.h), pass straight through.  The records of
 * the managed multi handles and their transfers are multi_rec.c's.
 */
#include "libcurl/multi.h"

#include <errno.h>
#include <stdarg.h>

#include "bo_time.h"
#include "call/call.h"
#include "core/core.h"
#include "libcurl/multi_rec.h"
#include "libcurl/real.h"
#include "loader/loader.h"

/* A waiting transfer's progress callback is asked this often at most. */
#define TICK_NS (100 * BO_NS_PER_MS)

/*
 * The record of a multi handle the program uses (called from the program,
 * not from inside libcurl), created on first sight; NULL: pass through.
 */
static bo_multi_rec *mrec_get(bo_curl_real *real, CURLM *m, const void *ret)
{
    bo_multi_rec *r;

    if (bo_core_busy || m == NULL || bo_core_config() == NULL ||
        bo_curl_from_libcurl(real, ret))
        return NULL;
    if ((r = bo_multi_rec_find(m)) != NULL)
        return r->real == real ? r : NULL;
    return bo_multi_rec_new(real, m);
}

/*
 * The transfer's call ends without its result (the program removed the
 * transfer, cleaned up its multi handle or freed its easy handle, or
 * cancelled it): an attempt in flight is cancelled, a waiting call counted
 * as abandoned when it had a result; nothing held reaches the program.
 */
static void end_call(bo_mxfer *x)
{
    if (x->state == BO_X_RUN) {
        bo_run_cancel(x->x.sd, &x->x.call);
        bo_curl_xfer_drop(&x->x);
    } else if (bo_xstate_pending(x->state)) {
        if (x->x.call.have_result)
            bo_run_abandoned(x->x.sd);
        bo_curl_xfer_drop(&x->x);
    }
}

/*
 * The transfer leaves its multi handle's record (removed, its multi handle
 * or easy handle gone): its call ends (end_call), its message goes, its
 * record is kept for the next transfer.  Out of the real multi already.
 */
static void xfer_forget(bo_multi_rec *r, bo_mxfer *x)
{
    bo_mxfer **pp;

    end_call(x);
    bo_multi_move(r, x, BO_X_DETACHED, 0);
    bo_multi_unqueue(r, x);
    for (pp = &r->xfers; *pp != x; pp = &(*pp)->next) {
    }
    *pp = x->next;
    bo_mxfer_index_del(x);
    bo_mxfer_free(r, x);
}

/* The call ends while its transfer is not in the real multi: its message. */
static void finish_detached(bo_multi_rec *r, bo_mxfer *x, int code)
{
    bo_multi_move(r, x, BO_X_DETACHED, 0);
    bo_multi_queue(r, x, CURLMSG_DONE, bo_curl_xfer_end(&x->x, code));
}

/*
 * Read libcurl's finished transfers (outside its callbacks only: a retried
 * one is removed from the real multi).  A retried transfer waits, its
 * message hidden; the others' messages are copied for the program, after
 * the held bytes of the attempt that stands have been handed over.
 */
static void drain(bo_multi_rec *r)
{
    CURLMsg *m;
    int left;

    if (r->in_real)
        return;
    while ((m = r->real->m_info_read(r->m, &left)) != NULL) {
        CURL *h = m->easy_handle;
        CURLMSG kind = m->msg;
        int code = (int)m->data.result;
        bo_mxfer *x = bo_mxfer_find(r, h);
        int64_t until;

        if (x == NULL)
            continue; /* not added through the shim: cannot be, nothing to report it with */
        if (x->state == BO_X_RUN && kind == CURLMSG_DONE) {
            x->code = code;
            r->in_real++; /* the program's callbacks may run (progress, write) */
            bool retry = bo_curl_xfer_done(&x->x, code, &until);
            r->in_real--;
            if (retry) {
                r->real->m_remove(r->m, h);
                bo_multi_move(r, x, BO_X_RETRY, until);
                x->tick_at = bo_core_now_ns() + TICK_NS;
                continue;
            }
            r->in_real++;
            code = bo_curl_xfer_end(&x->x, code);
            r->in_real--;
            bo_multi_move(r, x, BO_X_DONE, 0);
        } else if (x->state == BO_X_PASS && kind == CURLMSG_DONE) {
            bo_multi_move(r, x, BO_X_DONE, 0);
        }
        if (!x->queued)
            bo_multi_queue(r, x, kind, code);
    }
}

/*
 * Move the waiting transfers whose time came: a retry seeks admission, an
 * admitted one is added to the real multi.  Returns how many were added.
 */
static int advance(bo_multi_rec *r)
{
    int added = 0;
    int64_t now, due = INT64_MAX;

    if (r->npending == 0 || r->in_real)
        return 0;
    now = bo_core_now_ns();
    if (now < r->next_due && r->next_due != INT64_MAX) {
        /* nothing due; but the program may cancel a waiting transfer */
        bool ticks = false;
        for (bo_mxfer *x = r->xfers; x != NULL && !ticks; x = x->next)
            ticks = bo_xstate_pending(x->state) && x->tick_at <= now;
        if (!ticks)
            return 0;
    }
    for (bo_mxfer *x = r->xfers; x != NULL; x = x->next) {
        if (!bo_xstate_pending(x->state))
            continue;
        if (x->tick_at <= now) {
            x->tick_at = now + TICK_NS;
            r->in_real++;
            int cancel = bo_curl_xfer_tick(&x->x);
            r->in_real--;
            if (cancel) {
                end_call(x);
                bo_multi_move(r, x, BO_X_DETACHED, 0);
                bo_multi_queue(r, x, CURLMSG_DONE, CURLE_ABORTED_BY_CALLBACK);
                continue;
            }
        }
        if (x->until > now) {
            if (x->until < due)
                due = x->until;
            continue;
        }
        bo_multi_move(r, x, BO_X_ADMIT, x->until); /* a retry's time came */
        int64_t until = now;
        bo_step rc =
            bo_run_admit_step(x->x.sd, &x->x.call, now, &x->x.inflight, BO_POLL_ADMIT_NS, &until);
        if (rc == BO_STEP_WAIT) {
            x->until = until;
            if (until < due)
                due = until;
            continue;
        }
        if (rc == BO_STEP_GIVE_UP) {
            /* the budget ran out while waiting: the last result stands, or
             * before any attempt the program's deadline passed */
            if (!x->x.call.have_result) {
                bo_curl_xfer_drop(&x->x);
                finish_detached(r, x, CURLE_OPERATION_TIMEDOUT);
            } else {
                finish_detached(r, x, x->code);
            }
            continue;
        }
        bo_curl_xfer_attempt(&x->x);
        CURLMcode mc = r->real->m_add(r->m, x->h);
        if (mc != CURLM_OK) {
            bo_run_cancel(x->x.sd, &x->x.call);
            bo_curl_xfer_drop(&x->x);
            finish_detached(r, x, x->x.call.have_result ? x->code : CURLE_OUT_OF_MEMORY);
            continue;
        }
        bo_multi_move(r, x, BO_X_RUN, 0);
        added++;
    }
    r->next_due = due;
    return added;
}


/* ---- the hooks ------------------------------------------------------- */

static CURLMcode shim_add(bo_curl_real *real, CURLM *m, CURL *h, const void *ret)
{
    bo_multi_rec *r = mrec_get(real, m, ret);
    bo_mxfer *x;

    if (r == NULL || h == NULL)
        return real->m_add(m, h);
    if (r->in_real)
        return CURLM_RECURSIVE_API_CALL;
    if (bo_mxfer_find(r, h) != NULL)
        return CURLM_ADDED_ALREADY;
    if ((x = bo_mxfer_new(r)) == NULL)
        return CURLM_OUT_OF_MEMORY;
    x->h = h;
    x->state = BO_X_DETACHED; /* neither pending nor active until it is one */
    bo_curl_rec *rec = bo_curl_managed_rec(real, h);
    if (rec == NULL) {
        CURLMcode mc = real->m_add(m, h);
        if (mc != CURLM_OK) {
            bo_mxfer_free(r, x);
            return mc;
        }
        bo_multi_move(r, x, BO_X_PASS, 0);
    } else {
        bo_curl_xfer_begin(&x->x, rec);
        bo_multi_move(r, x, BO_X_ADMIT, x->x.call.start_ns);
        x->tick_at = x->until + TICK_NS;
    }
    x->next = r->xfers;
    r->xfers = x;
    x->owner = r;
    bo_mxfer_index_add(x);
    if (x->state == BO_X_ADMIT) {
        advance(r);
        if (x->state == BO_X_ADMIT)
            bo_multi_tell_timer(r); /* a socket_action program wakes for its admission */
    }
    return CURLM_OK;
}

static CURLMcode shim_remove(bo_curl_real *real, CURLM *m, CURL *h)
{
    bo_multi_rec *r = bo_multi_rec_of(real, m);
    bo_mxfer *x;
    CURLMcode mc;

    if (r == NULL || (x = bo_mxfer_find(r, h)) == NULL)
        return real->m_remove(m, h);
    if (r->in_real)
        return CURLM_RECURSIVE_API_CALL;
    if (x->state == BO_X_PASS || x->state == BO_X_DONE || x->state == BO_X_RUN) {
        mc = real->m_remove(m, h); /* in the real multi: it leaves it first */
        if (mc != CURLM_OK)
            return mc;
    }
    xfer_forget(r, x); /* a run in flight: the program aborted it */
    return CURLM_OK;
}

/*
 * After libcurl's own work: finished transfers, due retries and admissions.
 * libcurl counted its running transfers before the ones admitted here were
 * added to it: those count too, as do the waiting ones.  Left out, the last
 * transfer admitted as every other one finished made the count 0, and a
 * `while (still_running)` loop (curl -Z) ended without ever sending it.
 */
static void after_real(bo_multi_rec *r, int *running)
{
    drain(r);
    int late = advance(r);
    if (running != NULL)
        *running += r->npending + late;
}

static CURLMcode shim_perform(bo_curl_real *real, CURLM *m, int *running)
{
    bo_multi_rec *r = bo_multi_rec_of(real, m);
    CURLMcode mc = CURLM_OK;

    if (r == NULL || r->in_real)
        return real->m_perform(m, running);
    advance(r);
    int late = 0; /* added to the real multi after its last count */
    for (int pass = 0; pass < 2; pass++) {
        r->in_real++;
        mc = real->m_perform(m, running);
        r->in_real--;
        if (mc != CURLM_OK)
            return mc;
        drain(r);
        /* transfers admitted now start at once rather than at the next call */
        if ((late = advance(r)) == 0)
            break;
    }
    /* as after_real: the late ones run too */
    if (running != NULL)
        *running += r->npending + late;
    return mc;
}

static CURLMcode shim_socket_action(bo_curl_real *real, CURLM *m, curl_socket_t s, int ev,
                                    int *running)
{
    bo_multi_rec *r = bo_multi_rec_of(real, m);
    CURLMcode mc;

    if (r == NULL || r->in_real)
        return real->m_socket_action(m, s, ev, running);
    if (s == CURL_SOCKET_TIMEOUT)
        r->told_at = -2; /* the program's timer fired: it is set no more */
    advance(r);
    r->in_real++;
    mc = real->m_socket_action(m, s, ev, running);
    r->in_real--;
    if (mc != CURLM_OK)
        return mc;
    after_real(r, running);
    bo_multi_tell_timer(r);
    return mc;
}

static CURLMsg *shim_info_read(bo_curl_real *real, CURLM *m, int *left)
{
    bo_multi_rec *r = bo_multi_rec_of(real, m);

    if (r == NULL)
        return real->m_info_read(m, left);
    drain(r);
    return bo_multi_next_msg(r, left);
}

static CURLMcode shim_timeout(bo_curl_real *real, CURLM *m, long *ms)
{
    bo_multi_rec *r = bo_multi_rec_of(real, m);
    CURLMcode mc = real->m_timeout(m, ms);

    if (r != NULL && mc == CURLM_OK && ms != NULL)
        *ms = bo_multi_clamp_ms(r, *ms);
    return mc;
}

/*
 * curl_multi_wait and curl_multi_poll, their timeout clamped to the next
 * deadline.  While every transfer waits in the shim, libcurl's wait would
 * return at once (nothing to wait on) and the program would spin: poll,
 * which sleeps then (and curl_multi_wakeup can end), is used instead.
 */
static CURLMcode shim_wait(bo_curl_real *real, bool is_poll, CURLM *m, struct curl_waitfd *fds,
                           unsigned nfds, int timeout_ms, int *numfds)
{
    bo_multi_rec *r = bo_multi_rec_of(real, m);

    if (r != NULL && !r->in_real && r->npending > 0) {
        long t = bo_multi_clamp_ms(r, timeout_ms);
        if (t < timeout_ms)
            timeout_ms = (int)t;
        if (r->nactive == 0 && nfds == 0 && r->nqueued == 0)
            is_poll = true;
    }
    return is_poll ? real->m_poll(m, fds, nfds, timeout_ms, numfds)
                   : real->m_wait(m, fds, nfds, timeout_ms, numfds);
}

/* The option's one argument, read by its type's range, to the real setopt. */
static CURLMcode forward_msetopt(bo_curl_real *real, CURLM *m, CURLMoption opt, va_list ap)
{
    if (opt < CURLOPTTYPE_OBJECTPOINT)
        return real->m_setopt(m, opt, va_arg(ap, long));
    if (opt < CURLOPTTYPE_FUNCTIONPOINT)
        return real->m_setopt(m, opt, va_arg(ap, void *));
    if (opt < CURLOPTTYPE_OFF_T)
        return real->m_setopt(m, opt, va_arg(ap, void (*)(void)));
    if (opt < CURLOPTTYPE_BLOB)
        return real->m_setopt(m, opt, va_arg(ap, curl_off_t));
    return real->m_setopt(m, opt, va_arg(ap, void *));
}

static CURLMcode shim_msetopt(bo_curl_real *real, CURLM *m, CURLMoption opt, va_list ap,
                              const void *ret)
{
    bo_multi_rec *r = NULL;

    if (opt == CURLMOPT_TIMERFUNCTION || opt == CURLMOPT_TIMERDATA)
        r = mrec_get(real, m, ret);
    if (r != NULL && opt == CURLMOPT_TIMERDATA) {
        r->timer_data = va_arg(ap, void *);
        return CURLM_OK;
    }
    if (r != NULL && opt == CURLMOPT_TIMERFUNCTION) {
        r->timer_fn = va_arg(ap, curl_multi_timer_callback);
        r->told_at = -2;
        if (r->timer_fn == NULL)
            return real->m_setopt(m, CURLMOPT_TIMERFUNCTION, (curl_multi_timer_callback)NULL);
        CURLMcode mc = real->m_setopt(m, CURLMOPT_TIMERDATA, (void *)r);
        return mc != CURLM_OK ? mc : real->m_setopt(m, CURLMOPT_TIMERFUNCTION, bo_multi_timer_cb);
    }
    return forward_msetopt(real, m, opt, ap);
}

static CURLMcode shim_mcleanup(bo_curl_real *real, CURLM *m)
{
    bo_multi_rec *r = bo_multi_rec_of(real, m);

    if (r == NULL)
        return real->m_cleanup(m);
    if (r->in_real)
        return CURLM_RECURSIVE_API_CALL;
    bo_multi_rec_remove(r);
    while (r->xfers != NULL)
        xfer_forget(r, r->xfers);
    bo_multi_rec_free(r);
    return real->m_cleanup(m);
}

/*
 * curl_easy_cleanup of a handle still in a managed multi handle (libcurl
 * lets a program skip curl_multi_remove_handle; its own removal then comes
 * from inside libcurl and passes through): the transfer's record goes too,
 * before the handle is freed, so that no retry ever re-adds it.
 */
void bo_multi_easy_gone(void *h)
{
    bo_mxfer *gone = bo_mxfer_of_easy(h);

    if (gone == NULL)
        return;
    /* The handle is its multi handle's, so this is that multi's thread
     * (libcurl's rule): its list is ours to change. */
    xfer_forget(gone->owner, gone);
}

/* ---- exported hooks -------------------------------------------------- */

#define CALLER() __builtin_return_address(0)

/*
 * Each hook is two layers: the exported one passes a call from inside the
 * first libcurl straight on, with nothing else to do (a tail call: no
 * register saved, no thread-local read), and otherwise hands its caller's
 * address to the second, which finds the caller's libcurl (slot_search)
 * and runs the shim's logic.
 */
#define HOOK(ret_type, name, params, args, call)                           \
    __attribute__((noinline)) static ret_type name##_slow(const void *ret, \
                                                          params);         \
    BO_EXPORT ret_type curl_multi_##name(params)                           \
    {                                                                      \
        if (bo_curl_internal0(CALLER()))                                           \
            return bo_curl_reals[0].call;                                  \
        return name##_slow(CALLER(), args);                                \
    }                                                                      \
    __attribute__((noinline)) static ret_type name##_slow(const void *ret, params)
#define P(...) __VA_ARGS__
/* The caller's libcurl as `real`; a call from inside libcurl goes straight to it. */
#define RESOLVE(call)                                 \
    bool internal;                                    \
    bo_curl_real *real = bo_curl_slot_search(ret, &internal); \
    if (internal)                                     \
        return real->call

HOOK(CURLMcode, add_handle, P(CURLM *m, CURL *h), P(m, h), m_add(m, h))
{
    RESOLVE(m_add(m, h));
    return shim_add(real, m, h, ret);
}

HOOK(CURLMcode, remove_handle, P(CURLM *m, CURL *h), P(m, h), m_remove(m, h))
{
    RESOLVE(m_remove(m, h));
    return shim_remove(real, m, h);
}

HOOK(CURLMcode, perform, P(CURLM *m, int *running), P(m, running), m_perform(m, running))
{
    RESOLVE(m_perform(m, running));
    return shim_perform(real, m, running);
}

HOOK(CURLMsg *, info_read, P(CURLM *m, int *left), P(m, left), m_info_read(m, left))
{
    RESOLVE(m_info_read(m, left));
    return shim_info_read(real, m, left);
}

HOOK(CURLMcode, wait,
     P(CURLM *m, struct curl_waitfd *fds, unsigned nfds, int ms, int *numfds),
     P(m, fds, nfds, ms, numfds), m_wait(m, fds, nfds, ms, numfds))
{
    RESOLVE(m_wait(m, fds, nfds, ms, numfds));
    return shim_wait(real, false, m, fds, nfds, ms, numfds);
}

HOOK(CURLMcode, poll,
     P(CURLM *m, struct curl_waitfd *fds, unsigned nfds, int ms, int *numfds),
     P(m, fds, nfds, ms, numfds), m_poll(m, fds, nfds, ms, numfds))
{
    RESOLVE(m_poll(m, fds, nfds, ms, numfds));
    return shim_wait(real, true, m, fds, nfds, ms, numfds);
}

HOOK(CURLMcode, timeout, P(CURLM *m, long *ms), P(m, ms), m_timeout(m, ms))
{
    RESOLVE(m_timeout(m, ms));
    return shim_timeout(real, m, ms);
}

HOOK(CURLMcode, socket_action, P(CURLM *m, curl_socket_t s, int ev, int *running),
     P(m, s, ev, running), m_socket_action(m, s, ev, running))
{
    RESOLVE(m_socket_action(m, s, ev, running));
    return shim_socket_action(real, m, s, ev, running);
}

HOOK(CURLMcode, cleanup, P(CURLM *m), P(m), m_cleanup(m))
{
    RESOLVE(m_cleanup(m));
    return shim_mcleanup(real, m);
}

BO_EXPORT CURLMcode curl_multi_setopt(CURLM *m, CURLMoption opt, ...)
{
    va_list ap;
    CURLMcode rc;
    const void *ret = CALLER();
    va_start(ap, opt);
    if (bo_curl_internal0(ret)) {
        rc = forward_msetopt(&bo_curl_reals[0], m, opt, ap);
    } else {
        int saved = errno;
        bool internal;
        bo_curl_real *real = bo_curl_slot_search(ret, &internal);
        errno = saved;
        /* an internal call is forwarded: it manages no record */
        rc = internal ? forward_msetopt(real, m, opt, ap) : shim_msetopt(real, m, opt, ap, ret);
    }
    va_end(ap);
    return rc;
}

/*
 * The wrappers handed out for one libcurl copy (dlsym, the GOT of a
 * deep-bound object), each bound to its slot.
 */
#define MSLOT_WRAPPERS(i)                                                                    \
    static CURLMcode madd_##i(CURLM *m, CURL *h)                                             \
    {                                                                                        \
        return shim_add(&bo_curl_reals[i], m, h, CALLER());                                  \
    }                                                                                        \
    static CURLMcode mremove_##i(CURLM *m, CURL *h)                                          \
    {                                                                                        \
        return shim_remove(&bo_curl_reals[i], m, h);                                         \
    }                                                                                        \
    static CURLMcode mperform_##i(CURLM *m, int *running)                                    \
    {                                                                                        \
        return shim_perform(&bo_curl_reals[i], m, running);                                  \
    }                                                                                        \
    static CURLMsg *minfo_##i(CURLM *m, int *left)                                           \
    {                                                                                        \
        return shim_info_read(&bo_curl_reals[i], m, left);                                   \
    }                                                                                        \
    static CURLMcode mwait_##i(CURLM *m, struct curl_waitfd *f, unsigned n, int ms, int *nf) \
    {                                                                                        \
        return shim_wait(&bo_curl_reals[i], false, m, f, n, ms, nf);                         \
    }                                                                                        \
    static CURLMcode mpoll_##i(CURLM *m, struct curl_waitfd *f, unsigned n, int ms, int *nf) \
    {                                                                                        \
        return shim_wait(&bo_curl_reals[i], true, m, f, n, ms, nf);                          \
    }                                                                                        \
    static CURLMcode mtimeout_##i(CURLM *m, long *ms)                                        \
    {                                                                                        \
        return shim_timeout(&bo_curl_reals[i], m, ms);                                       \
    }                                                                                        \
    static CURLMcode msock_##i(CURLM *m, curl_socket_t s, int ev, int *running)              \
    {                                                                                        \
        return shim_socket_action(&bo_curl_reals[i], m, s, ev, running);                     \
    }                                                                                        \
    static CURLMcode msetopt_##i(CURLM *m, CURLMoption opt, ...)                             \
    {                                                                                        \
        va_list ap;                                                                          \
        CURLMcode rc;                                                                        \
        int saved = errno;                                                                   \
        va_start(ap, opt);                                                                   \
        errno = saved;                                                                       \
        rc = shim_msetopt(&bo_curl_reals[i], m, opt, ap, CALLER());                          \
        va_end(ap);                                                                          \
        return rc;                                                                           \
    }                                                                                        \
    static CURLMcode mcleanup_##i(CURLM *m)                                                  \
    {                                                                                        \
        return shim_mcleanup(&bo_curl_reals[i], m);                                          \
    }
#define MSLOT_ROW(i)                                                                   \
    {(void *)madd_##i,  (void *)mremove_##i,  (void *)mperform_##i, (void *)minfo_##i, \
     (void *)mwait_##i, (void *)mpoll_##i,    (void *)mtimeout_##i, (void *)msock_##i, \
     (void *)msetopt_##i, (void *)mcleanup_##i}

BO_LIB_EACH_SLOT(MSLOT_WRAPPERS)

_Static_assert(BO_CURL_M_ADD == BO_CURL_M_FIRST && BO_CURL_M_REMOVE == BO_CURL_M_FIRST + 1 &&
                   BO_CURL_M_PERFORM == BO_CURL_M_FIRST + 2 &&
                   BO_CURL_M_INFO_READ == BO_CURL_M_FIRST + 3 &&
                   BO_CURL_M_WAIT == BO_CURL_M_FIRST + 4 && BO_CURL_M_POLL == BO_CURL_M_FIRST + 5 &&
                   BO_CURL_M_TIMEOUT == BO_CURL_M_FIRST + 6 &&
                   BO_CURL_M_SOCKET_ACTION == BO_CURL_M_FIRST + 7 &&
                   BO_CURL_M_SETOPT == BO_CURL_M_FIRST + 8 &&
                   BO_CURL_M_CLEANUP == BO_CURL_M_FIRST + 9 &&
                   BO_CURL_NHOOKED == BO_CURL_M_FIRST + 10,
               "MSLOT_ROW follows BO_CURL_M_*");

static void *const g_mwrappers[BO_LIB_MAX_COPIES][BO_CURL_NHOOKED - BO_CURL_M_FIRST] = {
    BO_LIB_SLOT_LIST(MSLOT_ROW),
};

void *bo_multi_wrapper(int slot, int fn)
{
    return g_mwrappers[slot][fn - BO_CURL_M_FIRST];
}
