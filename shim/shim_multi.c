/*
 * shim_multi: the hooks of libcurl's multi interface.
 *
 * A transfer driven by a multi handle gets the promises of curl_easy_perform
 * (shim_curl.c): the same call state machine (bo_curl_xfer_*), driven here
 * from the program's own loop instead of a blocking one.
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
 * their return address, pass straight through.  A multi handle is used by
 * one thread at a time (libcurl's rule), so its record needs no lock of its
 * own; the table of records has one.
 */
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>
#undef curl_multi_setopt

#include "bo_shim.h"
#include "bo_time.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* A waiting transfer's progress callback is asked this often at most. */
#define TICK_NS (100 * BO_NS_PER_MS)

/* ---- real symbols ---------------------------------------------------- */

typedef struct multi_real {
    CURLMcode (*add)(CURLM *, CURL *);
    CURLMcode (*remove)(CURLM *, CURL *);
    CURLMcode (*perform)(CURLM *, int *);
    CURLMsg *(*info_read)(CURLM *, int *);
    CURLMcode (*wait)(CURLM *, struct curl_waitfd *, unsigned, int, int *);
    CURLMcode (*poll)(CURLM *, struct curl_waitfd *, unsigned, int, int *);
    CURLMcode (*timeout)(CURLM *, long *);
    CURLMcode (*socket_action)(CURLM *, curl_socket_t, int, int *);
    CURLMcode (*setopt)(CURLM *, CURLMoption, ...);
    CURLMcode (*cleanup)(CURLM *);
    /* the libcurl object's address range, found on first need */
    uintptr_t lo, hi;
    int range_done;
} multi_real;

static multi_real g_mreal[BO_MAX_CURLS];

void bo_multi_bind(int slot, void *const fn[BO_CURL_NFNS])
{
    multi_real *c = &g_mreal[slot];
    *(void **)&c->remove = fn[BO_CURL_M_REMOVE];
    *(void **)&c->perform = fn[BO_CURL_M_PERFORM];
    *(void **)&c->info_read = fn[BO_CURL_M_INFO_READ];
    *(void **)&c->wait = fn[BO_CURL_M_WAIT];
    *(void **)&c->poll = fn[BO_CURL_M_POLL];
    *(void **)&c->timeout = fn[BO_CURL_M_TIMEOUT];
    *(void **)&c->socket_action = fn[BO_CURL_M_SOCKET_ACTION];
    *(void **)&c->setopt = fn[BO_CURL_M_SETOPT];
    *(void **)&c->cleanup = fn[BO_CURL_M_CLEANUP];
    /* last: a bound `add` says the slot is complete (slot_of below) */
    __atomic_store_n((void **)&c->add, fn[BO_CURL_M_ADD], __ATOMIC_RELEASE);
}

typedef struct range_query {
    uintptr_t base, lo, hi;
} range_query;

static int range_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    range_query *q = data;
    (void)size;
    if (info->dlpi_addr != q->base)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t a = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type != PT_LOAD)
            continue;
        if (q->lo == 0 || a < q->lo)
            q->lo = a;
        if (a + ph->p_memsz > q->hi)
            q->hi = a + ph->p_memsz;
    }
    return 1;
}

/* Find slot's libcurl address range, once per slot; two threads that race
 * find the same. */
__attribute__((noinline, cold)) static void find_range(multi_real *mr)
{
    Dl_info info;
    struct link_map *lm = NULL;
    range_query q = {0};
    if (dladdr1((void *)mr->add, &info, (void **)&lm, RTLD_DL_LINKMAP) != 0 && lm != NULL) {
        q.base = lm->l_addr;
        bo_dl_iterate(range_cb, &q);
    }
    /* atomic: two threads that race here both store, the same values */
    __atomic_store_n(&mr->lo, q.lo, __ATOMIC_RELAXED);
    __atomic_store_n(&mr->hi, q.hi, __ATOMIC_RELAXED);
    __atomic_store_n(&mr->range_done, 1, __ATOMIC_RELEASE);
}

/* Is `ret` inside slot's libcurl, whose range is known? (lo == hi: none) */
static inline bool in_range(const multi_real *mr, const void *ret)
{
    uintptr_t lo = __atomic_load_n(&mr->lo, __ATOMIC_RELAXED);
    uintptr_t hi = __atomic_load_n(&mr->hi, __ATOMIC_RELAXED);
    return (uintptr_t)ret - lo < hi - lo;
}

/*
 * Is `ret` an address inside slot's (bound) libcurl?  Then the call comes
 * from libcurl itself (curl_easy_perform's private multi handle).
 */
static bool from_libcurl(multi_real *mr, const void *ret)
{
    if (!__atomic_load_n(&mr->range_done, __ATOMIC_ACQUIRE))
        find_range(mr);
    return in_range(mr, ret);
}

/*
 * The global scope's libcurl, every other caller's once it is known (NULL:
 * none, each caller's own is found by shim_curl.c).  Two threads that race
 * store the same values.
 */
