/*
 * options.c: the records of the easy handles and the options the shim
 * tracks on them (options.h).  A handle's URL is read once, where it is
 * set, into its destination (a block of dest/), so that a call never looks
 * a destination up.
 */
#include "libcurl/options.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "bo_budget.h"
#include "bo_url.h"
#include "core/core.h"
#include "libcurl/libcurl.h"
#include "libcurl/held.h"
#include "libcurl/kept.h"

#define NBUCKETS 4096
static bo_curl_rec *g_buckets[NBUCKETS];
static pthread_mutex_t g_rec_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t bucket_of(const CURL *h)
{
    uintptr_t x = (uintptr_t)h;
    return (size_t)(((x >> 4) * 0x9e3779b97f4a7c15ULL) >> 52) % NBUCKETS;
}

/*
 * Each thread remembers the last handle it looked up, valid while no record
 * has been removed since (g_rec_gen): a program that drives one handle per
 * thread then takes no shared lock at all to find its record.
 */
static uint64_t g_rec_gen;
static BO_TLS const CURL *tl_last_h;
static BO_TLS bo_curl_rec *tl_last_rec;
static BO_TLS uint64_t tl_last_gen;

bo_curl_rec *bo_curl_rec_find(const CURL *h)
{
    bo_curl_rec *r;
    uint64_t gen = __atomic_load_n(&g_rec_gen, __ATOMIC_ACQUIRE);

    if (h == tl_last_h && gen == tl_last_gen && tl_last_rec != NULL)
        return tl_last_rec;
    pthread_mutex_lock(&g_rec_lock);
    gen = g_rec_gen;
    for (r = g_buckets[bucket_of(h)]; r != NULL && r->h != h; r = r->next) {
    }
    pthread_mutex_unlock(&g_rec_lock);
    if (r != NULL) {
        tl_last_h = h;
        tl_last_rec = r;
        tl_last_gen = gen;
    }
    return r;
}

static void rec_insert(bo_curl_rec *r)
{
    size_t b = bucket_of(r->h);
    pthread_mutex_lock(&g_rec_lock);
    r->next = g_buckets[b];
    g_buckets[b] = r;
    pthread_mutex_unlock(&g_rec_lock);
}

static bo_curl_rec *rec_remove(const CURL *h)
{
    bo_curl_rec **pp, *r;
    pthread_mutex_lock(&g_rec_lock);
    for (pp = &g_buckets[bucket_of(h)]; (r = *pp) != NULL; pp = &r->next) {
        if (r->h == h) {
            *pp = r->next;
            __atomic_add_fetch(&g_rec_gen, 1, __ATOMIC_RELEASE);
            break;
        }
    }
    pthread_mutex_unlock(&g_rec_lock);
    return r;
}

/* Put the shim's callbacks in front, with the record as their data. */
static void install_callbacks(bo_curl_rec *r)
{
    r->real->setopt(r->h, CURLOPT_WRITEFUNCTION, bo_curl_held_write);
    r->real->setopt(r->h, CURLOPT_WRITEDATA, (void *)r);
    r->real->setopt(r->h, CURLOPT_HEADERFUNCTION, bo_curl_held_header);
    r->real->setopt(r->h, CURLOPT_HEADERDATA, (void *)r);
}

/* Point *slot at blk, whose reference it takes over, releasing the old one. */
static void rec_set_dest(bo_block **slot, bo_block *blk)
{
    bo_block *old = *slot;

    *slot = blk;
    bo_block_put(old);
}

/* libcurl's defaults for everything the record mirrors. */
static void rec_defaults(bo_curl_rec *r)
{
    char *held = r->held, *kept = r->kept;
    size_t cap = r->held_cap, kept_cap = r->kept_cap;
    CURL *h = r->h;
    const bo_curl_real *real = r->real;
    bo_curl_rec *next = r->next;

    rec_set_dest(&r->dest, NULL);
    rec_set_dest(&r->origin_dest, NULL);
    rec_set_dest(&r->unix_dest, NULL);
    bo_curl_kept_unshow(r);
    memset(r, 0, sizeof *r);
    r->h = h;
    r->real = real;
    r->next = next;
    r->held = held;
    r->held_cap = cap;
    r->kept = kept;
    r->kept_cap = kept_cap;
    r->write_data = stdout;   /* libcurl: fwrite() to stdout */
    r->read_data = stdin;     /* libcurl: fread() from stdin */
    r->noprogress = true;
    r->post_size = -1;        /* libcurl: strlen of the post data */
}

