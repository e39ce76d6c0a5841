/*
 * shim_curl: the libcurl hooks of libbackoff.so.
 *
 *   curl_easy_setopt     records the URL (parsed once with libcurl's URL API),
 *                        the method, the upload source and the program's
 *                        write/header callbacks, and keeps the shim's own
 *                        callbacks in front of them;
 *   curl_easy_perform    admission through the destination's window, the
 *                        attempt, the outcome classified by policies/, the
 *                        wait, the next attempt; the program sees only the
 *                        bytes of the attempt that is finally returned;
 *   curl_easy_reset, curl_easy_duphandle, curl_easy_cleanup
 *                        keep the per-handle records right.
 *
 * libbackoff.so does not link libcurl: the program's own libcurl (the
 * OpenSSL or the GnuTLS flavour, linked or dlopen()ed later) is found at the
 * first hooked call.
 */
#define CURL_DISABLE_TYPECHECK 1
#define CURL_DISABLE_DEPRECATION 1 /* CURLOPT_HTTPPOST is still recorded */
#include <curl/curl.h>
#undef curl_easy_setopt
#undef curl_easy_getinfo

#include "bo_shim.h"
#include "bo_url.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* ---- real symbols ---------------------------------------------------- */

typedef CURLcode (*perform_fn)(CURL *);
typedef CURLcode (*setopt_fn)(CURL *, CURLoption, ...);
typedef CURLcode (*getinfo_fn)(CURL *, CURLINFO, ...);
typedef void (*reset_fn)(CURL *);
typedef CURL *(*dup_fn)(CURL *);
typedef void (*cleanup_fn)(CURL *);
typedef CURLU *(*url_fn)(void);
typedef CURLUcode (*url_set_fn)(CURLU *, CURLUPart, const char *, unsigned int);
typedef CURLUcode (*url_get_fn)(const CURLU *, CURLUPart, char **, unsigned int);
typedef void (*url_cleanup_fn)(CURLU *);
typedef void (*free_fn)(void *);

/* One libcurl copy's real functions (the order of BO_CURL_*). */
typedef struct curl_real {
    perform_fn perform;
    setopt_fn setopt;
    reset_fn reset;
    dup_fn duphandle;
    cleanup_fn cleanup;
    getinfo_fn getinfo;
    url_fn url;
    url_set_fn url_set;
    url_get_fn url_get;
    url_cleanup_fn url_cleanup;
    free_fn free;
} curl_real;

/* One per libcurl copy of the process (the slots of shim_dl.c's registry). */
static curl_real g_real[BO_MAX_CURLS];

void bo_curl_bind(int slot, void *const fn[BO_CURL_NFNS])
{
    curl_real *c = &g_real[slot];
    *(void **)&c->perform = fn[BO_CURL_PERFORM];
    *(void **)&c->setopt = fn[BO_CURL_SETOPT];
    *(void **)&c->reset = fn[BO_CURL_RESET];
    *(void **)&c->duphandle = fn[BO_CURL_DUPHANDLE];
    *(void **)&c->cleanup = fn[BO_CURL_CLEANUP];
    *(void **)&c->getinfo = fn[BO_CURL_GETINFO];
    *(void **)&c->url = fn[BO_CURL_URL];
    *(void **)&c->url_set = fn[BO_CURL_URL_SET];
    *(void **)&c->url_get = fn[BO_CURL_URL_GET];
    *(void **)&c->url_cleanup = fn[BO_CURL_URL_CLEANUP];
    *(void **)&c->free = fn[BO_CURL_FREE];
    bo_multi_bind(slot, fn);
}

static void die(const char *what, const char *name)
{
    char line[256];
    int n = snprintf(line, sizeof line, "backoff: %s %s; cannot continue\n", what, name);
    if (n > 0)
        (void)!write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    abort();
}

/* The libcurl of the global scope, when it has one: every program call that
 * reaches the exported hooks was bound to it. */
static const curl_real *g_global;
static int g_bound; /* set once resolve_curl has run */

static void resolve_curl(void)
{
    int s = bo_curl_slot_global();
    if (s >= 0)
        g_global = &g_real[s];
}

/*
 * Without a global libcurl, each thread remembers the libcurl of the last
 * callers it resolved (a small direct-mapped table by return address: a
 * module such as pycurl calls from a handful of places).
 */
#define CALLER_CACHE 16
static BO_TLS struct {
    const void *ret;
    const curl_real *real;
} tl_callers[CALLER_CACHE];

/*
 * The libcurl an exported hook's caller was bound to without the shim: the
 * global scope's, else the one of the caller's own object (a module loaded
 * RTLD_LOCAL, such as python3-pycurl's).  Aborts loudly when no libcurl is
 * loaded: continuing would crash later.
 */
static const curl_real *caller_real(const void *ret)
{
    /* once resolved, the global scope's libcurl is every caller's */
    if (__atomic_load_n(&g_bound, __ATOMIC_ACQUIRE) && g_global != NULL)
        return g_global;
    int saved = errno;
    bo_shim_once(&g_bound, resolve_curl);
    if (g_global != NULL)
        return g_global;
    size_t i = ((uintptr_t)ret >> 2) % CALLER_CACHE;
    if (tl_callers[i].ret == ret && tl_callers[i].real != NULL)
        return tl_callers[i].real;
    int s = bo_curl_slot_for_caller(ret);
    errno = saved;
    if (s < 0)
        die("cannot find the program's libcurl for", "curl_easy_perform");
    tl_callers[i].ret = ret;
    tl_callers[i].real = &g_real[s];
    return &g_real[s];
}

int bo_curl_caller_slot(const void *ret)
{
    return (int)(caller_real(ret) - g_real);
}

int bo_curl_global_caller_slot(void)
{
    bo_shim_once(&g_bound, resolve_curl);
    return g_global != NULL ? (int)(g_global - g_real) : -1;
}

/* ---- per-handle records ---------------------------------------------- */