static multi_real *global_mreal(void)
{
    static int known;
    static multi_real *global;

    if (!__atomic_load_n(&known, __ATOMIC_ACQUIRE)) {
        int s = bo_curl_global_caller_slot();
        __atomic_store_n(&global, s >= 0 ? &g_mreal[s] : NULL, __ATOMIC_RELAXED);
        __atomic_store_n(&known, 1, __ATOMIC_RELEASE);
    }
    return __atomic_load_n(&global, __ATOMIC_RELAXED);
}

/* The libcurl a caller outside every libcurl means. */
static multi_real *caller_mreal(const void *ret)
{
    multi_real *g = global_mreal();
    return g != NULL ? g : &g_mreal[bo_curl_caller_slot(ret)];
}

/*
 * The libcurl a hook's caller means.  A call from inside a libcurl (its
 * curl_easy_perform driving a private multi handle, ~7 calls a transfer)
 * is that libcurl's own: *internal tells the hook to pass it straight
 * through.  Slots are bound in order, so the first unbound one ends the
 * search; any other caller means the libcurl shim_curl.c's caller_real
 * finds for it (the global scope's at once, else its per-thread cache).
 */
__attribute__((noinline)) static multi_real *slot_search_all(const void *ret, bool *internal)
{
    for (int i = 0; i < BO_MAX_CURLS; i++) {
        multi_real *mr = &g_mreal[i];
        if (__atomic_load_n((void **)&mr->add, __ATOMIC_ACQUIRE) == NULL)
            break;
        if (from_libcurl(mr, ret)) {
            *internal = true;
            return mr;
        }
    }
    *internal = false;
    return caller_mreal(ret);
}

/* The search, with the common case first: one libcurl, its range known. */
__attribute__((noinline)) static multi_real *slot_search(const void *ret, bool *internal)
{
    multi_real *mr = &g_mreal[0];
    if (!__atomic_load_n(&mr->range_done, __ATOMIC_ACQUIRE) ||
        __atomic_load_n((void **)&g_mreal[1].add, __ATOMIC_ACQUIRE) != NULL)
        return slot_search_all(ret, internal);
    *internal = in_range(mr, ret);
    return *internal ? mr : caller_mreal(ret);
}

/* A call from inside the first slot's libcurl, the common case: a compare
 * or two (a range is known only for a bound slot). */
static inline bool internal0(const void *ret)
{
    const multi_real *mr = &g_mreal[0];
    return __atomic_load_n(&mr->range_done, __ATOMIC_ACQUIRE) && in_range(mr, ret);
}

/* ---- records --------------------------------------------------------- */

enum xstate {
    X_PASS = 0, /* not managed: in the real multi, its message passed on */
    X_ADMIT,    /* waiting for admission: not in the real multi */
    X_RUN,      /* an admitted attempt in the real multi */
    X_RETRY,    /* waiting for its retry time: not in the real multi */
    X_DONE,     /* finished in the real multi (still added there) */
    X_DETACHED  /* finished while not in the real multi */
};

typedef struct mxfer {
    CURL *h;
    struct mxfer *hnext; /* the handle index (g_xbuckets) */
    struct multi_rec *owner;
    struct mxfer *next;  /* the multi's transfers */
    struct mxfer *qnext; /* the message queue */
    enum xstate state;
    bool queued;
    bo_curl_xfer x;
    int64_t until;       /* X_ADMIT, X_RETRY: when to act */
    int64_t tick_at;     /* next ask of the progress callback */
    int code;            /* CURLcode of the last attempt */
    CURLMsg msg;         /* the program's copy, valid until the transfer is removed */
} mxfer;

typedef struct multi_rec {
    CURLM *m;
    multi_real *real;
    struct multi_rec *hnext;
    mxfer *xfers;
    mxfer *qhead, *qtail;
    int nqueued;
    int npending;        /* X_ADMIT + X_RETRY: still running for the program */
    int nactive;         /* X_RUN + X_PASS: in the real multi, not finished */
    int64_t next_due;    /* earliest `until` of the pending (INT64_MAX: none) */
    int in_real;         /* inside a real call: callbacks run, nothing is removed */
    /* CURLMOPT_TIMERFUNCTION */
    curl_multi_timer_callback timer_fn;
    void *timer_data;
    int64_t curl_timer_at; /* libcurl's timer, absolute; -1: none */
    int64_t told_at;       /* the program's timer as last set; -1: none, -2: never set */
    mxfer *spare;          /* removed transfers' records, kept for the next ones (qnext) */
    int nspare;
} multi_rec;

#define MBUCKETS 64
static multi_rec *g_mbuckets[MBUCKETS];
static pthread_mutex_t g_mlock = PTHREAD_MUTEX_INITIALIZER;
static int g_nmulti;      /* records in the table: 0 lets every call through at once */
static uint64_t g_mgen;   /* bumped on every removal (the threads' caches) */
static BO_TLS const CURLM *tl_last_m;
static BO_TLS multi_rec *tl_last_mr;
static BO_TLS uint64_t tl_last_mgen;

/* Fork: the table lock is a leaf, taken last and made anew in the child. */
void bo_shim_multi_prepare_fork(void)
{
    pthread_mutex_lock(&g_mlock);
}