/* The record of `h`, created (callbacks installed) on first sight. */
bo_curl_rec *bo_curl_rec_get(const bo_curl_real *real, CURL *h)
{
    bo_curl_rec *r = bo_curl_rec_find(h);
    if (r != NULL)
        return r;
    r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    r->h = h;
    r->real = real;
    rec_defaults(r);
    install_callbacks(r);
    rec_insert(r);
    return r;
}

/*
 * The destination of scheme://host:port (host as libcurl gives it, an IPv6
 * literal in brackets; port in decimal), keyed as every hook family keys it
 * (bo_url_dest_key), unless BACKOFF_HOSTS leaves it out.
 */
static void record_origin(bo_curl_rec *r, const bo_config *cfg, const char *scheme, size_t sl,
                          const char *host, size_t hl, unsigned port)
{
    char key[BO_DEST_KEY_LEN];

    if (bo_url_dest_key(cfg, scheme, sl, host, hl, port, key, sizeof key) == 0)
        rec_set_dest(&r->dest, bo_block_get(key));
}

size_t bo_curl_origin_prefix(const char *url)
{
    /* one lookup a byte: 1 a scheme's character, 2 the end of an authority */
    static const unsigned char cls[256] = {
        [0] = 2,         ['#'] = 2,         ['+'] = 1,         ['-'] = 1,
        ['.'] = 1,       ['/'] = 2,         ['0' ... '9'] = 1, ['?'] = 2,
        ['A' ... 'Z'] = 1, ['a' ... 'z'] = 1,
    };
    const unsigned char *c = (const unsigned char *)url;

    while (cls[*c] & 1)
        c++;
    if (c == (const unsigned char *)url || c[0] != ':' || c[1] != '/' || c[2] != '/')
        return 0;
    for (c += 3; !(cls[*c] & 2); c++) {
    }
    return (size_t)(c - (const unsigned char *)url);
}

/*
 * Read the URL once, at setopt time, into its destination: a plain
 * http(s) URL by bo_url_plain_origin (policies/bo_url.c, about 400
 * instructions), any other shape by libcurl's URL API (default port filled
 * in; about 8,000).  Returns the length of the URL's "scheme://authority"
 * (0: none, or a URL given as CURLU).
 */
