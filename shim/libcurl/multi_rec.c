/*
 * multi_rec.c: the multi hooks' records (multi_rec.h): the table of the
 * managed multi handles, the records of their transfers with the one
 * setter of a transfer's state and the counts that follow from it, the
 * messages queued for the program, and the deadline the program is told.
 * A multi handle is used by one thread at a time (libcurl's rule), so its
 * record needs no lock of its own; the table of records has one.
 */
#include "libcurl/multi_rec.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bo_time.h"
#include "core/core.h"
#include "libcurl/libcurl.h"

/* ---- the table of multi handles --------------------------------------- */

#define MBUCKETS 64
static bo_multi_rec *g_mbuckets[MBUCKETS];
static pthread_mutex_t g_mlock = PTHREAD_MUTEX_INITIALIZER;
int bo_multi_nrecs;
uint64_t bo_multi_gen;
BO_TLS const CURLM *bo_multi_tl_m;
BO_TLS bo_multi_rec *bo_multi_tl_rec;
BO_TLS uint64_t bo_multi_tl_gen;

/* Fork: the table lock is a leaf, taken last and made anew in the child. */
void bo_multi_prepare_fork(void)
{
    pthread_mutex_lock(&g_mlock);
}

void bo_multi_parent_fork(void)
{
    pthread_mutex_unlock(&g_mlock);
}

void bo_multi_child_fork(void)
{
    pthread_mutex_init(&g_mlock, NULL);
}

static size_t mbucket(const CURLM *m)
{
    return (size_t)((((uintptr_t)m >> 4) * 0x9e3779b97f4a7c15ULL) >> 58) % MBUCKETS;
}

bo_multi_rec *bo_multi_rec_lookup(const CURLM *m)
{
    bo_multi_rec *r;
    uint64_t gen;

    pthread_mutex_lock(&g_mlock);
    gen = bo_multi_gen;
    for (r = g_mbuckets[mbucket(m)]; r != NULL && r->m != m; r = r->hnext) {
    }
    pthread_mutex_unlock(&g_mlock);
    if (r != NULL) {
        bo_multi_tl_m = m;
        bo_multi_tl_rec = r;
        bo_multi_tl_gen = gen;
    }
    return r;
}

bo_multi_rec *bo_multi_rec_new(bo_curl_real *real, CURLM *m)
{
    bo_multi_rec *r = calloc(1, sizeof *r);
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
    __atomic_add_fetch(&bo_multi_nrecs, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&g_mlock);
    return r;
}

/*
 * Which managed multi handle holds an easy handle (for curl_easy_cleanup,
 * which may come without curl_multi_remove_handle), under g_mlock.  The
 * transfers' lists themselves are their multi handle's thread's alone.
 */
#define XBUCKETS 1024
static bo_mxfer *g_xbuckets[XBUCKETS];

static size_t xbucket(const CURL *h)
{
    return (size_t)((((uintptr_t)h >> 4) * 0x9e3779b97f4a7c15ULL) >> 54) % XBUCKETS;
}

void bo_mxfer_index_add(bo_mxfer *x)
{
    size_t b = xbucket(x->h);
    pthread_mutex_lock(&g_mlock);
    x->hnext = g_xbuckets[b];
    g_xbuckets[b] = x;
    pthread_mutex_unlock(&g_mlock);
}

void bo_mxfer_index_del(bo_mxfer *x)
{
    bo_mxfer **pp;
    pthread_mutex_lock(&g_mlock);
    for (pp = &g_xbuckets[xbucket(x->h)]; *pp != NULL && *pp != x; pp = &(*pp)->hnext) {
    }
    if (*pp == x)
        *pp = x->hnext;
    pthread_mutex_unlock(&g_mlock);
}

void bo_multi_rec_remove(bo_multi_rec *r)
{
    bo_multi_rec **pp;
    pthread_mutex_lock(&g_mlock);
    for (pp = &g_mbuckets[mbucket(r->m)]; *pp != NULL; pp = &(*pp)->hnext) {
        if (*pp == r) {
            *pp = r->hnext;
            __atomic_sub_fetch(&bo_multi_nrecs, 1, __ATOMIC_RELEASE);
            __atomic_add_fetch(&bo_multi_gen, 1, __ATOMIC_RELEASE);
            break;
        }
    }
    pthread_mutex_unlock(&g_mlock);
}