void bo_shim_multi_parent_fork(void)
{
    pthread_mutex_unlock(&g_mlock);
}

void bo_shim_multi_child_fork(void)
{
    pthread_mutex_init(&g_mlock, NULL);
}

static size_t mbucket(const CURLM *m)
{
    return (size_t)((((uintptr_t)m >> 4) * 0x9e3779b97f4a7c15ULL) >> 58) % MBUCKETS;
}

static multi_rec *mrec_find(const CURLM *m)
{
    multi_rec *r;
    uint64_t gen;

    if (__atomic_load_n(&g_nmulti, __ATOMIC_ACQUIRE) == 0 || m == NULL)
        return NULL;
    gen = __atomic_load_n(&g_mgen, __ATOMIC_ACQUIRE);
    if (m == tl_last_m && gen == tl_last_mgen && tl_last_mr != NULL)
        return tl_last_mr;
    pthread_mutex_lock(&g_mlock);
    gen = g_mgen;
    for (r = g_mbuckets[mbucket(m)]; r != NULL && r->m != m; r = r->hnext) {
    }
    pthread_mutex_unlock(&g_mlock);
    if (r != NULL) {
        tl_last_m = m;
        tl_last_mr = r;
        tl_last_mgen = gen;
    }
    return r;
}

/*
 * The record of a multi handle the program uses (called from the program,
 * not from inside libcurl), created on first sight; NULL: pass through.
 */
static multi_rec *mrec_get(multi_real *real, CURLM *m, const void *ret)
{
    multi_rec *r;

    if (bo_shim_busy || m == NULL || bo_shim_config() == NULL || from_libcurl(real, ret))
        return NULL;
    if ((r = mrec_find(m)) != NULL)
        return r->real == real ? r : NULL;
    r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    r->m = m;
    r->real = real;
    r->next_due = INT64_MAX;
    r->curl_timer_at = -1;
    r->told_at = -2;
    pthread_mutex_lock(&g_mlock);
    size_t b = mbucket(m);
    r->hnext = g_mbuckets[b];
    g_mbuckets[b] = r;
    __atomic_add_fetch(&g_nmulti, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&g_mlock);
    return r;
}

/*
 * Which managed multi handle holds an easy handle (for curl_easy_cleanup,
 * which may come without curl_multi_remove_handle), under g_mlock.  The
 * transfers' lists themselves are their multi handle's thread's alone.
 */
#define XBUCKETS 1024
static mxfer *g_xbuckets[XBUCKETS];

static size_t xbucket(const CURL *h)
{
    return (size_t)((((uintptr_t)h >> 4) * 0x9e3779b97f4a7c15ULL) >> 54) % XBUCKETS;
}

static void xindex_add(mxfer *x)
{
    size_t b = xbucket(x->h);
    pthread_mutex_lock(&g_mlock);
    x->hnext = g_xbuckets[b];
    g_xbuckets[b] = x;
    pthread_mutex_unlock(&g_mlock);
}

/* Unlink x from the index (it must be there). */
static void xindex_del(mxfer *x)
{
    mxfer **pp;
    pthread_mutex_lock(&g_mlock);
    for (pp = &g_xbuckets[xbucket(x->h)]; *pp != NULL && *pp != x; pp = &(*pp)->hnext) {
    }
    if (*pp == x)
        *pp = x->hnext;
    pthread_mutex_unlock(&g_mlock);
}

static void mrec_remove(multi_rec *r)
{
    multi_rec **pp;
    pthread_mutex_lock(&g_mlock);
    for (pp = &g_mbuckets[mbucket(r->m)]; *pp != NULL; pp = &(*pp)->hnext) {
        if (*pp == r) {
            *pp = r->hnext;
            __atomic_sub_fetch(&g_nmulti, 1, __ATOMIC_RELEASE);
            __atomic_add_fetch(&g_mgen, 1, __ATOMIC_RELEASE);
            break;
        }
    }
    pthread_mutex_unlock(&g_mlock);
}

/* The managed record of (multi, real), or NULL (pass through). */
static multi_rec *mrec_of(multi_real *real, CURLM *m)
{
    multi_rec *r = mrec_find(m);
    return r != NULL && r->real == real ? r : NULL;
}

/*
 * A transfer's record: a removed transfer's, kept by its multi handle
 * (at most SPARE_MAX), else a new one; all zero either way.  A program
 * that adds and removes transfers allocates nothing once it runs.  Spare
 * records are in no index, so only the multi handle's thread sees them.
 */
#define SPARE_MAX 16

static mxfer *xfer_new(multi_rec *r)
{
    mxfer *x = r->spare;
    if (x == NULL)
        return calloc(1, sizeof *x);
    r->spare = x->qnext;
    r->nspare--;
    memset(x, 0, sizeof *x);
    return x;
}

static void xfer_free(multi_rec *r, mxfer *x)
{
    if (r->nspare >= SPARE_MAX) {
        free(x);
        return;
    }
    x->qnext = r->spare;
    r->spare = x;
    r->nspare++;
}

