/*
 * easy.c: the libcurl easy hooks.
 *
 *   curl_easy_setopt     records the options the shim tracks (options.c)
 *                        and keeps the shim's callbacks in front of the
 *                        program's;
 *   curl_easy_perform    the transfer's call (xfer.c) in blocking mode:
 *                        admission through the destination's window, the
 *                        attempt, the outcome classified by policies/, the
 *                        wait, the next attempt; the program sees only the
 *                        bytes of the attempt that is finally returned;
 *   curl_easy_reset, curl_easy_duphandle, curl_easy_cleanup
 *                        keep the per-handle records right;
 *   curl_easy_getinfo    speaks of the answer the call handed over when it
 *                        was a retried attempt's (kept.c), else libcurl's.
 */
#include "libcurl/easy.h"

#include <errno.h>
#include <stdarg.h>

#include "call/call.h"
#include "core/core.h"
#include "libcurl/held.h"
#include "libcurl/kept.h"
#include "libcurl/multi.h"
#include "libcurl/options.h"
#include "libcurl/xfer.h"
#include "loader/loader.h"

static CURLcode shim_setopt(const bo_curl_real *real, CURL *h, CURLoption opt, va_list ap)
{
    bo_curl_rec *r = NULL;
    bo_curl_optval v;

    /* Recorded even inside the shim's own callbacks (a program may set
     * options from its write callback): the shim itself only calls the real
     * setopt, so this cannot recurse. */
    if (h != NULL && bo_curl_opt_tracked(opt) && bo_core_config() != NULL)
        r = bo_curl_rec_get(real, h);
    if (r != NULL && r->real != real)
        r = NULL; /* another libcurl's handle: not ours to mirror */
    if (opt < CURLOPTTYPE_OBJECTPOINT) {
        v.l = va_arg(ap, long);
        return r ? bo_curl_opt_set(r, opt, v) : real->setopt(h, opt, v.l);
    }
    if (opt < CURLOPTTYPE_FUNCTIONPOINT) {
        v.p = va_arg(ap, void *);
        return r ? bo_curl_opt_set(r, opt, v) : real->setopt(h, opt, v.p);
    }
    if (opt < CURLOPTTYPE_OFF_T) {
        v.f = va_arg(ap, void (*)(void));
        return r ? bo_curl_opt_set(r, opt, v) : real->setopt(h, opt, v.f);
    }
    if (opt < CURLOPTTYPE_BLOB) {
        v.o = va_arg(ap, curl_off_t);
        return r ? bo_curl_opt_set(r, opt, v) : real->setopt(h, opt, v.o);
    }
    struct curl_blob *b = va_arg(ap, struct curl_blob *);
    return real->setopt(h, opt, b);
}

/*
 * Wait on the program's behalf.  The shim's re-entry flag is down and the
 * handle is as the program left it (its own timeout), so that a signal
 * handler or progress callback that longjmps out leaves nothing half done.
 */
static int program_wait(bo_curl_rec *r, bo_block *sd, bo_call *call, int64_t until,
                        unsigned *inflight, bool admission)
{
    /* before the first attempt there is no result to return early: libcurl
     * itself resumes after a signal, so the wait does too */
    bo_waiter w = {.tick = NULL, .ud = r, .interruptible = call->attempts > 0};
    int rc;

    if (!r->noprogress && (r->xferinfo_fn != NULL || r->progress_fn != NULL))
        w.tick = bo_curl_ask_progress;
    bo_core_busy = 0;
    rc = admission ? bo_run_admit_wait(sd, call, until, inflight, &w) : bo_run_wait(sd, until, &w);
    bo_core_busy = 1;
    return rc;
}

/*
 * One managed call: the loop of bo_engine.h, driving the transfer's steps
 * in blocking mode.  The last attempt's result is
 * returned as is, and only its bytes reach the program.  The program's
 * CURLOPT_TIMEOUT(_MS) bounds the whole call from its start: each attempt
 * runs with what is left as its own timeout, and the engine grants a retry
 * only when its wait and another attempt fit before the deadline.  While
 * the shim waits, the program's progress callback and signals can end the
 * call with the last result (or CURLE_ABORTED_BY_CALLBACK for a cancel).
 */