enum method_kind {
    BO_METHOD_GET = 0,
    BO_METHOD_HEAD,
    BO_METHOD_POST,
    BO_METHOD_MIME,
    BO_METHOD_PUT
};
enum hold_mode { MODE_PASS = 0, MODE_HOLD };
enum seg_kind { SEG_BODY = 0, SEG_HEADER = 1 };

/* Held response bytes of one attempt: at most this much, then pass through. */
#define HOLD_MAX (64 * 1024)
#define HOLD_FIRST (4 * 1024)
#define SEG_HDR 5 /* kind byte + 4-byte length */

typedef struct handle_rec {
    CURL *h;
    const curl_real *real;    /* the libcurl copy that made the record */
    struct handle_rec *next;  /* hash chain */
    bo_shim_dest *dest;       /* NULL: pass straight through; a reference */
    /* "scheme://authority" of the last parsed URL and its destination, so a
     * program that sets a new URL per request on the same origin does not
     * pay for a parse each time */
    char origin[BO_DEST_KEY_LEN];
    size_t origin_len;        /* 0: none */
    bo_shim_dest *origin_dest; /* a reference of its own */
    uint64_t url_key;         /* bo_key_add of CURLOPT_URL's string, 0: none (CURLU) */
    /* request, as recorded from setopt */
    enum method_kind method;
    bool custom_set;
    char custom[32];
    bool postfields;          /* POSTFIELDS / COPYPOSTFIELDS: in memory */
    bool follow;              /* FOLLOWLOCATION */
    bool include_header;      /* CURLOPT_HEADER: headers in the write stream */
    /* the program's callbacks and their data */
    curl_write_callback write_fn;
    void *write_data;
    curl_write_callback header_fn;
    void *header_data;
    curl_read_callback read_fn;
    void *read_data;
    curl_seek_callback seek_fn;
    void *seek_data;
    /* the program's limits and cancel (issue 20) */
    long timeout_ms;          /* CURLOPT_TIMEOUT(_MS): 0 none */
    bool noprogress;          /* CURLOPT_NOPROGRESS (libcurl's default: 1) */
    curl_xferinfo_callback xferinfo_fn;
    curl_progress_callback progress_fn;
    void *progress_data;      /* XFERINFODATA and PROGRESSDATA are one option */
    /* per attempt */
    enum hold_mode mode;
    int block_status;         /* status of the header block being received */
    bool block_hold;          /* that status may still be retried: keep holding */
    int cached_status;        /* status_may_retry(cached_status) == cached_hold; */
    bool cached_hold;         /* cached_status 0: nothing cached (options changed) */
    uint64_t delivered;       /* bytes handed to the program in this attempt */
    bool deliver_failed;      /* the program's callback refused bytes */
    char *held;
    size_t held_len, held_cap;
    bo_rl_headers rl;         /* rate-limit headers of the last header block */
} handle_rec;

#define NBUCKETS 4096
static handle_rec *g_buckets[NBUCKETS];
static pthread_mutex_t g_rec_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t bucket_of(const CURL *h)
{
    uintptr_t x = (uintptr_t)h;
    return (size_t)(((x >> 4) * 0x9e3779b97f4a7c15ULL) >> 52) % NBUCKETS;
}

/*
 * Fork (called by shim_fork.c): the record lock is a leaf (nothing else is
 * taken while it is held), so it is taken last and, in the child, where its
 * holder may be a thread that does not exist, initialised anew.  Records
 * stay valid in the child: they belong to handles the child inherited.
 */
void bo_shim_curl_prepare_fork(void)
{
    pthread_mutex_lock(&g_rec_lock);
}

void bo_shim_curl_parent_fork(void)
{
    pthread_mutex_unlock(&g_rec_lock);
}

void bo_shim_curl_child_fork(void)
{
    pthread_mutex_init(&g_rec_lock, NULL);
}

/*
 * Each thread remembers the last handle it looked up, valid while no record
 * has been removed since (g_rec_gen): a program that drives one handle per
 * thread then takes no shared lock at all to find its record.
 */
static uint64_t g_rec_gen;
static BO_TLS const CURL *tl_last_h;
static BO_TLS handle_rec *tl_last_rec;
static BO_TLS uint64_t tl_last_gen;