static mxfer *xfer_find(multi_rec *r, const CURL *h)
{
    mxfer *x;
    for (x = r->xfers; x != NULL && x->h != h; x = x->next) {
    }
    return x;
}

static void queue_msg(multi_rec *r, mxfer *x, CURLMSG kind, int code)
{
    x->msg.msg = kind;
    x->msg.easy_handle = x->h;
    x->msg.data.result = (CURLcode)code;
    x->qnext = NULL;
    x->queued = true;
    if (r->qtail != NULL)
        r->qtail->qnext = x;
    else
        r->qhead = x;
    r->qtail = x;
    r->nqueued++;
}

static void unqueue(multi_rec *r, mxfer *x)
{
    mxfer **pp, *prev = NULL;
    if (!x->queued)
        return;
    for (pp = &r->qhead; *pp != NULL; prev = *pp, pp = &(*pp)->qnext) {
        if (*pp == x) {
            *pp = x->qnext;
            if (r->qtail == x)
                r->qtail = prev;
            break;
        }
    }
    x->queued = false;
    r->nqueued--;
}

static void set_pending(multi_rec *r, mxfer *x, enum xstate st, int64_t until)
{
    if (x->state != X_ADMIT && x->state != X_RETRY)
        r->npending++;
    if (x->state == X_RUN || x->state == X_PASS)
        r->nactive--;
    x->state = st;
    x->until = until;
    if (until < r->next_due)
        r->next_due = until;
}

static void leave_pending(multi_rec *r, mxfer *x, enum xstate st)
{
    if (x->state == X_ADMIT || x->state == X_RETRY)
        r->npending--;
    if (st == X_RUN)
        r->nactive++;
    x->state = st;
}

/* The call ends while its transfer is not in the real multi: its message. */
static void finish_detached(multi_rec *r, mxfer *x, int code)
{
    leave_pending(r, x, X_DETACHED);
    queue_msg(r, x, CURLMSG_DONE, bo_curl_xfer_end(&x->x, code));
}

/*
 * Read libcurl's finished transfers (outside its callbacks only: a retried
 * one is removed from the real multi).  A retried transfer waits, its
 * message hidden; the others' messages are copied for the program, after
 * the held bytes of the attempt that stands have been handed over.
 */
static void drain(multi_rec *r)
{
    CURLMsg *m;
    int left;

    if (r->in_real)
        return;
    while ((m = r->real->info_read(r->m, &left)) != NULL) {
        CURL *h = m->easy_handle;
        CURLMSG kind = m->msg;
        int code = (int)m->data.result;
        mxfer *x = xfer_find(r, h);
        int64_t until;

        if (x == NULL)
            continue; /* not added through the shim: cannot be, nothing to report it with */
        if (x->state == X_RUN && kind == CURLMSG_DONE) {
            x->code = code;
            r->in_real++; /* the program's callbacks may run (progress, write) */
            bool retry = bo_curl_xfer_done(&x->x, code, &until);
            r->in_real--;
            if (retry) {
                r->real->remove(r->m, h);
                set_pending(r, x, X_RETRY, until);
                x->tick_at = bo_shim_now_ns() + TICK_NS;
                continue;
            }
            r->in_real++;
            code = bo_curl_xfer_end(&x->x, code);
            r->in_real--;
            r->nactive--;
            x->state = X_DONE;
        } else if (x->state == X_PASS && kind == CURLMSG_DONE) {
            r->nactive--;
            x->state = X_DONE;
        }
        if (!x->queued)
            queue_msg(r, x, kind, code);
    }
}

/*
 * Move the waiting transfers whose time came: a retry seeks admission, an
 * admitted one is added to the real multi.  Returns how many were added.
 */
static int advance(multi_rec *r)
{
    int added = 0;
    int64_t now, due = INT64_MAX;

    if (r->npending == 0 || r->in_real)
        return 0;
    now = bo_shim_now_ns();
    if (now < r->next_due && r->next_due != INT64_MAX) {
        /* nothing due; but the program may cancel a waiting transfer */
        bool ticks = false;
        for (mxfer *x = r->xfers; x != NULL && !ticks; x = x->next)
            ticks = (x->state == X_ADMIT || x->state == X_RETRY) && x->tick_at <= now;
        if (!ticks)
            return 0;
    }
    for (mxfer *x = r->xfers; x != NULL; x = x->next) {
        if (x->state != X_ADMIT && x->state != X_RETRY)
            continue;
        if (x->tick_at <= now) {
            x->tick_at = now + TICK_NS;
            r->in_real++;
            int cancel = bo_curl_xfer_tick(&x->x);
            r->in_real--;
            if (cancel) {
                if (x->x.call.have_result)
                    bo_shim_call_abandoned(x->x.sd);
                bo_curl_xfer_drop(&x->x);
                leave_pending(r, x, X_DETACHED);
                queue_msg(r, x, CURLMSG_DONE, CURLE_ABORTED_BY_CALLBACK);
                continue;
            }
        }
        if (x->until > now) {
            if (x->until < due)
                due = x->until;
            continue;
        }
        x->state = X_ADMIT;
        int64_t until = now;
        bo_shim_step rc =
            bo_shim_admit_step(x->x.sd, &x->x.call, now, &x->x.inflight, BO_POLL_ADMIT_NS, &until);
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
        CURLMcode mc = r->real->add(r->m, x->h);
        if (mc != CURLM_OK) {
            bo_shim_call_cancel(x->x.sd, &x->x.call);
            bo_curl_xfer_drop(&x->x);
            finish_detached(r, x, x->x.call.have_result ? x->code : CURLE_OUT_OF_MEMORY);
            continue;
        }
        leave_pending(r, x, X_RUN);
        added++;
    }
    r->next_due = due;
    return added;
}