static CURLcode managed_perform(bo_curl_rec *r, int *err_out)
{
    bo_curl_xfer x;
    CURLcode code = CURLE_OK;

    bo_curl_xfer_begin(&x, r);
    bo_block *sd = x.sd;
    int64_t now = x.call.start_ns;
    for (;;) {
        int64_t until;
        int rc = program_wait(r, sd, &x.call, now, &x.inflight, true);
        if (rc != 0) {
            if (rc == BO_WAIT_ABORTED) {
                code = CURLE_ABORTED_BY_CALLBACK;
                r->mode = BO_HOLD_PASS; /* the cancelled call delivers nothing */
            } else if (!x.call.have_result) {
                /* no attempt was admitted before the program's deadline */
                code = CURLE_OPERATION_TIMEDOUT;
                r->mode = BO_HOLD_PASS;
            }
            if (rc != -1)
                bo_run_abandoned(sd);
            break; /* the last result stands */
        }
        bo_curl_xfer_attempt(&x);
        code = r->real->perform(r->h);
        *err_out = errno;
        if (!bo_curl_xfer_done(&x, code, &until))
            break;
        /* The retried attempt's bytes are dropped only when the next attempt
         * starts: a signal, a cancel or the deadline before then returns
         * this result. */
        rc = program_wait(r, sd, &x.call, until, &x.inflight, false);
        if (rc != 0) {
            bo_run_abandoned(sd);
            if (rc == BO_WAIT_ABORTED) {
                code = CURLE_ABORTED_BY_CALLBACK;
                r->held_len = 0;
                r->mode = BO_HOLD_PASS;
            }
            break;
        }
        now = 0; /* the next admission reads the clock */
    }
    return (CURLcode)bo_curl_xfer_end(&x, code);
}

static CURLcode shim_perform(const bo_curl_real *real, CURL *h)
{
    bo_curl_rec *r;
    int saved = errno, err;
    CURLcode code;

    if (bo_core_busy || bo_core_config() == NULL || (r = bo_curl_rec_find(h)) == NULL ||
        r->real != real)
        return real->perform(h);
    if (bo_curl_rec_dest(r) == NULL) {
        bo_curl_attempt_reset(r);
        return real->perform(h);
    }
    bo_core_busy = 1;
    err = saved;
    code = managed_perform(r, &err);
    bo_core_busy = 0;
    errno = err;
    return code;
}

static void shim_reset(const bo_curl_real *real, CURL *h)
{
    bo_curl_rec *r = h == NULL ? NULL : bo_curl_rec_find(h);
    real->reset(h);
    if (r != NULL && r->real == real)
        bo_curl_rec_reset(r);
}

/*
 * The copy gets its own record: a copy of the recorded options (the
 * destination block is shared, as it is per destination), fresh buffers,
 * and the shim's callbacks pointing at the new record.
 */
static CURL *shim_duphandle(const bo_curl_real *real, CURL *h)
{
    CURL *dup = real->duphandle(h);
    bo_curl_rec *r;

    if (dup == NULL || (r = bo_curl_rec_find(h)) == NULL || r->real != real)
        return dup;
    if (bo_curl_rec_dup(r, dup) == NULL) {
        /* Without a record the copy would call our callbacks with the original's. */
        real->cleanup(dup);
        return NULL;
    }
    return dup;
}

static void shim_cleanup(const bo_curl_real *real, CURL *h)
{
    bo_curl_rec *r = bo_curl_rec_take(h);
    bo_multi_easy_gone(h);
    real->cleanup(h);
    bo_curl_rec_free(r);
}

/*
 * Every getinfo takes one pointer.  Only a handle whose call handed over a
 * retried attempt's answer is answered here, and only for what was kept of
 * it; every other call costs an atomic load more than libcurl's own.
 */
static CURLcode shim_getinfo(const bo_curl_real *real, CURL *h, CURLINFO info, void *arg)
{
    if (bo_curl_kept_any_shown() && h != NULL) {
        int saved = errno;
        bo_curl_rec *r = bo_curl_rec_find(h);
        bool ours = r != NULL && r->real == real && bo_curl_kept_info_of(r, info, arg);
        errno = saved;
        if (ours)
            return CURLE_OK;
    }
    return real->getinfo(h, info, arg);
}