static handle_rec *rec_find(const CURL *h)
{
    handle_rec *r;
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

static void rec_insert(handle_rec *r)
{
    size_t b = bucket_of(r->h);
    pthread_mutex_lock(&g_rec_lock);
    r->next = g_buckets[b];
    g_buckets[b] = r;
    pthread_mutex_unlock(&g_rec_lock);
}

static handle_rec *rec_remove(const CURL *h)
{
    handle_rec **pp, *r;
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

static size_t shim_write(char *p, size_t size, size_t nmemb, void *ud);
static size_t shim_header(char *p, size_t size, size_t nmemb, void *ud);

/* Put the shim's callbacks in front, with the record as their data. */
static void install_callbacks(handle_rec *r)
{
    r->real->setopt(r->h, CURLOPT_WRITEFUNCTION, shim_write);
    r->real->setopt(r->h, CURLOPT_WRITEDATA, (void *)r);
    r->real->setopt(r->h, CURLOPT_HEADERFUNCTION, shim_header);
    r->real->setopt(r->h, CURLOPT_HEADERDATA, (void *)r);
}

/* libcurl's defaults for everything the record mirrors. */
/* Point *slot at sd, whose reference it takes over, releasing the old one. */
static void rec_set_dest(bo_shim_dest **slot, bo_shim_dest *sd)
{
    bo_shim_dest *old = *slot;

    *slot = sd;
    bo_shim_dest_put(old);
}

static void rec_defaults(handle_rec *r)
{
    char *held = r->held;
    size_t cap = r->held_cap;
    CURL *h = r->h;
    const curl_real *real = r->real;
    handle_rec *next = r->next;

    rec_set_dest(&r->dest, NULL);
    rec_set_dest(&r->origin_dest, NULL);
    memset(r, 0, sizeof *r);
    r->h = h;
    r->real = real;
    r->next = next;
    r->held = held;
    r->held_cap = cap;
    r->write_data = stdout;   /* libcurl: fwrite() to stdout */
    r->read_data = stdin;     /* libcurl: fread() from stdin */
    r->noprogress = true;
}

/* The record of `h`, created (callbacks installed) on first sight. */
static handle_rec *rec_get(const curl_real *real, CURL *h)
{
    handle_rec *r = rec_find(h);
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

/* ---- recording the request ------------------------------------------- */

/* dst = the n bytes of src in lower case, NUL-terminated. */
static void copy_lower(char *dst, const char *src, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)src[i];
        dst[i] = (char)(c + ((unsigned char)(c - 'A') < 26u ? 'a' - 'A' : 0));
    }
    dst[n] = '\0';
}

/*
 * The destination of scheme://host:port (host as libcurl gives it, an IPv6
 * literal in brackets; port in decimal), unless BACKOFF_HOSTS leaves it
 * out: key "scheme://host:port" in lower case, built without snprintf (this
 * runs for every URL of a new origin).
 */
static void record_origin(handle_rec *r, const bo_config *cfg, const char *scheme, size_t sl,
                          const char *host, size_t hl, const char *port, size_t pl)
{
    char key[BO_DEST_KEY_LEN], name[BO_HOST_LEN];
    size_t from = 0, nl = hl;

    if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
        from = 1;
        nl = hl - 2;
    }
    if (nl >= sizeof name)
        nl = sizeof name - 1;
    if (cfg->n_hosts > 0) { /* BACKOFF_HOSTS: the name and port must be listed */
        copy_lower(name, host + from, nl);
        if (!bo_config_host_matches(cfg, name, atoi(port)))
            return;
    }
    if (sl + 3 + hl + 1 + pl >= sizeof key)
        return;
    copy_lower(key, scheme, sl);
    memcpy(key + sl, "://", 3);
    copy_lower(key + sl + 3, host, hl);
    key[sl + 3 + hl] = ':';
    memcpy(key + sl + 4 + hl, port, pl + 1);
    rec_set_dest(&r->dest, bo_shim_dest_get(key));
}