/* Milliseconds (rounded up) from now until the next deadline; -1: none. */
static long due_ms(const multi_rec *r)
{
    if (r->npending == 0)
        return -1;
    int64_t left = r->next_due - bo_shim_now_ns();
    if (left <= 0)
        return 0;
    int64_t ms = (left + BO_NS_PER_MS - 1) / BO_NS_PER_MS;
    return ms > 24 * 3600 * 1000LL ? 24 * 3600 * 1000L : (long)ms;
}

/* The sooner of libcurl's timeout t (-1: none) and the shim's next deadline. */
static long clamp_ms(const multi_rec *r, long t)
{
    long d = due_ms(r);
    if (d >= 0 && (t < 0 || d < t))
        return d;
    return t;
}

/*
 * A socket_action program's timer: tell it the sooner of libcurl's and the
 * shim's, when that changed.
 */
static int tell_timer(multi_rec *r)
{
    int64_t at = r->curl_timer_at;
    if (r->npending > 0 && (at < 0 || r->next_due < at))
        at = r->next_due;
    if (r->timer_fn == NULL || at == r->told_at)
        return 0;
    r->told_at = at;
    long ms = -1;
    if (at >= 0) {
        int64_t left = at - bo_shim_now_ns();
        ms = left <= 0 ? 0 : (long)((left + BO_NS_PER_MS - 1) / BO_NS_PER_MS);
    }
    return r->timer_fn(r->m, ms, r->timer_data);
}

static int shim_timer_cb(CURLM *m, long timeout_ms, void *ud)
{
    multi_rec *r = ud;
    (void)m;
    r->curl_timer_at = timeout_ms < 0 ? -1 : bo_shim_now_ns() + (int64_t)timeout_ms * BO_NS_PER_MS;
    if (r->timer_fn == NULL)
        return 0;
    r->told_at = -2; /* libcurl asked: the program hears it even if unchanged */
    return tell_timer(r);
}

/* ---- the hooks ------------------------------------------------------- */

static CURLMcode shim_add(multi_real *real, CURLM *m, CURL *h, const void *ret)
{
    multi_rec *r = mrec_get(real, m, ret);
    mxfer *x;

    if (r == NULL || h == NULL)
        return real->add(m, h);
    if (r->in_real)
        return CURLM_RECURSIVE_API_CALL;
    if (xfer_find(r, h) != NULL)
        return CURLM_ADDED_ALREADY;
    if ((x = xfer_new(r)) == NULL)
        return CURLM_OUT_OF_MEMORY;
    x->h = h;
    struct handle_rec *rec = bo_curl_managed_rec((int)(real - g_mreal), h);
    if (rec == NULL) {
        CURLMcode mc = real->add(m, h);
        if (mc != CURLM_OK) {
            xfer_free(r, x);
            return mc;
        }
        x->state = X_PASS;
        r->nactive++;
    } else {
        bo_curl_xfer_begin(&x->x, rec);
        x->state = X_ADMIT;
        x->until = x->x.call.start_ns;
        x->tick_at = x->until + TICK_NS;
        r->npending++;
        if (x->until < r->next_due)
            r->next_due = x->until;
    }
    x->next = r->xfers;
    r->xfers = x;
    x->owner = r;
    xindex_add(x);
    if (x->state == X_ADMIT) {
        advance(r);
        if (x->state == X_ADMIT)
            tell_timer(r); /* a socket_action program wakes for its admission */
    }
    return CURLM_OK;
}

static CURLMcode shim_remove(multi_real *real, CURLM *m, CURL *h)
{
    multi_rec *r = mrec_of(real, m);
    mxfer *x, **pp;
    CURLMcode mc = CURLM_OK;

    if (r == NULL || (x = xfer_find(r, h)) == NULL)
        return real->remove(m, h);
    if (r->in_real)
        return CURLM_RECURSIVE_API_CALL;
    switch (x->state) {
    case X_PASS:
    case X_DONE:
        mc = real->remove(m, h);
        if (mc != CURLM_OK)
            return mc;
        if (x->state == X_PASS)
            r->nactive--;
        break;
    case X_RUN:
        mc = real->remove(m, h);
        if (mc != CURLM_OK)
            return mc;
        r->nactive--;
        bo_shim_call_cancel(x->x.sd, &x->x.call); /* the program aborted it */
        bo_curl_xfer_drop(&x->x);
        break;
    case X_ADMIT:
    case X_RETRY:
        r->npending--;
        if (x->x.call.have_result)
            bo_shim_call_abandoned(x->x.sd);
        bo_curl_xfer_drop(&x->x);
        break;
    case X_DETACHED:
        break;
    }
    unqueue(r, x);
    for (pp = &r->xfers; *pp != x; pp = &(*pp)->next) {
    }
    *pp = x->next;
    xindex_del(x);
    xfer_free(r, x);
    return CURLM_OK;
}