/* ---- exported hooks -------------------------------------------------- */

/* The program's calls bound through the global scope; each finds the libcurl
 * its caller would have reached. */
#define CALLER_REAL() bo_curl_caller_real(__builtin_return_address(0))

BO_EXPORT CURLcode curl_easy_setopt(CURL *h, CURLoption opt, ...)
{
    va_list ap;
    CURLcode rc;
    int saved = errno;
    const bo_curl_real *real = CALLER_REAL();
    va_start(ap, opt);
    errno = saved;
    rc = shim_setopt(real, h, opt, ap);
    va_end(ap);
    return rc;
}

BO_EXPORT CURLcode curl_easy_perform(CURL *h)
{
    return shim_perform(CALLER_REAL(), h);
}

BO_EXPORT void curl_easy_reset(CURL *h)
{
    shim_reset(CALLER_REAL(), h);
}

BO_EXPORT CURL *curl_easy_duphandle(CURL *h)
{
    return shim_duphandle(CALLER_REAL(), h);
}

BO_EXPORT void curl_easy_cleanup(CURL *h)
{
    shim_cleanup(CALLER_REAL(), h);
}

BO_EXPORT CURLcode curl_easy_getinfo(CURL *h, CURLINFO info, ...)
{
    va_list ap;
    int saved = errno;
    const bo_curl_real *real = CALLER_REAL();
    va_start(ap, info);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    errno = saved;
    return shim_getinfo(real, h, info, arg);
}

/*
 * The wrappers handed out for one libcurl copy (dlsym through a handle, the
 * GOT of a deep-bound object): each is bound to its slot's real functions,
 * so it never calls into another copy.
 */
#define SLOT_WRAPPERS(i)                                     \
    static CURLcode perform_##i(CURL *h)                     \
    {                                                        \
        return shim_perform(&bo_curl_reals[i], h);           \
    }                                                        \
    static CURLcode setopt_##i(CURL *h, CURLoption opt, ...) \
    {                                                        \
        va_list ap;                                          \
        CURLcode rc;                                         \
        int saved = errno;                                   \
        va_start(ap, opt);                                   \
        errno = saved;                                       \
        rc = shim_setopt(&bo_curl_reals[i], h, opt, ap);     \
        va_end(ap);                                          \
        return rc;                                           \
    }                                                        \
    static void reset_##i(CURL *h)                           \
    {                                                        \
        shim_reset(&bo_curl_reals[i], h);                    \
    }                                                        \
    static CURL *duphandle_##i(CURL *h)                      \
    {                                                        \
        return shim_duphandle(&bo_curl_reals[i], h);         \
    }                                                        \
    static void cleanup_##i(CURL *h)                         \
    {                                                        \
        shim_cleanup(&bo_curl_reals[i], h);                  \
    }                                                        \
    static CURLcode getinfo_##i(CURL *h, CURLINFO info, ...) \
    {                                                        \
        va_list ap;                                          \
        int saved = errno;                                   \
        va_start(ap, info);                                  \
        void *arg = va_arg(ap, void *);                      \
        va_end(ap);                                          \
        errno = saved;                                       \
        return shim_getinfo(&bo_curl_reals[i], h, info, arg); \
    }
#define SLOT_ROW(i) {(void *)perform_##i, (void *)setopt_##i, (void *)reset_##i, \
                     (void *)duphandle_##i, (void *)cleanup_##i, (void *)getinfo_##i}

BO_LIB_EACH_SLOT(SLOT_WRAPPERS)

_Static_assert(BO_CURL_PERFORM == 0 && BO_CURL_SETOPT == 1 && BO_CURL_RESET == 2 &&
                   BO_CURL_DUPHANDLE == 3 && BO_CURL_CLEANUP == 4 && BO_CURL_GETINFO == 5 &&
                   BO_CURL_M_FIRST == 6,
               "SLOT_ROW follows BO_CURL_*");

static void *const g_wrappers[BO_LIB_MAX_COPIES][BO_CURL_M_FIRST] = {
    BO_LIB_SLOT_LIST(SLOT_ROW),
};

void *bo_curl_easy_wrapper(int slot, int fn)
{
    return g_wrappers[slot][fn];
}