void bo_multi_rec_free(bo_multi_rec *r)
{
    while (r->spare != NULL) {
        bo_mxfer *x = r->spare;
        r->spare = x->qnext;
        free(x);
    }
    free(r);
}

bo_mxfer *bo_mxfer_of_easy(const void *h)
{
    bo_mxfer *x;

    if (__atomic_load_n(&bo_multi_nrecs, __ATOMIC_ACQUIRE) == 0 || h == NULL)
        return NULL;
    pthread_mutex_lock(&g_mlock);
    for (x = g_xbuckets[xbucket(h)]; x != NULL && x->h != h; x = x->hnext) {
    }
    pthread_mutex_unlock(&g_mlock);
    return x;
}

/*
 * A transfer's record: a removed transfer's, kept by its multi handle
 * (at most SPARE_MAX), else a new one; all zero either way.  A program
 * that adds and removes transfers allocates nothing once it runs.  Spare
 * records are in no index, so only the multi handle's thread sees them.
 */
#define SPARE_MAX 16

bo_mxfer *bo_mxfer_new(bo_multi_rec *r)
{
    bo_mxfer *x = r->spare;
    if (x == NULL)
        return calloc(1, sizeof *x);
    r->spare = x->qnext;
    r->nspare--;
    memset(x, 0, sizeof *x);
    return x;
}

void bo_mxfer_free(bo_multi_rec *r, bo_mxfer *x)
{
    if (r->nspare >= SPARE_MAX) {
        free(x);
        return;
    }
    x->qnext = r->spare;
    r->spare = x;
    r->nspare++;
}

void bo_multi_queue(bo_multi_rec *r, bo_mxfer *x, CURLMSG kind, int code)
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

void bo_multi_unqueue(bo_multi_rec *r, bo_mxfer *x)
{
    bo_mxfer **pp, *prev = NULL;
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

CURLMsg *bo_multi_next_msg(bo_multi_rec *r, int *left)
{
    bo_mxfer *x = r->qhead;
    if (x == NULL) {
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

/* ---- the deadline the program is told ---------------------------------- */

/* Milliseconds (rounded up) from now until the next deadline; -1: none. */
static long due_ms(const bo_multi_rec *r)
{
    if (r->npending == 0)
        return -1;
    int64_t left = r->next_due - bo_core_now_ns();
    if (left <= 0)
        return 0;
    int64_t ms = (left + BO_NS_PER_MS - 1) / BO_NS_PER_MS;
    return ms > 24 * 3600 * 1000LL ? 24 * 3600 * 1000L : (long)ms;
}

long bo_multi_clamp_ms(const bo_multi_rec *r, long t)
{
    long d = due_ms(r);
    if (d >= 0 && (t < 0 || d < t))
        return d;
    return t;
}

int bo_multi_tell_timer(bo_multi_rec *r)
{
    int64_t at = r->curl_timer_at;
    if (r->npending > 0 && (at < 0 || r->next_due < at))
        at = r->next_due;
    if (r->timer_fn == NULL || at == r->told_at)
        return 0;
    r->told_at = at;
    long ms = -1;
    if (at >= 0) {
        int64_t left = at - bo_core_now_ns();
        ms = left <= 0 ? 0 : (long)((left + BO_NS_PER_MS - 1) / BO_NS_PER_MS);
    }
    return r->timer_fn(r->m, ms, r->timer_data);
}

int bo_multi_timer_cb(CURLM *m, long timeout_ms, void *ud)
{
    bo_multi_rec *r = ud;
    (void)m;
    r->curl_timer_at = timeout_ms < 0 ? -1 : bo_core_now_ns() + (int64_t)timeout_ms * BO_NS_PER_MS;
    if (r->timer_fn == NULL)
        return 0;
    r->told_at = -2; /* libcurl asked: the program hears it even if unchanged */
    return bo_multi_tell_timer(r);
}