/* Length of "scheme://authority" at the start of url, or 0 when it has none. */
static size_t origin_prefix(const char *url)
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
static size_t record_url(handle_rec *r, const char *url, CURLU *given)
{
    const bo_config *cfg = bo_shim_config();
    CURLU *u = given;
    char *scheme = NULL, *host = NULL, *port = NULL;
    bo_url_origin o;

    rec_set_dest(&r->dest, NULL);
    if (cfg == NULL)
        return 0;
    if (u == NULL && bo_url_plain_origin(url, &o)) {
        char digits[8], *d = digits + sizeof digits;
        unsigned p = o.port;
        *--d = '\0';
        do {
            *--d = (char)('0' + p % 10);
            p /= 10;
        } while (p != 0);
        record_origin(r, cfg, o.scheme, o.scheme[4] == 's' ? 5 : 4, o.host, o.host_len, d,
                      (size_t)(digits + sizeof digits - 1 - d));
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
        record_origin(r, cfg, scheme, strlen(scheme), host, strlen(host), port, strlen(port));
out:
    r->real->free(scheme);
    r->real->free(host);
    r->real->free(port);
    if (given == NULL && u != NULL)
        r->real->url_cleanup(u);
    return url != NULL ? origin_prefix(url) : 0;
}

/* CURLOPT_URL: reuse the destination when the origin is the last one's. */
static void record_url_string(handle_rec *r, const char *url)
{
    size_t n = r->origin_len;

    /* the last origin, then the end of an authority: the same origin */
    if (url != NULL && n > 0 && memcmp(url, r->origin, n) == 0 &&
        (url[n] == '\0' || url[n] == '/' || url[n] == '?' || url[n] == '#')) {
        if (r->dest != r->origin_dest)
            rec_set_dest(&r->dest, bo_shim_dest_ref(r->origin_dest));
        return;
    }
    n = record_url(r, url, NULL);
    if (n > 0 && n < sizeof r->origin) {
        memcpy(r->origin, url, n);
        r->origin_len = n;
        if (r->origin_dest != r->dest)
            rec_set_dest(&r->origin_dest, bo_shim_dest_ref(r->dest));
    } else {
        r->origin_len = 0;
    }
}

static CURLcode record_long(handle_rec *r, CURLoption opt, long v)
{
    switch (opt) {
    case CURLOPT_POST:
        r->method = v ? BO_METHOD_POST : BO_METHOD_GET;
        break;
    case CURLOPT_UPLOAD:
        r->method = v ? BO_METHOD_PUT : BO_METHOD_GET;
        break;
    case CURLOPT_NOBODY:
        if (v)
            r->method = BO_METHOD_HEAD;
        else if (r->method == BO_METHOD_HEAD)
            r->method = BO_METHOD_GET;
        break;
    case CURLOPT_HTTPGET:
        if (v)
            r->method = BO_METHOD_GET;
        break;
    case CURLOPT_FOLLOWLOCATION:
        r->follow = v != 0;
        break;
    case CURLOPT_HEADER:
        r->include_header = v != 0;
        break;
    case CURLOPT_TIMEOUT: /* libcurl keeps one timeout: the last one set wins */
        r->timeout_ms = v > 0 && v < LONG_MAX / 1000 ? v * 1000 : (v > 0 ? LONG_MAX : 0);
        break;
    case CURLOPT_TIMEOUT_MS:
        r->timeout_ms = v > 0 ? v : 0;
        break;
    case CURLOPT_NOPROGRESS:
        r->noprogress = v != 0;
        break;
    default:
        break;
    }
    return r->real->setopt(r->h, opt, v);
}

static CURLcode record_ptr(handle_rec *r, CURLoption opt, void *p)
{
    switch (opt) {
    case CURLOPT_WRITEDATA:
        r->write_data = p;
        return CURLE_OK;
    case CURLOPT_HEADERDATA:
        r->header_data = p;
        return CURLE_OK;
    case CURLOPT_READDATA:
        r->read_data = p;
        break;
    case CURLOPT_SEEKDATA:
        r->seek_data = p;
        break;
    case CURLOPT_PROGRESSDATA: /* == CURLOPT_XFERINFODATA */
        r->progress_data = p;
        break;
    case CURLOPT_URL:
        record_url_string(r, p);
        r->url_key = p != NULL ? bo_key_add(BO_KEY_INIT, p) : 0;
        break;
    case CURLOPT_CURLU:
        r->url_key = 0; /* not recognised across handles */
        r->origin_len = 0;
        if (p != NULL)
            (void)record_url(r, NULL, p);
        break;
    case CURLOPT_POSTFIELDS:
    case CURLOPT_COPYPOSTFIELDS:
        r->method = BO_METHOD_POST;
        r->postfields = p != NULL;
        break;
    case CURLOPT_MIMEPOST:
    case CURLOPT_HTTPPOST:
        r->method = BO_METHOD_MIME;
        break;
    case CURLOPT_CUSTOMREQUEST:
        r->custom_set = p != NULL;
        if (p != NULL)
            snprintf(r->custom, sizeof r->custom, "%s", (const char *)p);
        break;
    default:
        break;
    }
    return r->real->setopt(r->h, opt, p);
}

typedef void (*any_fn)(void);

static CURLcode record_fn(handle_rec *r, CURLoption opt, any_fn f)
{
    switch (opt) {
    case CURLOPT_WRITEFUNCTION:
        r->write_fn = (curl_write_callback)f;
        return CURLE_OK;
    case CURLOPT_HEADERFUNCTION:
        r->header_fn = (curl_write_callback)f;
        return CURLE_OK;
    case CURLOPT_READFUNCTION:
        r->read_fn = (curl_read_callback)f;
        break;
    case CURLOPT_SEEKFUNCTION:
        r->seek_fn = (curl_seek_callback)f;
        break;
    case CURLOPT_XFERINFOFUNCTION:
        r->xferinfo_fn = (curl_xferinfo_callback)f;
        break;
    case CURLOPT_PROGRESSFUNCTION:
        r->progress_fn = (curl_progress_callback)f;
        break;
    default:
        break;
    }
    return r->real->setopt(r->h, opt, f);
}

static const char *method_name(const handle_rec *r)
{
    static const char *const names[] = {"GET", "HEAD", "POST", "POST", "PUT"};
    return r->custom_set ? r->custom : names[r->method];
}

static bool has_upload(const handle_rec *r)
{
    return r->method == BO_METHOD_POST || r->method == BO_METHOD_MIME || r->method == BO_METHOD_PUT;
}

/* ---- delivering to the program --------------------------------------- */

/* Hand body bytes to the program as libcurl would have. */
static size_t deliver_body(handle_rec *r, char *p, size_t n)
{
    if (r->write_fn != NULL)
        return r->write_fn(p, 1, n, r->write_data);
    return fwrite(p, 1, n, (FILE *)r->write_data);
}

/*
 * Hand a header line to the program as libcurl would have: its header
 * callback; without one, the write function with HEADERDATA when that is
 * set; else nowhere.
 */
static size_t deliver_header(handle_rec *r, char *p, size_t n)
{
    if (r->header_fn != NULL)
        return r->header_fn(p, 1, n, r->header_data);
    if (r->header_data == NULL)
        return n;
    if (r->write_fn != NULL)
        return r->write_fn(p, 1, n, r->header_data);
    return fwrite(p, 1, n, (FILE *)r->header_data);
}

/*
 * Replay the held bytes to the program in arrival order, one callback per
 * recorded callback.  Returns 0, or -1 when the program refused bytes.
 */
static int flush_held(handle_rec *r)
{
    size_t off = 0;
    int rc = 0;

    while (off + SEG_HDR <= r->held_len) {
        unsigned char kind = (unsigned char)r->held[off];
        uint32_t len;
        memcpy(&len, r->held + off + 1, sizeof len);
        char *p = r->held + off + SEG_HDR;
        size_t got = kind == SEG_BODY ? deliver_body(r, p, len) : deliver_header(r, p, len);
        r->delivered += len;
        off += SEG_HDR + len;
        if (got != len) {
            r->deliver_failed = true;
            rc = -1;
            break;
        }
    }
    r->held_len = 0;
    return rc;
}

/* Keep bytes for later; -1 when they would pass the bound. */
static int hold(handle_rec *r, enum seg_kind kind, const char *p, size_t n)
{
    size_t need = r->held_len + SEG_HDR + n;
    if (need > HOLD_MAX)
        return -1;
    if (need > r->held_cap) {
        size_t cap = r->held_cap ? r->held_cap : HOLD_FIRST;
        while (cap < need)
            cap *= 2;
        if (cap > HOLD_MAX)
            cap = HOLD_MAX;
        char *nb = realloc(r->held, cap);
        if (nb == NULL)
            return -1;
        r->held = nb;
        r->held_cap = cap;
    }
    uint32_t len = (uint32_t)n;
    r->held[r->held_len] = (char)kind;
    memcpy(r->held + r->held_len + 1, &len, sizeof len);
    memcpy(r->held + r->held_len + SEG_HDR, p, n);
    r->held_len = need;
    return 0;
}

/*
 * Retry-After seconds (libcurl's curl_off_t) as nanoseconds, saturating: a
 * date far ahead or an absurd number must not wrap into a negative hint; the
 * engine bounds the wait by BACKOFF_CAP_MS.
 */
static int64_t retry_after_to_ns(curl_off_t seconds)
{
    if (seconds <= 0)
        return -1;
    if (seconds >= INT64_MAX / 1000000000LL)
        return INT64_MAX;
    return (int64_t)seconds * 1000000000LL;
}

static bool upload_rewindable(const handle_rec *r, long start_pos)
{
    if (!has_upload(r) || r->postfields || r->method == BO_METHOD_MIME)
        return true;
    if (r->seek_fn != NULL)
        return true;
    return r->read_fn == NULL && start_pos >= 0;
}

/*
 * May a response with this status still be retried?  Then its bytes are
 * held.  Informational responses and redirects that libcurl follows are
 * held too: the response that counts comes after them.
 */
static bool status_may_retry(const handle_rec *r, int status)
{
    const bo_config *cfg = bo_shim_config();
    if (status < 200)
        return true;
    if (status >= 300 && status < 400 && r->follow)
        return true;
    bo_attempt a = {.curl_code = BO_CURLE_OK,
                    .http_status = status,
                    .method = method_name(r),
                    .body_delivered = 0,
                    .has_upload = has_upload(r),
                    .upload_rewindable = true,
                    .request_sent = true,
                    .connect_errno = 0,
                    .quota_exhausted = true}; /* a 403 may be a spent quota: its
                                                 headers, still to come, tell */
    return bo_classify(cfg, &a).verdict == BO_VERDICT_RETRY;
}

static void note_status_line(handle_rec *r, const char *p, size_t n)
{
    if (n < 12 || p[0] != 'H' || memcmp(p, "HTTP/", 5) != 0)
        return;
    const char *sp = memchr(p, ' ', n);
    if (sp == NULL || (size_t)(sp - p) + 4 > n)
        return;
    int s = 0;
    for (int i = 1; i <= 3; i++) {
        char c = sp[i];
        if (c < '0' || c > '9')
            return;
        s = s * 10 + (c - '0');
    }
    r->block_status = s;
    if (s != r->cached_status) {
        r->cached_hold = status_may_retry(r, s);
        r->cached_status = s;
    }
    r->block_hold = r->cached_hold;
}

/* Stop holding: replay what was held, then pass everything through. */
static int commit(handle_rec *r)
{
    r->mode = MODE_PASS;
    return flush_held(r);
}

/*
 * The shim's write callback.  While the attempt may still be retried the
 * bytes are held; the first body byte of a response that will not be
 * retried commits the attempt: held bytes go out, the rest passes through.
 */
static size_t shim_write(char *p, size_t size, size_t nmemb, void *ud)
{
    handle_rec *r = ud;
    size_t n = size * nmemb, got;

    if (r->mode == MODE_HOLD) {
        if (r->include_header)
            note_status_line(r, p, n);
        if (r->block_hold && r->block_status == 403 && !bo_rl_headers_exhausted(&r->rl))
            r->block_hold = false; /* headers done: a 403 that is not a spent quota is final */
        if (r->block_hold && hold(r, SEG_BODY, p, n) == 0)
            return n;
        if (commit(r) != 0)
            return 0;
    }
    got = deliver_body(r, p, n);
    if (got <= n)
        r->delivered += got;
    return got;
}

/*
 * Could the header line starting with c be one bo_rl_header_line reads?
 * Its own first test (bo_rl_first_letter: x-ratelimit-*, x-rate-limit-*,
 * x-ms-retry-after-ms, RateLimit*, Retry-After*, Age, Date), made here so
 * that the other lines (Content-Type, ...) cost no call.
 */
static bool rl_first_letter(char c)
{
    c = (char)(c | 0x20); /* 'X' and 'x' alike; no other byte becomes x, r, a or d */
    return c == 'x' || c == 'r' || c == 'a' || c == 'd'; /* d: Date, for Retry-After dates */
}

/* The shim's header callback: notes each status line, holds or delivers. */
static size_t shim_header(char *p, size_t size, size_t nmemb, void *ud)
{
    handle_rec *r = ud;
    size_t n = size * nmemb;

    if (n > 5 && p[0] == 'H' && memcmp(p, "HTTP/", 5) == 0) {
        note_status_line(r, p, n); /* in every mode: the last one is the call's status */
        bo_rl_headers_reset(&r->rl); /* a new header block: its own quota */
    } else if (n >= 4 && rl_first_letter(p[0])) {
        bo_rl_header_line(&r->rl, p, n); /* most lines never get here */
    }
    if (r->mode == MODE_HOLD) {
        if (r->header_fn == NULL && r->header_data == NULL)
            return n; /* the program receives no headers: nothing to hold */
        if (hold(r, SEG_HEADER, p, n) == 0)
            return n;
        if (commit(r) != 0)
            return 0;
    }
    size_t got = deliver_header(r, p, n);
    r->delivered += n;
    return got;
}

/* ---- the hooks ------------------------------------------------------- */

/* The options the record mirrors; every other one goes straight through. */
static bool tracked(CURLoption opt)
{
    switch (opt) {
    case CURLOPT_POST:
    case CURLOPT_UPLOAD:
    case CURLOPT_NOBODY:
    case CURLOPT_HTTPGET:
    case CURLOPT_FOLLOWLOCATION:
    case CURLOPT_HEADER:
    case CURLOPT_WRITEDATA:
    case CURLOPT_HEADERDATA:
    case CURLOPT_READDATA:
    case CURLOPT_SEEKDATA:
    case CURLOPT_URL:
    case CURLOPT_CURLU:
    case CURLOPT_POSTFIELDS:
    case CURLOPT_COPYPOSTFIELDS:
    case CURLOPT_MIMEPOST:
    case CURLOPT_HTTPPOST:
    case CURLOPT_CUSTOMREQUEST:
    case CURLOPT_WRITEFUNCTION:
    case CURLOPT_HEADERFUNCTION:
    case CURLOPT_READFUNCTION:
    case CURLOPT_SEEKFUNCTION:
    case CURLOPT_TIMEOUT:
    case CURLOPT_TIMEOUT_MS:
    case CURLOPT_NOPROGRESS:
    case CURLOPT_PROGRESSDATA:
    case CURLOPT_XFERINFOFUNCTION:
    case CURLOPT_PROGRESSFUNCTION:
        return true;
    default:
        return false;
    }
}

static CURLcode shim_setopt(const curl_real *real, CURL *h, CURLoption opt, va_list ap)
{
    handle_rec *r = NULL;

    /* Recorded even inside the shim's own callbacks (a program may set
     * options from its write callback): the shim itself only calls the real
     * setopt, so this cannot recurse. */
    if (h != NULL && tracked(opt) && bo_shim_config() != NULL)
        r = rec_get(real, h);
    if (r != NULL && r->real != real)
        r = NULL; /* another libcurl's handle: not ours to mirror */
    if (r != NULL && opt != CURLOPT_URL && opt != CURLOPT_CURLU && opt != CURLOPT_WRITEDATA &&
        opt != CURLOPT_HEADERDATA && opt != CURLOPT_WRITEFUNCTION && opt != CURLOPT_HEADERFUNCTION)
        r->cached_status = 0; /* the method or upload may change what is retried */
    if (opt < CURLOPTTYPE_OBJECTPOINT) {
        long v = va_arg(ap, long);
        return r ? record_long(r, opt, v) : real->setopt(h, opt, v);
    }
    if (opt < CURLOPTTYPE_FUNCTIONPOINT) {
        void *v = va_arg(ap, void *);
        return r ? record_ptr(r, opt, v) : real->setopt(h, opt, v);
    }
    if (opt < CURLOPTTYPE_OFF_T) {
        any_fn v = va_arg(ap, any_fn);
        return r ? record_fn(r, opt, v) : real->setopt(h, opt, v);
    }
    if (opt < CURLOPTTYPE_BLOB) {
        curl_off_t v = va_arg(ap, curl_off_t);
        return real->setopt(h, opt, v);
    }
    struct curl_blob *v = va_arg(ap, struct curl_blob *);
    return real->setopt(h, opt, v);
}

/* Rewind the upload for another attempt; false when it cannot be. */
static bool rewind_upload(handle_rec *r, long start_pos)
{
    if (!has_upload(r) || r->postfields || r->method == BO_METHOD_MIME)
        return true;
    if (r->seek_fn != NULL)
        return r->seek_fn(r->seek_data, 0, SEEK_SET) == CURL_SEEKFUNC_OK;
    if (r->read_fn == NULL && start_pos >= 0)
        return fseek((FILE *)r->read_data, start_pos, SEEK_SET) == 0;
    return false;
}

static void attempt_reset(handle_rec *r)
{
    r->mode = r->dest != NULL ? MODE_HOLD : MODE_PASS;
    r->block_status = 0;
    r->block_hold = true;
    r->delivered = 0;
    r->deliver_failed = false;
    r->held_len = 0;
    bo_rl_headers_reset(&r->rl);
}

/*
 * The program's progress callback, asked while the shim waits between
 * attempts (at least every BO_WAIT_SLICE_NS) with the counters of the
 * attempt in flight at zero.  Non-zero: the program cancels.
 * CURL_PROGRESSFUNC_CONTINUE asks for libcurl's own meter: not a cancel.
 */
static int ask_progress(void *ud)
{
    handle_rec *r = ud;
    int rc = 0;

    if (r->noprogress)
        return 0;
    if (r->xferinfo_fn != NULL)
        rc = r->xferinfo_fn(r->progress_data, 0, 0, 0, 0);
    else if (r->progress_fn != NULL)
        rc = r->progress_fn(r->progress_data, 0.0, 0.0, 0.0, 0.0);
    return rc != 0 && rc != CURL_PROGRESSFUNC_CONTINUE;
}

/*
 * Wait on the program's behalf.  The shim's re-entry flag is down and the
 * handle is as the program left it (its own timeout), so that a signal
 * handler or progress callback that longjmps out leaves nothing half done.
 */
static int program_wait(handle_rec *r, bo_shim_dest *sd, bo_call *call, int64_t until,
                        unsigned *inflight, bool admission)
{
    /* before the first attempt there is no result to return early: libcurl
     * itself resumes after a signal, so the wait does too */
    bo_shim_waiter w = {.tick = NULL, .ud = r, .interruptible = call->attempts > 0};
    int rc;

    if (!r->noprogress && (r->xferinfo_fn != NULL || r->progress_fn != NULL))
        w.tick = ask_progress;
    bo_shim_busy = 0;
    rc = admission ? bo_shim_admit_wait(sd, call, until, inflight, &w) : bo_shim_wait(until, &w);
    bo_shim_busy = 1;
    return rc;
}

/*
 * The attempt's own timeout: what is left of the program's deadline
 * (rounded up to a whole millisecond; libcurl reads 0 as "none").
 */
static void set_attempt_timeout(handle_rec *r, int64_t deadline)
{
    int64_t left = deadline - bo_shim_now_ns();
    long ms = left <= 0 ? 1 : (long)((left + 999999) / 1000000);
    r->real->setopt(r->h, CURLOPT_TIMEOUT_MS, ms < 1 ? 1L : ms);
}

/* ---- one transfer's call, step by step (bo_shim.h) -------------------- */

struct handle_rec *bo_curl_managed_rec(int slot, void *h)
{
    handle_rec *r;
    if (bo_shim_config() == NULL || h == NULL || (r = rec_find(h)) == NULL ||
        r->real != &g_real[slot])
        return NULL;
    if (r->dest == NULL) {
        attempt_reset(r); /* as curl_easy_perform: pass the bytes through */
        return NULL;
    }
    return r;
}

/* The logical request's key: the method and CURLOPT_URL's string (0: a URL
 * set with CURLOPT_CURLU, not recognised across calls). */
static uint64_t xfer_key(const handle_rec *r)
{
    return r->url_key != 0 ? bo_key_add(r->url_key, method_name(r)) : 0;
}

/*
 * Begin one managed call: its destination, its upload's start, and the
 * program's CURLOPT_TIMEOUT(_MS) as the deadline of the whole call.
 */
void bo_curl_xfer_begin(bo_curl_xfer *x, handle_rec *r)
{
    *x = (bo_curl_xfer){.rec = r, .sd = r->dest, .deadline = INT64_MAX, .start_pos = -1};
    x->id = bo_shim_next_call_id();
    if (has_upload(r) && !r->postfields && r->method != BO_METHOD_MIME && r->seek_fn == NULL &&
        r->read_fn == NULL)
        x->start_pos = ftell((FILE *)r->read_data);
    x->rewindable = upload_rewindable(r, x->start_pos);
    int64_t now = bo_shim_now_ns();
    bo_call_begin(&x->call, now);
    /* the logical request: method and URL (bo_budget.h); a program's own
     * retry of a failure continues its attempts and time.  Its key is made
     * only when some logical request is remembered (else bo_curl_xfer_end makes
     * it, if this call ends in a failure to remember). */
    x->key = bo_shim_lineage_active() ? xfer_key(r) : 0;
    (void)bo_shim_lineage_begin(x->key, &x->call);
    if (r->timeout_ms > 0) {
        x->deadline = (int64_t)r->timeout_ms < (INT64_MAX - now) / 1000000
                          ? now + (int64_t)r->timeout_ms * 1000000
                          : INT64_MAX;
        bo_call_set_deadline(&x->call, x->deadline);
    }
}

/* An admitted attempt starts: fresh per-attempt state, what is left of the deadline. */
void bo_curl_xfer_attempt(bo_curl_xfer *x)
{
    attempt_reset(x->rec);
    if (x->deadline != INT64_MAX)
        set_attempt_timeout(x->rec, x->deadline);
}

/*
 * The attempt ended with `code`: classify it, complete it on the
 * destination.  True: retry no sooner than *until_ns (the upload is
 * rewound; the attempt's held bytes stay until the next one starts, so a
 * cancel before then returns this result).
 */
bool bo_curl_xfer_done(bo_curl_xfer *x, int code_, int64_t *until_ns)
{
    handle_rec *r = x->rec;
    const bo_config *cfg = bo_shim_config();
    const char *method = method_name(r);
    CURLcode code = (CURLcode)code_;

    if (x->deadline != INT64_MAX)
        r->real->setopt(r->h, CURLOPT_TIMEOUT_MS, r->timeout_ms);

    /* The status of the last HTTP header block libcurl handed over (only
     * HTTP status lines set it, so FTP reply codes never look like HTTP
     * ones); with FAILONERROR libcurl may stop before handing it over. */
    long status = r->block_status, req_size = 1;
    curl_off_t ra = 0;
    if (status == 0 && code == CURLE_HTTP_RETURNED_ERROR)
        r->real->getinfo(r->h, CURLINFO_RESPONSE_CODE, &status);
    if (code != CURLE_OK) /* whether it was sent matters only for failures */
        r->real->getinfo(r->h, CURLINFO_REQUEST_SIZE, &req_size);
    bo_attempt a = {.curl_code = (int)code,
                    .http_status = (int)status,
                    .method = method,
                    .body_delivered = r->delivered,
                    .has_upload = has_upload(r),
                    .upload_rewindable = x->rewindable,
                    .request_sent = req_size > 0,
                    .connect_errno = 0,
                    .quota_exhausted = bo_rl_headers_exhausted(&r->rl)};
    bo_shim_result res = {.outcome = bo_classify(cfg, &a),
                          .retry_after_ns = -1,
                          .status = (int)status,
                          .code = (int)code,
                          .ratelimit = &r->rl};
    if (res.outcome.verdict != BO_VERDICT_SUCCESS &&
        r->real->getinfo(r->h, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra > 0)
        res.retry_after_ns = retry_after_to_ns(ra);
    if (!bo_shim_complete(x->sd, &x->call, &res, x->id, method, x->inflight, until_ns))
        return false;
    if (!rewind_upload(r, x->start_pos)) {
        bo_shim_call_abandoned(x->sd); /* cannot send the body again: this result stands */
        return false;
    }
    return true;
}

/*
 * The call ends with `code`: the held bytes of the attempt that stands go
 * out, and a failure the shim would retry is remembered, so that the
 * program's own next try continues this logical request.
 */
int bo_curl_xfer_end(bo_curl_xfer *x, int code)
{
    handle_rec *r = x->rec;
    if (r->mode == MODE_HOLD && commit(r) != 0 && code == CURLE_OK)
        code = CURLE_WRITE_ERROR;
    r->mode = MODE_PASS;
    if (code != CURLE_ABORTED_BY_CALLBACK) {
        bool failed = bo_call_failed_retryable(&x->call);
        if (x->key == 0 && failed)
            x->key = xfer_key(r);
        bo_shim_lineage_end(x->key, &x->call, failed);
    }
    return code;
}

void bo_curl_xfer_drop(bo_curl_xfer *x)
{
    handle_rec *r = x->rec;
    if (x->deadline != INT64_MAX)
        r->real->setopt(r->h, CURLOPT_TIMEOUT_MS, r->timeout_ms);
    r->held_len = 0;
    r->mode = MODE_PASS;
}

int bo_curl_xfer_tick(bo_curl_xfer *x)
{
    return ask_progress(x->rec);
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
static CURLcode managed_perform(handle_rec *r, int *err_out)
{
    bo_curl_xfer x;
    CURLcode code = CURLE_OK;

    bo_curl_xfer_begin(&x, r);
    bo_shim_dest *sd = x.sd;
    int64_t now = x.call.start_ns;
    for (;;) {
        int64_t until;
        int rc = program_wait(r, sd, &x.call, now, &x.inflight, true);
        if (rc != 0) {
            if (rc == BO_WAIT_ABORTED) {
                code = CURLE_ABORTED_BY_CALLBACK;
                r->mode = MODE_PASS; /* the cancelled call delivers nothing */
            } else if (!x.call.have_result) {
                /* no attempt was admitted before the program's deadline */
                code = CURLE_OPERATION_TIMEDOUT;
                r->mode = MODE_PASS;
            }
            if (rc != -1)
                bo_shim_call_abandoned(sd);
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
            bo_shim_call_abandoned(sd);
            if (rc == BO_WAIT_ABORTED) {
                code = CURLE_ABORTED_BY_CALLBACK;
                r->held_len = 0;
                r->mode = MODE_PASS;
            }
            break;
        }
        now = 0; /* the next admission reads the clock */
    }
    return (CURLcode)bo_curl_xfer_end(&x, code);
}

static CURLcode shim_perform(const curl_real *real, CURL *h)
{
    handle_rec *r;
    int saved = errno, err;
    CURLcode code;

    if (bo_shim_busy || bo_shim_config() == NULL || (r = rec_find(h)) == NULL ||
        r->real != real)
        return real->perform(h);
    if (r->dest == NULL) {
        attempt_reset(r);
        return real->perform(h);
    }
    bo_shim_busy = 1;
    err = saved;
    code = managed_perform(r, &err);
    bo_shim_busy = 0;
    errno = err;
    return code;
}

static void shim_reset(const curl_real *real, CURL *h)
{
    handle_rec *r = h == NULL ? NULL : rec_find(h);
    real->reset(h);
    if (r != NULL && r->real == real) {
        rec_defaults(r);
        install_callbacks(r);
    }
}

/*
 * The copy gets its own record: a copy of the recorded options (the
 * destination block is shared, as it is per destination), fresh buffers,
 * and the shim's callbacks pointing at the new record.
 */
static CURL *shim_duphandle(const curl_real *real, CURL *h)
{
    CURL *dup = real->duphandle(h);
    handle_rec *r, *c;

    if (dup == NULL || (r = rec_find(h)) == NULL || r->real != real)
        return dup;
    c = malloc(sizeof *c);
    if (c == NULL)
        goto fail;
    *c = *r;
    c->h = dup;
    c->next = NULL;
    c->held = NULL;
    c->held_cap = 0;
    c->held_len = 0;
    c->mode = MODE_PASS;
    bo_shim_dest_ref(c->dest);        /* the copy holds its own references */
    bo_shim_dest_ref(c->origin_dest);
    install_callbacks(c);
    rec_insert(c);
    return dup;
fail:
    /* Without a record the copy would call our callbacks with the original's. */
    real->cleanup(dup);
    return NULL;
}

static void shim_cleanup(const curl_real *real, CURL *h)
{
    handle_rec *r = h != NULL ? rec_remove(h) : NULL;
    bo_multi_easy_gone(h);
    real->cleanup(h);
    if (r != NULL) {
        bo_shim_dest_put(r->dest);
        bo_shim_dest_put(r->origin_dest);
        free(r->held);
        free(r);
    }
}

/* ---- exported hooks -------------------------------------------------- */

/* The program's calls bound through the global scope; each finds the libcurl
 * its caller would have reached. */
#define CALLER_REAL() caller_real(__builtin_return_address(0))

BO_EXPORT CURLcode curl_easy_setopt(CURL *h, CURLoption opt, ...)
{
    va_list ap;
    CURLcode rc;
    int saved = errno;
    const curl_real *real = CALLER_REAL();
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

/*
 * The wrappers handed out for one libcurl copy (dlsym through a handle, the
 * GOT of a deep-bound object): each is bound to its slot's real functions,
 * so it never calls into another copy.
 */
#define SLOT_WRAPPERS(i)                                                       \
    static CURLcode perform_##i(CURL *h)                                       \
    {                                                                          \
        return shim_perform(&g_real[i], h);                                    \
    }                                                                          \
    static CURLcode setopt_##i(CURL *h, CURLoption opt, ...)                   \
    {                                                                          \
        va_list ap;                                                            \
        CURLcode rc;                                                           \
        int saved = errno;                                                     \
        va_start(ap, opt);                                                     \
        errno = saved;                                                         \
        rc = shim_setopt(&g_real[i], h, opt, ap);                              \
        va_end(ap);                                                            \
        return rc;                                                             \
    }                                                                          \
    static void reset_##i(CURL *h)                                             \
    {                                                                          \
        shim_reset(&g_real[i], h);                                             \
    }                                                                          \
    static CURL *duphandle_##i(CURL *h)                                        \
    {                                                                          \
        return shim_duphandle(&g_real[i], h);                                  \
    }                                                                          \
    static void cleanup_##i(CURL *h)                                           \
    {                                                                          \
        shim_cleanup(&g_real[i], h);                                           \
    }
#define SLOT_ROW(i) {(void *)perform_##i, (void *)setopt_##i, (void *)reset_##i, \
                     (void *)duphandle_##i, (void *)cleanup_##i}

SLOT_WRAPPERS(0)
SLOT_WRAPPERS(1)
SLOT_WRAPPERS(2)
SLOT_WRAPPERS(3)
SLOT_WRAPPERS(4)
SLOT_WRAPPERS(5)
SLOT_WRAPPERS(6)
SLOT_WRAPPERS(7)

_Static_assert(BO_MAX_CURLS == 8, "one SLOT_WRAPPERS line per slot");
_Static_assert(BO_CURL_PERFORM == 0 && BO_CURL_SETOPT == 1 && BO_CURL_RESET == 2 &&
                   BO_CURL_DUPHANDLE == 3 && BO_CURL_CLEANUP == 4 && BO_CURL_M_FIRST == 5,
               "SLOT_ROW follows BO_CURL_*");

static void *const g_wrappers[BO_MAX_CURLS][BO_CURL_M_FIRST] = {
    SLOT_ROW(0), SLOT_ROW(1), SLOT_ROW(2), SLOT_ROW(3),
    SLOT_ROW(4), SLOT_ROW(5), SLOT_ROW(6), SLOT_ROW(7),
};

void *bo_curl_wrapper(int slot, int fn)
{
    if (fn >= BO_CURL_M_FIRST)
        return bo_multi_wrapper(slot, fn);
    return g_wrappers[slot][fn];
}