/*
 * After libcurl's own work: finished transfers, due retries and admissions.
 * libcurl counted its running transfers before the ones admitted here were
 * added to it: those count too, as do the waiting ones.  Left out, the last
 * transfer admitted as every other one finished made the count 0, and a
 * `while (still_running)` loop (curl -Z) ended without ever sending it.
 */
static void after_real(multi_rec *r, int *running)
{
    drain(r);
    int late = advance(r);
    if (running != NULL)
        *running += r->npending + late;
}

static CURLMcode shim_perform(multi_real *real, CURLM *m, int *running)
{
    multi_rec *r = mrec_of(real, m);
    CURLMcode mc = CURLM_OK;

    if (r == NULL || r->in_real)
        return real->perform(m, running);
    advance(r);
    int late = 0; /* added to the real multi after its last count */
    for (int pass = 0; pass < 2; pass++) {
        r->in_real++;
        mc = real->perform(m, running);
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

static CURLMcode shim_socket_action(multi_real *real, CURLM *m, curl_socket_t s, int ev,
                                    int *running)
{
    multi_rec *r = mrec_of(real, m);
    CURLMcode mc;

    if (r == NULL || r->in_real)
        return real->socket_action(m, s, ev, running);
    if (s == CURL_SOCKET_TIMEOUT)
        r->told_at = -2; /* the program's timer fired: it is set no more */
    advance(r);
    r->in_real++;
    mc = real->socket_action(m, s, ev, running);
    r->in_real--;
    if (mc != CURLM_OK)
        return mc;
    after_real(r, running);
    tell_timer(r);
    return mc;
}

static CURLMsg *shim_info_read(multi_real *real, CURLM *m, int *left)
{
    multi_rec *r = mrec_of(real, m);
    mxfer *x;

    if (r == NULL)
        return real->info_read(m, left);
    drain(r);
    if ((x = r->qhead) == NULL) {
        if (left != NULL)
            *left = 0;
        return NULL;
    }
    r->qhead = x->qnext;
    if (r->qhead == NULL)
        r->qtail = NULL;
    x->queued = false;
    r->nqueued--;
    if (left != NULL)
        *left = r->nqueued;
    return &x->msg;
}

static CURLMcode shim_timeout(multi_real *real, CURLM *m, long *ms)
{
    multi_rec *r = mrec_of(real, m);
    CURLMcode mc = real->timeout(m, ms);

    if (r != NULL && mc == CURLM_OK && ms != NULL)
        *ms = clamp_ms(r, *ms);
    return mc;
}

/*
 * curl_multi_wait and curl_multi_poll, their timeout clamped to the next
 * deadline.  While every transfer waits in the shim, libcurl's wait would
 * return at once (nothing to wait on) and the program would spin: poll,
 * which sleeps then (and curl_multi_wakeup can end), is used instead.
 */
static CURLMcode shim_wait(multi_real *real, bool is_poll, CURLM *m, struct curl_waitfd *fds,
                           unsigned nfds, int timeout_ms, int *numfds)
{
    multi_rec *r = mrec_of(real, m);

    if (r != NULL && !r->in_real && r->npending > 0) {
        long t = clamp_ms(r, timeout_ms);
        if (t < timeout_ms)
            timeout_ms = (int)t;
        if (r->nactive == 0 && nfds == 0 && r->nqueued == 0)
            is_poll = true;
    }
    return is_poll ? real->poll(m, fds, nfds, timeout_ms, numfds)
                   : real->wait(m, fds, nfds, timeout_ms, numfds);
}

/* The option's one argument, read by its type's range, to the real setopt. */
static CURLMcode forward_msetopt(multi_real *real, CURLM *m, CURLMoption opt, va_list ap)
{
    if (opt < CURLOPTTYPE_OBJECTPOINT)
        return real->setopt(m, opt, va_arg(ap, long));
    if (opt < CURLOPTTYPE_FUNCTIONPOINT)
        return real->setopt(m, opt, va_arg(ap, void *));
    if (opt < CURLOPTTYPE_OFF_T)
        return real->setopt(m, opt, va_arg(ap, void (*)(void)));
    if (opt < CURLOPTTYPE_BLOB)
        return real->setopt(m, opt, va_arg(ap, curl_off_t));
    return real->setopt(m, opt, va_arg(ap, void *));
}

static CURLMcode shim_msetopt(multi_real *real, CURLM *m, CURLMoption opt, va_list ap,
                              const void *ret)
{
    multi_rec *r = NULL;

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
            return real->setopt(m, CURLMOPT_TIMERFUNCTION, (curl_multi_timer_callback)NULL);
        CURLMcode mc = real->setopt(m, CURLMOPT_TIMERDATA, (void *)r);
        return mc != CURLM_OK ? mc : real->setopt(m, CURLMOPT_TIMERFUNCTION, shim_timer_cb);
    }
    return forward_msetopt(real, m, opt, ap);
}

static CURLMcode shim_mcleanup(multi_real *real, CURLM *m)
{
    multi_rec *r = mrec_of(real, m);

    if (r == NULL)
        return real->cleanup(m);
    if (r->in_real)
        return CURLM_RECURSIVE_API_CALL;
    mrec_remove(r);
    while (r->xfers != NULL) {
        mxfer *x = r->xfers;
        r->xfers = x->next;
        if (x->state == X_RUN) {
            bo_shim_call_cancel(x->x.sd, &x->x.call);
            bo_curl_xfer_drop(&x->x);
        } else if (x->state == X_ADMIT || x->state == X_RETRY) {
            if (x->x.call.have_result)
                bo_shim_call_abandoned(x->x.sd);
            bo_curl_xfer_drop(&x->x);
        }
        xindex_del(x);
        free(x);
    }
    while (r->spare != NULL) {
        mxfer *x = r->spare;
        r->spare = x->qnext;
        free(x);
    }
    free(r);
    return real->cleanup(m);
}

/*
 * curl_easy_cleanup of a handle still in a managed multi handle (libcurl
 * lets a program skip curl_multi_remove_handle; its own removal then comes
 * from inside libcurl and passes through): the transfer's record goes too,
 * before the handle is freed, so that no retry ever re-adds it.
 */
void bo_multi_easy_gone(void *h)
{
    mxfer *gone, **pp;
    multi_rec *from;

    if (__atomic_load_n(&g_nmulti, __ATOMIC_ACQUIRE) == 0 || h == NULL)
        return;
    pthread_mutex_lock(&g_mlock);
    for (gone = g_xbuckets[xbucket(h)]; gone != NULL && gone->h != h; gone = gone->hnext) {
    }
    pthread_mutex_unlock(&g_mlock);
    if (gone == NULL)
        return;
    /* The handle is its multi handle's, so this is that multi's thread
     * (libcurl's rule): its list is ours to change. */
    from = gone->owner;
    for (pp = &from->xfers; *pp != gone; pp = &(*pp)->next) {
    }
    *pp = gone->next;
    xindex_del(gone);
    if (gone->state == X_RUN || gone->state == X_PASS)
        from->nactive--;
    if (gone->state == X_ADMIT || gone->state == X_RETRY)
        from->npending--;
    if (gone->state == X_RUN) {
        bo_shim_call_cancel(gone->x.sd, &gone->x.call);
        bo_curl_xfer_drop(&gone->x);
    } else if (gone->state == X_ADMIT || gone->state == X_RETRY) {
        if (gone->x.call.have_result)
            bo_shim_call_abandoned(gone->x.sd);
        bo_curl_xfer_drop(&gone->x);
    }
    unqueue(from, gone);
    xfer_free(from, gone);
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
#define HOOK(ret_type, name, params, args, call)                               \
    __attribute__((noinline)) static ret_type name##_slow(const void *ret,     \
                                                          params);             \
    BO_EXPORT ret_type curl_multi_##name(params)                               \
    {                                                                          \
        if (internal0(CALLER()))                                               \
            return g_mreal[0].call;                                            \
        return name##_slow(CALLER(), args);                                    \
    }                                                                          \
    __attribute__((noinline)) static ret_type name##_slow(const void *ret, params)
#define P(...) __VA_ARGS__
/* The caller's libcurl as `real`; a call from inside libcurl goes straight to it. */
#define RESOLVE(call)                                                          \
    bool internal;                                                             \
    multi_real *real = slot_search(ret, &internal);                            \
    if (internal)                                                              \
        return real->call

HOOK(CURLMcode, add_handle, P(CURLM *m, CURL *h), P(m, h), add(m, h))
{
    RESOLVE(add(m, h));
    return shim_add(real, m, h, ret);
}

HOOK(CURLMcode, remove_handle, P(CURLM *m, CURL *h), P(m, h), remove(m, h))
{
    RESOLVE(remove(m, h));
    return shim_remove(real, m, h);
}

HOOK(CURLMcode, perform, P(CURLM *m, int *running), P(m, running), perform(m, running))
{
    RESOLVE(perform(m, running));
    return shim_perform(real, m, running);
}

HOOK(CURLMsg *, info_read, P(CURLM *m, int *left), P(m, left), info_read(m, left))
{
    RESOLVE(info_read(m, left));
    return shim_info_read(real, m, left);
}

HOOK(CURLMcode, wait,
     P(CURLM *m, struct curl_waitfd *fds, unsigned nfds, int ms, int *numfds),
     P(m, fds, nfds, ms, numfds), wait(m, fds, nfds, ms, numfds))
{
    RESOLVE(wait(m, fds, nfds, ms, numfds));
    return shim_wait(real, false, m, fds, nfds, ms, numfds);
}

HOOK(CURLMcode, poll,
     P(CURLM *m, struct curl_waitfd *fds, unsigned nfds, int ms, int *numfds),
     P(m, fds, nfds, ms, numfds), poll(m, fds, nfds, ms, numfds))
{
    RESOLVE(poll(m, fds, nfds, ms, numfds));
    return shim_wait(real, true, m, fds, nfds, ms, numfds);
}

HOOK(CURLMcode, timeout, P(CURLM *m, long *ms), P(m, ms), timeout(m, ms))
{
    RESOLVE(timeout(m, ms));
    return shim_timeout(real, m, ms);
}

HOOK(CURLMcode, socket_action, P(CURLM *m, curl_socket_t s, int ev, int *running),
     P(m, s, ev, running), socket_action(m, s, ev, running))
{
    RESOLVE(socket_action(m, s, ev, running));
    return shim_socket_action(real, m, s, ev, running);
}

HOOK(CURLMcode, cleanup, P(CURLM *m), P(m), cleanup(m))
{
    RESOLVE(cleanup(m));
    return shim_mcleanup(real, m);
}

BO_EXPORT CURLMcode curl_multi_setopt(CURLM *m, CURLMoption opt, ...)
{
    va_list ap;
    CURLMcode rc;
    const void *ret = CALLER();
    va_start(ap, opt);
    if (internal0(ret)) {
        rc = forward_msetopt(&g_mreal[0], m, opt, ap);
    } else {
        int saved = errno;
        bool internal;
        multi_real *real = slot_search(ret, &internal);
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
        return shim_add(&g_mreal[i], m, h, CALLER());                                        \
    }                                                                                        \
    static CURLMcode mremove_##i(CURLM *m, CURL *h)                                          \
    {                                                                                        \
        return shim_remove(&g_mreal[i], m, h);                                               \
    }                                                                                        \
    static CURLMcode mperform_##i(CURLM *m, int *running)                                    \
    {                                                                                        \
        return shim_perform(&g_mreal[i], m, running);                                        \
    }                                                                                        \
    static CURLMsg *minfo_##i(CURLM *m, int *left)                                           \
    {                                                                                        \
        return shim_info_read(&g_mreal[i], m, left);                                         \
    }                                                                                        \
    static CURLMcode mwait_##i(CURLM *m, struct curl_waitfd *f, unsigned n, int ms, int *nf) \
    {                                                                                        \
        return shim_wait(&g_mreal[i], false, m, f, n, ms, nf);                               \
    }                                                                                        \
    static CURLMcode mpoll_##i(CURLM *m, struct curl_waitfd *f, unsigned n, int ms, int *nf) \
    {                                                                                        \
        return shim_wait(&g_mreal[i], true, m, f, n, ms, nf);                                \
    }                                                                                        \
    static CURLMcode mtimeout_##i(CURLM *m, long *ms)                                        \
    {                                                                                        \
        return shim_timeout(&g_mreal[i], m, ms);                                             \
    }                                                                                        \
    static CURLMcode msock_##i(CURLM *m, curl_socket_t s, int ev, int *running)              \
    {                                                                                        \
        return shim_socket_action(&g_mreal[i], m, s, ev, running);                           \
    }                                                                                        \
    static CURLMcode msetopt_##i(CURLM *m, CURLMoption opt, ...)                             \
    {                                                                                        \
        va_list ap;                                                                          \
        CURLMcode rc;                                                                        \
        int saved = errno;                                                                   \
        va_start(ap, opt);                                                                   \
        errno = saved;                                                                       \
        rc = shim_msetopt(&g_mreal[i], m, opt, ap, CALLER());                                \
        va_end(ap);                                                                          \
        return rc;                                                                           \
    }                                                                                        \
    static CURLMcode mcleanup_##i(CURLM *m)                                                  \
    {                                                                                        \
        return shim_mcleanup(&g_mreal[i], m);                                                \
    }
#define MSLOT_ROW(i)                                                                       \
    {(void *)madd_##i,  (void *)mremove_##i,  (void *)mperform_##i, (void *)minfo_##i,    \
     (void *)mwait_##i, (void *)mpoll_##i,    (void *)mtimeout_##i, (void *)msock_##i,    \
     (void *)msetopt_##i, (void *)mcleanup_##i}

MSLOT_WRAPPERS(0)
MSLOT_WRAPPERS(1)
MSLOT_WRAPPERS(2)
MSLOT_WRAPPERS(3)
MSLOT_WRAPPERS(4)
MSLOT_WRAPPERS(5)
MSLOT_WRAPPERS(6)
MSLOT_WRAPPERS(7)

_Static_assert(BO_MAX_CURLS == 8, "one MSLOT_WRAPPERS line per slot");
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

static void *const g_mwrappers[BO_MAX_CURLS][BO_CURL_NHOOKED - BO_CURL_M_FIRST] = {
    MSLOT_ROW(0), MSLOT_ROW(1), MSLOT_ROW(2), MSLOT_ROW(3),
    MSLOT_ROW(4), MSLOT_ROW(5), MSLOT_ROW(6), MSLOT_ROW(7),
};

void *bo_multi_wrapper(int slot, int fn)
{
    return g_mwrappers[slot][fn - BO_CURL_M_FIRST];
}