static size_t record_url(bo_curl_rec *r, const char *url, CURLU *given)
{
    const bo_config *cfg = bo_core_config();
    CURLU *u = given;
    char *scheme = NULL, *host = NULL, *port = NULL;
    bo_url_origin o;

    rec_set_dest(&r->dest, NULL);
    if (cfg == NULL)
        return 0;
    if (u == NULL && bo_url_plain_origin(url, &o)) {
        record_origin(r, cfg, o.scheme, o.scheme[4] == 's' ? 5 : 4, o.host, o.host_len, o.port);
        return o.prefix_len;
    }
    if (u == NULL) {
        if (url == NULL || (u = r->real->url()) == NULL)
            return 0;
        if (r->real->url_set(u, CURLUPART_URL, url,
                             CURLU_GUESS_SCHEME | CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK)
            goto out;
    }
    if (r->real->url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
        r->real->url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
        r->real->url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK)
        record_origin(r, cfg, scheme, strlen(scheme), host, strlen(host),
                      (unsigned)strtoul(port, NULL, 10));
out:
    r->real->free(scheme);
    r->real->free(host);
    r->real->free(port);
    if (given == NULL && u != NULL)
        r->real->url_cleanup(u);
    return url != NULL ? bo_curl_origin_prefix(url) : 0;
}

/* CURLOPT_URL: reuse the destination when the origin is the last one's. */
static void record_url_string(bo_curl_rec *r, const char *url)
{
    size_t n = r->origin_len;

    /* the last origin, then the end of an authority: the same origin (strncmp:
     * the URL may be shorter than the last origin, and nothing past its end
     * is read; the origin holds no NUL) */
    if (url != NULL && n > 0 && strncmp(url, r->origin, n) == 0 &&
        (url[n] == '\0' || url[n] == '/' || url[n] == '?' || url[n] == '#')) {
        if (r->dest != r->origin_dest)
            rec_set_dest(&r->dest, bo_block_ref(r->origin_dest));
        return;
    }
    n = record_url(r, url, NULL);
    if (n > 0 && n < sizeof r->origin) {
        memcpy(r->origin, url, n);
        r->origin_len = n;
        if (r->origin_dest != r->dest)
            rec_set_dest(&r->origin_dest, bo_block_ref(r->dest));
    } else {
        r->origin_len = 0;
    }
}

/* ---- the tracked options: one table ----------------------------------- */

static void rec_post(bo_curl_rec *r, bo_curl_optval v)
{
    r->method = v.l ? BO_METHOD_POST : BO_METHOD_GET;
}

static void rec_upload(bo_curl_rec *r, bo_curl_optval v)
{
    r->method = v.l ? BO_METHOD_PUT : BO_METHOD_GET;
}

static void rec_nobody(bo_curl_rec *r, bo_curl_optval v)
{
    if (v.l)
        r->method = BO_METHOD_HEAD;
    else if (r->method == BO_METHOD_HEAD)
        r->method = BO_METHOD_GET;
}

static void rec_httpget(bo_curl_rec *r, bo_curl_optval v)
{
    if (v.l)
        r->method = BO_METHOD_GET;
}

static void rec_follow(bo_curl_rec *r, bo_curl_optval v)
{
    r->follow = v.l != 0;
}

static void rec_fresh(bo_curl_rec *r, bo_curl_optval v)
{
    r->fresh_connect = v.l != 0;
}

static void rec_header(bo_curl_rec *r, bo_curl_optval v)
{
    r->include_header = v.l != 0;
}

/* A timeout set in seconds, in milliseconds (0: none; saturating). */
static long ms_of_seconds(long s)
{
    return s > 0 && s < LONG_MAX / 1000 ? s * 1000 : (s > 0 ? LONG_MAX : 0);
}

/* libcurl keeps one timeout: the last one set wins. */
static void rec_timeout(bo_curl_rec *r, bo_curl_optval v)
{
    r->timeout_ms = ms_of_seconds(v.l);
}

static void rec_timeout_ms(bo_curl_rec *r, bo_curl_optval v)
{
    r->timeout_ms = v.l > 0 ? v.l : 0;
}

static void rec_connect_timeout(bo_curl_rec *r, bo_curl_optval v)
{
    r->connect_timeout_ms = ms_of_seconds(v.l);
}

static void rec_connect_timeout_ms(bo_curl_rec *r, bo_curl_optval v)
{
    r->connect_timeout_ms = v.l > 0 ? v.l : 0;
}

static void rec_low_speed_limit(bo_curl_rec *r, bo_curl_optval v)
{
    r->low_speed_limit = v.l > 0 ? v.l : 0;
}

static void rec_low_speed_time(bo_curl_rec *r, bo_curl_optval v)
{
    r->low_speed_time = v.l > 0 ? v.l : 0;
}

static void rec_noprogress(bo_curl_rec *r, bo_curl_optval v)
{
    r->noprogress = v.l != 0;
}

static void rec_writedata(bo_curl_rec *r, bo_curl_optval v)
{
    r->write_data = v.p;
}

static void rec_headerdata(bo_curl_rec *r, bo_curl_optval v)
{
    r->header_data = v.p;
}

static void rec_readdata(bo_curl_rec *r, bo_curl_optval v)
{
    r->read_data = v.p;
}

static void rec_seekdata(bo_curl_rec *r, bo_curl_optval v)
{
    r->seek_data = v.p;
}

static void rec_progressdata(bo_curl_rec *r, bo_curl_optval v)
{
    r->progress_data = v.p;
}

static void rec_url(bo_curl_rec *r, bo_curl_optval v)
{
    record_url_string(r, v.p);
    r->url_key = v.p != NULL ? bo_key_add(BO_KEY_INIT, v.p) : 0;
}

/*
 * CURLOPT_UNIX_SOCKET_PATH, CURLOPT_ABSTRACT_UNIX_SOCKET (libcurl keeps one
 * path: the last one set wins, NULL goes back to TCP): the socket is the
 * destination, keyed as the connect() hook keys it, never the URL's host
 * (curl --unix-socket PATH http://localhost/ is not localhost:80).
 */
static void rec_unix(bo_curl_rec *r, const char *path, bool abstract)
{
    char key[BO_DEST_KEY_LEN], p[sizeof ((struct sockaddr_un *)NULL)->sun_path + 1];
    const bo_config *cfg = bo_core_config();

    r->unix_sock = path != NULL;
    rec_set_dest(&r->unix_dest, NULL);
    if (path == NULL || cfg == NULL)
        return;
    size_t n = strnlen(path, sizeof p - 1 - abstract);
    p[0] = '\0';
    memcpy(p + abstract, path, n);
    if (bo_url_unix_key(cfg, p, n + abstract, key, sizeof key) == 0)
        rec_set_dest(&r->unix_dest, bo_block_get(key));
}

static void rec_unix_path(bo_curl_rec *r, bo_curl_optval v)
{
    rec_unix(r, v.p, false);
}

static void rec_unix_abstract(bo_curl_rec *r, bo_curl_optval v)
{
    rec_unix(r, v.p, true);
}

static void rec_curlu(bo_curl_rec *r, bo_curl_optval v)
{
    r->url_key = 0; /* not recognised across handles */
    r->origin_len = 0;
    if (v.p != NULL)
        (void)record_url(r, NULL, v.p);
}

static void rec_postfields(bo_curl_rec *r, bo_curl_optval v)
{
    r->method = BO_METHOD_POST;
    r->postfields = v.p != NULL;
    r->post_data = v.p;
    r->post_fp = 0;
}

/* libcurl copies the data now, of the size set before (or up to a NUL):
 * its fingerprint is taken now. */
static void rec_copypostfields(bo_curl_rec *r, bo_curl_optval v)
{
    rec_postfields(r, v);
    r->post_data = NULL;
    if (v.p != NULL)
        r->post_fp = bo_idem_body_fp(v.p, r->post_size >= 0 ? (size_t)r->post_size
                                                            : strlen((const char *)v.p));
}

static void rec_postfieldsize(bo_curl_rec *r, bo_curl_optval v)
{
    r->post_size = v.l;
}

static void rec_postfieldsize_large(bo_curl_rec *r, bo_curl_optval v)
{
    r->post_size = (long long)v.o;
}

static void rec_httpheader(bo_curl_rec *r, bo_curl_optval v)
{
    r->headers = v.p;
}

static void rec_mime(bo_curl_rec *r, bo_curl_optval v)
{
    (void)v;
    r->method = BO_METHOD_MIME;
}

static void rec_custom(bo_curl_rec *r, bo_curl_optval v)
{
    r->custom_set = v.p != NULL;
    if (v.p != NULL)
        snprintf(r->custom, sizeof r->custom, "%s", (const char *)v.p);
}

static void rec_writefn(bo_curl_rec *r, bo_curl_optval v)
{
    r->write_fn = (curl_write_callback)v.f;
}

static void rec_headerfn(bo_curl_rec *r, bo_curl_optval v)
{
    r->header_fn = (curl_write_callback)v.f;
}

static void rec_readfn(bo_curl_rec *r, bo_curl_optval v)
{
    r->read_fn = (curl_read_callback)v.f;
}

static void rec_seekfn(bo_curl_rec *r, bo_curl_optval v)
{
    r->seek_fn = (curl_seek_callback)v.f;
}

static void rec_xferinfofn(bo_curl_rec *r, bo_curl_optval v)
{
    r->xferinfo_fn = (curl_xferinfo_callback)v.f;
}

static void rec_progressfn(bo_curl_rec *r, bo_curl_optval v)
{
    r->progress_fn = (curl_progress_callback)v.f;
}

/*
 * How a tracked option is handled:
 *   OPT_RULES  it may change what is retried (the method, the upload, the
 *              redirects...): the record's cached verdict on a status goes;
 *   OPT_KEEP   the shim keeps it: its own callbacks stay in front of the
 *              program's, which it calls itself (held.c).
 * Every other option goes straight to libcurl.
 */
enum { OPT_RULES = 1, OPT_KEEP = 2 };

typedef struct tracked_opt {
    CURLoption opt;
    void (*record)(bo_curl_rec *r, bo_curl_optval v);
    unsigned flags;
} tracked_opt;

#define TRACKED(X)                                                                            \
    X(CURLOPT_POST, rec_post, OPT_RULES)                                                      \
    X(CURLOPT_UPLOAD, rec_upload, OPT_RULES)                                                  \
    X(CURLOPT_NOBODY, rec_nobody, OPT_RULES)                                                  \
    X(CURLOPT_HTTPGET, rec_httpget, OPT_RULES)                                                \
    X(CURLOPT_FOLLOWLOCATION, rec_follow, OPT_RULES)                                          \
    X(CURLOPT_HEADER, rec_header, OPT_RULES)                                                  \
    X(CURLOPT_FRESH_CONNECT, rec_fresh, 0)                                                    \
    X(CURLOPT_TIMEOUT, rec_timeout, OPT_RULES)                                                \
    X(CURLOPT_TIMEOUT_MS, rec_timeout_ms, OPT_RULES)                                          \
    X(CURLOPT_CONNECTTIMEOUT, rec_connect_timeout, 0)                                         \
    X(CURLOPT_CONNECTTIMEOUT_MS, rec_connect_timeout_ms, 0)                                   \
    X(CURLOPT_LOW_SPEED_LIMIT, rec_low_speed_limit, 0)                                        \
    X(CURLOPT_LOW_SPEED_TIME, rec_low_speed_time, 0)                                          \
    X(CURLOPT_NOPROGRESS, rec_noprogress, OPT_RULES)                                          \
    X(CURLOPT_WRITEDATA, rec_writedata, OPT_KEEP)                                             \
    X(CURLOPT_HEADERDATA, rec_headerdata, OPT_KEEP)                                           \
    X(CURLOPT_READDATA, rec_readdata, OPT_RULES)                                              \
    X(CURLOPT_SEEKDATA, rec_seekdata, OPT_RULES)                                              \
    X(CURLOPT_PROGRESSDATA, rec_progressdata, OPT_RULES) /* == CURLOPT_XFERINFODATA */        \
    X(CURLOPT_URL, rec_url, 0)                                                                \
    X(CURLOPT_CURLU, rec_curlu, 0)                                                            \
    X(CURLOPT_UNIX_SOCKET_PATH, rec_unix_path, OPT_RULES)                                     \
    X(CURLOPT_ABSTRACT_UNIX_SOCKET, rec_unix_abstract, OPT_RULES)                             \
    X(CURLOPT_POSTFIELDS, rec_postfields, OPT_RULES)                                          \
    X(CURLOPT_COPYPOSTFIELDS, rec_copypostfields, OPT_RULES)                                  \
    X(CURLOPT_POSTFIELDSIZE, rec_postfieldsize, 0)                                            \
    X(CURLOPT_POSTFIELDSIZE_LARGE, rec_postfieldsize_large, 0)                                \
    X(CURLOPT_HTTPHEADER, rec_httpheader, OPT_RULES) /* an Idempotency-Key changes the rules */ \
    X(CURLOPT_MIMEPOST, rec_mime, OPT_RULES)                                                  \
    X(CURLOPT_HTTPPOST, rec_mime, OPT_RULES)                                                  \
    X(CURLOPT_CUSTOMREQUEST, rec_custom, OPT_RULES)                                           \
    X(CURLOPT_WRITEFUNCTION, rec_writefn, OPT_KEEP)                                           \
    X(CURLOPT_HEADERFUNCTION, rec_headerfn, OPT_KEEP)                                         \
    X(CURLOPT_READFUNCTION, rec_readfn, OPT_RULES)                                            \
    X(CURLOPT_SEEKFUNCTION, rec_seekfn, OPT_RULES)                                            \
    X(CURLOPT_XFERINFOFUNCTION, rec_xferinfofn, OPT_RULES)                                    \
    X(CURLOPT_PROGRESSFUNCTION, rec_progressfn, OPT_RULES)

/*
 * The tracked options, one row each, and where each row is, indexed by the
 * option's number without its type's base (libcurl numbers every option
 * uniquely, so an option is found in one look, and checked).  The index
 * holds no pointer: the dynamic linker writes only the short table of rows
 * at every program's start, not a sparse table of 512.
 */
enum {
#define X(o, fn, fl) TR_##o,
    TRACKED(X)
#undef X
        TR_COUNT
};
static const tracked_opt k_tracked[TR_COUNT] = {
#define X(o, fn, fl) {(o), (fn), (fl)},
    TRACKED(X)
#undef X
};
#define OPT_INDEX(o) ((o) % 10000)
_Static_assert(TR_COUNT < 255, "a row's number and 1 fit the index's bytes");
static const unsigned char k_tracked_at[512] = {
#define X(o, fn, fl) [OPT_INDEX(o)] = TR_##o + 1,
    TRACKED(X)
#undef X
};
#undef TRACKED

static const tracked_opt *tracked(CURLoption opt)
{
    unsigned i = (unsigned)opt % 10000;
    if (i >= sizeof k_tracked_at || k_tracked_at[i] == 0)
        return NULL;
    const tracked_opt *t = &k_tracked[k_tracked_at[i] - 1];
    return t->opt == opt ? t : NULL;
}

bool bo_curl_opt_tracked(CURLoption opt)
{
    return tracked(opt) != NULL;
}

CURLcode bo_curl_opt_set(bo_curl_rec *r, CURLoption opt, bo_curl_optval v)
{
    const tracked_opt *t = tracked(opt);

    if (t != NULL) {
        if (t->flags & OPT_RULES)
            r->cached_status = 0; /* the method or upload may change what is retried */
        t->record(r, v);
        if (t->flags & OPT_KEEP)
            return CURLE_OK;
    }
    if (opt < CURLOPTTYPE_OBJECTPOINT)
        return r->real->setopt(r->h, opt, v.l);
    if (opt < CURLOPTTYPE_FUNCTIONPOINT)
        return r->real->setopt(r->h, opt, v.p);
    if (opt < CURLOPTTYPE_OFF_T)
        return r->real->setopt(r->h, opt, v.f);
    return r->real->setopt(r->h, opt, v.o);
}

/* ---- the records -------------------------------------------------------- */

/* curl_easy_reset: libcurl's defaults, the shim's callbacks in front. */
void bo_curl_rec_reset(bo_curl_rec *r)
{
    rec_defaults(r);
    install_callbacks(r);
}

bo_curl_rec *bo_curl_rec_dup(const bo_curl_rec *r, CURL *dup)
{
    bo_curl_rec *c = malloc(sizeof *c);

    if (c == NULL)
        return NULL;
    *c = *r;
    c->h = dup;
    c->next = NULL;
    c->held = NULL;
    c->held_cap = 0;
    c->held_len = 0;
    c->kept = NULL;
    c->kept_cap = c->kept_len = 0;
    c->kept_valid = c->kept_shown = false; /* the original's answer is the original's */
    c->mode = BO_HOLD_PASS;
    c->idem_added = false; /* the copy gets the program's list (libcurl copies it) */
    bo_block_ref(c->dest); /* the copy holds its own references */
    bo_block_ref(c->origin_dest);
    bo_block_ref(c->unix_dest);
    install_callbacks(c);
    rec_insert(c);
    return c;
}

bo_curl_rec *bo_curl_rec_take(const CURL *h)
{
    return h != NULL ? rec_remove(h) : NULL;
}

void bo_curl_rec_free(bo_curl_rec *r)
{
    if (r == NULL)
        return;
    bo_block_put(r->dest);
    bo_block_put(r->origin_dest);
    bo_block_put(r->unix_dest);
    bo_curl_kept_unshow(r);
    free(r->held);
    free(r->kept);
    free(r);
}

/*
 * Fork (the one list in fork/fork.c): the record lock is a leaf (nothing
 * else is taken while it is held), so it is taken last and, in the child,
 * where its holder may be a thread that does not exist, initialised anew.
 * Records stay valid in the child: they belong to handles the child
 * inherited.
 */
void bo_curl_records_prepare_fork(void)
{
    pthread_mutex_lock(&g_rec_lock);
}

void bo_curl_records_parent_fork(void)
{
    pthread_mutex_unlock(&g_rec_lock);
}

void bo_curl_records_child_fork(void)
{
    pthread_mutex_init(&g_rec_lock, NULL);
}
