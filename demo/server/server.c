/*
 * demo/server/server.c: ratelimit-server, a rate-limiting HTTP/1.1 test server.
 *
 * Shape: our own accept thread owns the listening socket on 127.0.0.1 (so the
 * refuse outage can really close it and reopen it on the same port) and hands
 * every accepted socket to one of --threads libmicrohttpd daemons, each an
 * epoll event loop in its own thread.  A request that must wait (a held slot,
 * the latency model, a stall, a delay) is suspended with
 * MHD_suspend_connection and put on a deadline heap; one timer thread resumes
 * it when its time comes (a request at the closed --gate waits on a list of
 * its own, which the gate's opening empties).  So thousands of held requests
 * cost a heap entry each and no thread, and no request blocks another.  The
 * main thread only waits for signals (SIGUSR1/SIGUSR2 open and close the
 * gate), prints one stats line per second and the summary at exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <microhttpd.h>

#include "../item_body.h"
#include "../rl_lines.h"
#include "server.h"

#define MAX_HOLD_MS 3600000.0
#define INLINE_BODY_MAX 16384

enum phase { SRV_PHASE_NEW, SRV_PHASE_ADMIT, SRV_PHASE_HOLD, SRV_PHASE_RESPOND };
enum kind { SRV_KIND_REJECT, SRV_KIND_ITEM, SRV_KIND_DIGEST, SRV_KIND_TEXT, SRV_KIND_FILE };
enum method {
    SRV_METHOD_GET,
    SRV_METHOD_HEAD,
    SRV_METHOD_POST,
    SRV_METHOD_PUT,
    SRV_METHOD_PATCH,
    SRV_METHOD_OTHER
};
enum idem_state { SRV_IDEM_FREE = 0, SRV_IDEM_RUNNING, SRV_IDEM_DONE };

#define IDEM_KEY_MAX 255 /* bytes of an Idempotency-Key value (Stripe's bound) */

/* Per-request state, owned by MHD's con_cls and freed when MHD completes it. */
struct req {
    struct MHD_Connection *conn;
    enum phase phase;
    enum method method;
    enum kind kind;
    int status;
    int inflight;       /* counted in g.inflight */
    int slot;           /* holds a busy slot */
    int answered;
    long conc;          /* concurrency on arrival, itself included */
    uint64_t arrive_ms;
    uint64_t deadline;  /* for the timer heap */
    uint64_t hash;      /* FNV-1a of the request body so far */
    uint64_t body_len;
    uint64_t item_n;
    uint64_t item_size;
    long hold_ms;       /* GET /item/N?hold_ms=MS: answered MS ms later (a long poll) */
    int gated;          /* --gate: 1 released at gate_ms, 2 past the gate */
    uint64_t gate_ms;   /* ...the instant the gate opened: the request's admission time */
    double retry_after; /* the rejection's wait, seconds (exact); < 0: none */
    int64_t wall_ms;    /* wall clock at admission: the quota's and the wait's instant */
    int rl;             /* rate-limit headers (--ratelimit-headers) */
    long rl_limit;
    long rl_remaining;
    double rl_reset;    /* seconds until the window resets or the bucket is full (exact) */
    long rl_window;     /* seconds, the draft's w */
    const char *rl_name;
    const char *text;
    int file_fd1;       /* SRV_KIND_FILE: the open file's descriptor + 1 (0: none) */
    int file_html;      /* ... a .html file: Content-Type text/html (pip reads no other) */
    uint64_t file_size;
    long idem;          /* --idempotency: the key entry this request processes, + 1 (0: none) */
    uint64_t idem_seq;  /* ...and that entry's sequence number (dropped meanwhile: differs) */
    uint64_t method_hash; /* FNV-1a of the method's name, for the key's fingerprint */
    int replay;         /* the answer is a key's stored one */
};

/*
 * --idempotency: the entry of one key.  Entries are used in turn (entry seq % size), so
 * the next one to be reused always holds the oldest key; a bucket chain
 * finds a key.  A DONE entry holds what is needed to answer again: the
 * status, the kind and its parameters (the item and digest bodies are
 * functions of them, the texts are static).
 */
struct idem_entry {
    enum idem_state state;
    uint64_t seq;
    uint64_t hash;        /* of the key */
    uint64_t fingerprint; /* method, path, query and body */
    long next;            /* bucket chain: entry index, -1 at the end */
    int status;
    enum kind kind;
    const char *text;
    uint64_t digest_hash, digest_len;
    uint64_t item_n, item_size;
    char key[IDEM_KEY_MAX + 1];
};

/* Whole-process state. */
static struct {
    struct bo_srv_config cfg;
    struct timespec start;
    int port;
    int listen_fd;
    int wake[2];
    atomic_int stopping;
    struct MHD_Daemon **daemons;
    int ndaemons;
    /* admission: token bucket and busy slots */
    pthread_mutex_t adm_mu;
    double tokens;
    uint64_t tokens_ms;
    int64_t win_index;      /* fixed window: epoch seconds / window_s */
    long win_used;
    atomic_long busy;
    /* counters */
    atomic_long inflight;
    atomic_long max_inflight;
    atomic_ullong requests, ok, rejected, other, dropped, posts, puts, dup_posts, dup_puts;
    atomic_ullong patches, dup_patches;
    atomic_ullong idem_replays, idem_conflicts, idem_mismatches, idem_bad, post_resets;
    atomic_ullong posts_processed; /* POSTs and PATCHes processed, for --fault-reset-post */
    atomic_ullong items;
    atomic_ullong arrivals; /* requests that reached admission, for --fault-drop */
    /* timer heap of suspended requests */
    pthread_mutex_t heap_mu;
    pthread_cond_t heap_cv;
    struct req **heap;
    size_t nheap, capheap;
    /* --gate: the requests held while it is closed (under heap_mu) */
    int gate_open;
    struct req **gated;
    size_t ngated, capgated;
    /* X-Request-Id set */
    pthread_mutex_t ids_mu;
    uint64_t *ids;
    size_t nids, capids;
    /* --idempotency: the key table */
    pthread_mutex_t idem_mu;
    struct idem_entry *idem;
    long *idem_buckets;
    size_t nidem_buckets;   /* a power of two */
    uint64_t idem_next_seq; /* 1, 2, ...: entry (seq - 1) % idempotency_keys */
    /* --log */
    pthread_mutex_t log_mu;
    FILE *log;
} g;

/* Milliseconds since the server started, on the monotonic clock. */
static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t ns =
        (int64_t)(ts.tv_sec - g.start.tv_sec) * 1000000000 + (ts.tv_nsec - g.start.tv_nsec);
    return (uint64_t)(ns / 1000000);
}

static uint64_t outage_start_ms(void)
{
    return (uint64_t)(g.cfg.outage_at_s * 1000.0);
}

static uint64_t outage_end_ms(void)
{
    return (uint64_t)((g.cfg.outage_at_s + g.cfg.outage_for_s) * 1000.0);
}

/* The outage mode in force at time t, BO_OUTAGE_NONE outside the window. */
static enum bo_srv_outage outage_at(uint64_t t)
{
    if (g.cfg.outage_mode == BO_OUTAGE_NONE || t < outage_start_ms() || t >= outage_end_ms())
        return BO_OUTAGE_NONE;
    return g.cfg.outage_mode;
}

/* The concurrency cap at time t: the capacity schedule if any, else --max-busy. */
static long cap_at(uint64_t t)
{
    long cap = g.cfg.max_busy;
    for (int i = 0; i < g.cfg.ncapacity && g.cfg.capacity[i].at_ms <= t; i++)
        cap = g.cfg.capacity[i].max_busy;
    return cap;
}

static void note_max(atomic_long *max, long v)
{
    long cur = atomic_load(max);
    while (v > cur && !atomic_compare_exchange_weak(max, &cur, v))
        ;
}

/* ---- timer heap ---------------------------------------------------------- */

static void heap_swap(size_t a, size_t b)
{
    struct req *t = g.heap[a];
    g.heap[a] = g.heap[b];
    g.heap[b] = t;
}

/* Pushes r (heap_mu held); returns 0, or -1 when out of memory. */
static int heap_push(struct req *r)
{
    if (g.nheap == g.capheap) {
        size_t cap = g.capheap ? g.capheap * 2 : 1024;
        struct req **h = realloc(g.heap, cap * sizeof *h);
        if (!h)
            return -1;
        g.heap = h;
        g.capheap = cap;
    }
    size_t i = g.nheap++;
    g.heap[i] = r;
    while (i > 0 && g.heap[(i - 1) / 2]->deadline > g.heap[i]->deadline) {
        heap_swap(i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
    return 0;
}

/* Pops the earliest request (heap_mu held, heap not empty). */
static struct req *heap_pop(void)
{
    struct req *top = g.heap[0];
    g.heap[0] = g.heap[--g.nheap];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < g.nheap && g.heap[l]->deadline < g.heap[m]->deadline)
            m = l;
        if (r < g.nheap && g.heap[r]->deadline < g.heap[m]->deadline)
            m = r;
        if (m == i)
            break;
        heap_swap(i, m);
        i = m;
    }
    return top;
}

/*
 * Suspends r's connection until deadline (ms since start).  Returns 1 when it
 * is suspended (the handler must return MHD_YES and will be called again once
 * the timer resumes it), 0 when the server is stopping or memory is short: the
 * caller then goes on at once.  Checking stopping under heap_mu guarantees the
 * timer thread, which drains the heap when stopping, sees every suspension.
 */
static int suspend_until(struct req *r, uint64_t deadline)
{
    int suspended = 0;
    pthread_mutex_lock(&g.heap_mu);
    if (!atomic_load(&g.stopping)) {
        r->deadline = deadline;
        MHD_suspend_connection(r->conn);
        if (heap_push(r) == 0) {
            suspended = 1;
            pthread_cond_signal(&g.heap_cv);
        } else {
            MHD_resume_connection(r->conn);
        }
    }
    pthread_mutex_unlock(&g.heap_mu);
    return suspended;
}

/* Resumes connections whose deadline has come; when stopping, resumes them all
 * and ends, so that no connection is left suspended when the daemons stop. */
static void *timer_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&g.heap_mu);
    for (;;) {
        int stopping = atomic_load(&g.stopping);
        if (g.nheap == 0) {
            if (stopping)
                break;
            pthread_cond_wait(&g.heap_cv, &g.heap_mu);
            continue;
        }
        uint64_t t = now_ms();
        if (stopping || g.heap[0]->deadline <= t) {
            struct MHD_Connection *c = heap_pop()->conn;
            MHD_resume_connection(c);
            continue;
        }
        struct timespec ts;
        uint64_t wait = g.heap[0]->deadline - t;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += (time_t)(wait / 1000);
        ts.tv_nsec += (long)(wait % 1000) * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&g.heap_cv, &g.heap_mu, &ts);
    }
    pthread_mutex_unlock(&g.heap_mu);
    return NULL;
}

/* ---- the gate (--gate) ------------------------------------------------------ */

/*
 * Holds r at the closed gate: returns 1 when it is suspended there (the
 * handler must return MHD_YES; gate_set resumes it), 0 when the gate is
 * open, the server is stopping or memory is short: r goes on at once.
 */
static int gate_hold(struct req *r)
{
    int held = 0;
    size_t n = 0;
    pthread_mutex_lock(&g.heap_mu);
    if (!g.gate_open && !atomic_load(&g.stopping)) {
        if (g.ngated == g.capgated) {
            size_t cap = g.capgated ? g.capgated * 2 : 256;
            struct req **t = realloc(g.gated, cap * sizeof *t);
            if (t) {
                g.gated = t;
                g.capgated = cap;
            }
        }
        if (g.ngated < g.capgated) {
            MHD_suspend_connection(r->conn);
            g.gated[g.ngated++] = r;
            n = g.ngated;
            held = 1;
        }
    }
    pthread_mutex_unlock(&g.heap_mu);
    if (held)
        fprintf(stderr, "ratelimit-server: gate: %zu held\n", n);
    return held;
}

/* Opens (SIGUSR1) or closes (SIGUSR2) the gate; opening releases every
 * request held, each admitted as at this instant.  Also at exit (open). */
static void gate_set(int open)
{
    size_t n = 0;
    pthread_mutex_lock(&g.heap_mu);
    g.gate_open = open;
    if (open) {
        uint64_t t = now_ms();
        n = g.ngated;
        for (size_t i = 0; i < g.ngated; i++) {
            g.gated[i]->gated = 1;
            g.gated[i]->gate_ms = t;
            MHD_resume_connection(g.gated[i]->conn);
        }
        g.ngated = 0;
    }
    pthread_mutex_unlock(&g.heap_mu);
    if (open)
        fprintf(stderr, "ratelimit-server: gate opened: %zu released\n", n);
    else
        fprintf(stderr, "ratelimit-server: gate closed\n");
}

/* ---- request-id set -------------------------------------------------------- */

/* Records one processing of (method, id); returns 1 when it was seen before. */
static int id_seen(enum method m, const char *id)
{
    const char *name = m == SRV_METHOD_POST ? "POST " : m == SRV_METHOD_PUT ? "PUT " : "PATCH ";
    uint64_t key = bo_fnv1a64(BO_FNV_OFFSET, name, strlen(name));
    key = bo_fnv1a64(key, id, strlen(id));
    if (key == 0)
        key = 1;
    int seen = 0;
    pthread_mutex_lock(&g.ids_mu);
    if ((g.nids + 1) * 2 > g.capids) {
        size_t cap = g.capids ? g.capids * 2 : 4096;
        uint64_t *t = calloc(cap, sizeof *t);
        if (!t)
            goto out;
        for (size_t i = 0; i < g.capids; i++) {
            if (!g.ids[i])
                continue;
            size_t j = (size_t)(g.ids[i] & (cap - 1));
            while (t[j])
                j = (j + 1) & (cap - 1);
            t[j] = g.ids[i];
        }
        free(g.ids);
        g.ids = t;
        g.capids = cap;
    }
    size_t j = (size_t)(key & (g.capids - 1));
    while (g.ids[j] && g.ids[j] != key)
        j = (j + 1) & (g.capids - 1);
    if (g.ids[j] == key) {
        seen = 1;
    } else {
        g.ids[j] = key;
        g.nids++;
    }
out:
    pthread_mutex_unlock(&g.ids_mu);
    return seen;
}

/* ---- idempotency keys (--idempotency) ------------------------------------------ */

/* The Idempotency-Key header lines of a request: how many, and the first value. */
struct key_scan {
    const char *value;
    int count;
};

static enum MHD_Result scan_key(void *cls, enum MHD_ValueKind kind, const char *key,
                                const char *value)
{
    struct key_scan *k = cls;
    (void)kind;
    if (strcasecmp(key, "Idempotency-Key") == 0 && k->count++ == 0)
        k->value = value != NULL ? value : "";
    return MHD_YES;
}

static enum MHD_Result hash_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                const char *value)
{
    uint64_t *h = cls;
    (void)kind;
    *h = bo_fnv1a64(*h, key, strlen(key) + 1);
    *h = value != NULL ? bo_fnv1a64(*h, value, strlen(value) + 1) : bo_fnv1a64(*h, "\1", 1);
    return MHD_YES;
}

/* What a repeat of a key must match: method, path, query arguments and body. */
static uint64_t fingerprint(const struct req *r, const char *url)
{
    uint64_t h = bo_fnv1a64(BO_FNV_OFFSET, &r->method_hash, sizeof r->method_hash);
    h = bo_fnv1a64(h, url, strlen(url) + 1);
    MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, hash_arg, &h);
    h = bo_fnv1a64(h, &r->hash, sizeof r->hash);
    return bo_fnv1a64(h, &r->body_len, sizeof r->body_len);
}

/* The entry of key (idem_mu held), or -1. */
static long idem_find(const char *key, uint64_t hash)
{
    long i = g.idem_buckets[hash & (g.nidem_buckets - 1)];
    while (i >= 0 && (g.idem[i].hash != hash || strcmp(g.idem[i].key, key) != 0))
        i = g.idem[i].next;
    return i;
}

/* Frees entry i (idem_mu held): its key is forgotten. */
static void idem_drop(long i)
{
    struct idem_entry *e = &g.idem[i];
    if (e->state == SRV_IDEM_FREE)
        return;
    long *link = &g.idem_buckets[e->hash & (g.nidem_buckets - 1)];
    while (*link != i)
        link = &g.idem[*link].next;
    *link = e->next;
    e->state = SRV_IDEM_FREE;
}

/* Takes the next entry for key (idem_mu held), dropping the oldest key when
 * the table is full: the entry used longest ago. */
static long idem_take(const char *key, uint64_t hash)
{
    uint64_t seq = ++g.idem_next_seq;
    long i = (long)((seq - 1) % (uint64_t)g.cfg.idempotency_keys);
    struct idem_entry *e = &g.idem[i];
    idem_drop(i);
    memset(e, 0, sizeof *e);
    e->state = SRV_IDEM_RUNNING;
    e->seq = seq;
    e->hash = hash;
    snprintf(e->key, sizeof e->key, "%s", key);
    long *head = &g.idem_buckets[hash & (g.nidem_buckets - 1)];
    e->next = *head;
    *head = i;
    return i;
}

/* Answers r with an error of the key protocol (not stored, not processed). */
static void idem_refuse(struct req *r, int status, const char *text, atomic_ullong *counter)
{
    r->kind = SRV_KIND_TEXT;
    r->status = status;
    r->text = text;
    atomic_fetch_add(counter, 1);
}

/*
 * The key's gate, for an admitted request before it is processed: returns
 * 0 when r is to be processed (a new key is then RUNNING under r until its
 * answer is stored, idem_finish), 1 when r is answered without processing:
 * the key's stored answer (a repeat with the same fingerprint), 409 (the
 * key's first request is still being processed), 422 (the key came with
 * another request), 400 (a key that is empty, longer than IDEM_KEY_MAX or
 * given twice; or none on a POST or PATCH under --idempotency-required).
 */
static int idem_gate(struct req *r, const char *url)
{
    struct key_scan k = {NULL, 0};
    if (!g.cfg.idempotency)
        return 0;
    MHD_get_connection_values(r->conn, MHD_HEADER_KIND, scan_key, &k);
    if (k.count == 0) {
        if (g.cfg.idempotency_required &&
            (r->method == SRV_METHOD_POST || r->method == SRV_METHOD_PATCH)) {
            idem_refuse(r, MHD_HTTP_BAD_REQUEST, "Idempotency-Key is missing\n", &g.idem_bad);
            return 1;
        }
        return 0;
    }
    size_t len = strlen(k.value);
    if (k.count > 1 || len == 0 || len > IDEM_KEY_MAX) {
        idem_refuse(r, MHD_HTTP_BAD_REQUEST,
                    "Idempotency-Key is not valid: one value of 1 to 255 bytes\n", &g.idem_bad);
        return 1;
    }
    uint64_t hash = bo_fnv1a64(BO_FNV_OFFSET, k.value, len);
    uint64_t fp = fingerprint(r, url);
    pthread_mutex_lock(&g.idem_mu);
    long i = idem_find(k.value, hash);
    if (i < 0) {
        i = idem_take(k.value, hash);
        g.idem[i].fingerprint = fp;
        r->idem = i + 1;
        r->idem_seq = g.idem[i].seq;
        pthread_mutex_unlock(&g.idem_mu);
        return 0;
    }
    const struct idem_entry e = g.idem[i];
    pthread_mutex_unlock(&g.idem_mu);
    if (e.fingerprint != fp) {
        idem_refuse(r, 422 /* Unprocessable Content */,
                    "Idempotency-Key was used with another request\n", &g.idem_mismatches);
    } else if (e.state == SRV_IDEM_RUNNING) {
        idem_refuse(r, MHD_HTTP_CONFLICT,
                    "a request with this Idempotency-Key is still being processed\n",
                    &g.idem_conflicts);
    } else {
        r->status = e.status;
        r->kind = e.kind;
        r->text = e.text;
        r->hash = e.digest_hash;
        r->body_len = e.digest_len;
        r->item_n = e.item_n;
        r->item_size = e.item_size;
        r->replay = 1;
        atomic_fetch_add(&g.idem_replays, 1);
    }
    return 1;
}

/*
 * Stores the answer of the request that processed a key, once: from now on
 * a repeat is replayed it.  A file (--serve-dir) is not stored: its key is
 * let go, and a repeat is processed again.  Nothing when the key was
 * dropped from the table meanwhile.
 */
static void idem_finish(struct req *r)
{
    if (r->idem == 0)
        return;
    pthread_mutex_lock(&g.idem_mu);
    struct idem_entry *e = &g.idem[r->idem - 1];
    if (e->seq == r->idem_seq && e->state == SRV_IDEM_RUNNING && r->kind == SRV_KIND_FILE) {
        idem_drop(r->idem - 1);
    } else if (e->seq == r->idem_seq && e->state == SRV_IDEM_RUNNING) {
        e->state = SRV_IDEM_DONE;
        e->status = r->status;
        e->kind = r->kind;
        e->text = r->text;
        e->digest_hash = r->hash;
        e->digest_len = r->body_len;
        e->item_n = r->item_n;
        e->item_size = r->item_size;
    }
    pthread_mutex_unlock(&g.idem_mu);
    r->idem = 0;
}

/* ---- admission ------------------------------------------------------------- */

/* The hold time of an admitted request under the latency model (003). */
static uint64_t service_hold(long conc)
{
    double ms = (double)g.cfg.service_ms;
    if (g.cfg.latency_limit > 0 && conc > g.cfg.latency_limit)
        ms *= pow(g.cfg.latency_factor, (double)(conc - g.cfg.latency_limit) / g.cfg.latency_k);
    return ms > MAX_HOLD_MS ? (uint64_t)MAX_HOLD_MS : (uint64_t)ms;
}

static long ceil_secs(double s)
{
    double c = ceil(s - 1e-9);
    if (c < 1)
        c = 1;
    return c > 86400 ? 86400 : (long)c;
}

/* The configured Retry-After (--retry-after) as a wait; < 0: none. */
static double cfg_retry_after(void)
{
    return g.cfg.retry_after >= 0 ? (double)g.cfg.retry_after : -1.0;
}

/*
 * --serve-dir: the file at url under the directory (the query is not part
 * of url), or 404; a url ending in '/' names its index.html (a PEP 503
 * package index: pip asks for /simple/NAME/).  A path with a ".."
 * component, or naming anything but a regular file, is not found.
 */
static void choose_file(struct req *r, const char *url)
{
    char path[4096];
    struct stat st;
    int fd;

    r->status = MHD_HTTP_NOT_FOUND;
    r->text = "not found\n";
    if (strstr(url, "/../") != NULL ||
        (strlen(url) >= 3 && strcmp(url + strlen(url) - 3, "/..") == 0))
        return;
    const char *index = url[0] != '\0' && url[strlen(url) - 1] == '/' ? "index.html" : "";
    if (snprintf(path, sizeof path, "%s%s%s", g.cfg.serve_dir, url, index) >= (int)sizeof path)
        return;
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return;
    }
    r->status = MHD_HTTP_OK;
    r->kind = SRV_KIND_FILE;
    r->file_fd1 = fd + 1;
    r->file_size = (uint64_t)st.st_size;
    r->file_html = strlen(path) >= 5 && strcmp(path + strlen(path) - 5, ".html") == 0;
}

/* Decides what the admitted request gets: the item body, a digest, a status. */
static void choose_content(struct req *r, const char *url)
{
    size_t len = strlen(url);
    r->kind = SRV_KIND_TEXT;
    r->status = MHD_HTTP_OK;
    r->text = "ok\n";
    if (strncmp(url, "/status/", 8) == 0) {
        long code = strtol(url + 8, NULL, 10);
        if (code >= 200 && code <= 599) {
            r->status = (int)code;
            r->text = "status\n";
            return;
        }
    }
    if (r->method == SRV_METHOD_POST || r->method == SRV_METHOD_PUT ||
        r->method == SRV_METHOD_PATCH) {
        r->kind = SRV_KIND_DIGEST;
        const char *id = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-Request-Id");
        atomic_fetch_add(r->method == SRV_METHOD_POST  ? &g.posts
                         : r->method == SRV_METHOD_PUT ? &g.puts
                                                       : &g.patches,
                         1);
        if (id && id_seen(r->method, id))
            atomic_fetch_add(r->method == SRV_METHOD_POST  ? &g.dup_posts
                             : r->method == SRV_METHOD_PUT ? &g.dup_puts
                                                           : &g.dup_patches,
                             1);
        return;
    }
    if ((r->method == SRV_METHOD_GET || r->method == SRV_METHOD_HEAD) && g.cfg.serve_dir != NULL &&
        strncmp(url, "/item/", 6) != 0) {
        choose_file(r, url);
        return;
    }
    if ((r->method == SRV_METHOD_GET || r->method == SRV_METHOD_HEAD) &&
        bo_item_parse_path(url, len, &r->item_n) == 0) {
        const char *sz = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "size");
        r->item_size = BO_ITEM_DEFAULT_SIZE;
        if (sz && bo_item_parse_size(sz, strlen(sz), &r->item_size) != 0) {
            r->status = MHD_HTTP_BAD_REQUEST;
            r->text = "bad size\n";
            return;
        }
        const char *hold = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "hold_ms");
        if (hold != NULL) {
            char *end;
            long ms = strtol(hold, &end, 10);
            if (*hold == '\0' || *end != '\0' || ms < 0 || ms > 3600000) {
                r->status = MHD_HTTP_BAD_REQUEST;
                r->text = "bad hold_ms\n";
                return;
            }
            r->hold_ms = ms;
        }
        r->kind = SRV_KIND_ITEM;
    }
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * The fixed window (under adm_mu): window_requests per window_s seconds,
 * windows aligned to the epoch so that x-ratelimit-reset is exact.  Counts
 * r when there is room; else r is rejected (--reject-status) with a wait
 * until the window ends.  Fills r's quota headers.  Returns 0 when r was
 * rejected.
 */
static int window_admit(struct req *r)
{
    int64_t now = r->wall_ms, w_ms = (int64_t)g.cfg.window_s * 1000;
    int64_t index = now / w_ms, end_ms = (index + 1) * w_ms;
    if (index != g.win_index) {
        g.win_index = index;
        g.win_used = 0;
    }
    int ok = g.win_used < g.cfg.window_requests;
    if (ok)
        g.win_used++;
    r->rl = 1;
    r->rl_name = "window";
    r->rl_limit = g.cfg.window_requests;
    r->rl_remaining = g.cfg.window_requests - g.win_used;
    r->rl_reset = (double)(end_ms - now) / 1000.0;
    r->rl_window = g.cfg.window_s;
    if (!ok) {
        r->status = g.cfg.reject_status;
        r->retry_after = r->rl_reset;
    }
    return ok;
}

/*
 * The bucket's quota as headers give it: burst per burst/rate s, full again
 * after exact_s (each dialect rounds it its own way, rl_lines.h).
 */
static void bucket_quota(struct req *r, double exact_s)
{
    r->rl_name = "bucket";
    r->rl_limit = (long)g.cfg.burst;
    r->rl_reset = exact_s;
    r->rl_window = ceil_secs(g.cfg.burst / g.cfg.rate);
}

/*
 * Admits or rejects r at time t: fixed window, then token bucket (429 with its headers),
 * then the concurrency cap (the configured status).  Either way a request
 * with a hold time takes a busy slot for it, so error responses keep the
 * server busy as in article 000.  Returns the hold time in ms.
 */
static uint64_t admit(struct req *r, uint64_t t, const char *url)
{
    uint64_t hold;
    int admitted = 1;
    pthread_mutex_lock(&g.adm_mu);
    r->wall_ms = wall_ms();
    if (g.cfg.window_requests > 0 && !window_admit(r))
        admitted = 0;
    if (admitted && g.cfg.rate > 0) {
        /* t was read before the lock: another thread may have refilled up to
         * a later time already, and time must not run backwards here. */
        if (t > g.tokens_ms) {
            g.tokens += (double)(t - g.tokens_ms) * g.cfg.rate / 1000.0;
            if (g.tokens > g.cfg.burst)
                g.tokens = g.cfg.burst;
            g.tokens_ms = t;
        }
        if (g.cfg.bucket_hints == BO_HINTS_ACCURATE)
            r->rl = 1; /* its quota headers (those --ratelimit-headers names) */
        if (g.tokens < 1.0) {
            admitted = 0;
            r->status = g.cfg.reject_status;
            r->retry_after = (1.0 - g.tokens) / g.cfg.rate;
            r->rl_remaining = 0;
            bucket_quota(r, (g.cfg.burst - g.tokens) / g.cfg.rate);
            if (g.cfg.bucket_hints == BO_HINTS_FIXED)
                r->retry_after = g.cfg.retry_after >= 0 ? (double)g.cfg.retry_after : 1.0;
            else if (g.cfg.bucket_hints == BO_HINTS_NONE)
                r->retry_after = -1;
        }
    }
    if (admitted) {
        long cap = cap_at(t);
        if (cap >= 0 && atomic_load(&g.busy) >= cap) {
            admitted = 0;
            r->status = g.cfg.reject_status;
            r->retry_after = cfg_retry_after();
            if (r->rl && g.cfg.rate > 0) {
                r->rl_remaining = (long)floor(g.tokens);
                bucket_quota(r, (g.cfg.burst - g.tokens) / g.cfg.rate);
            }
        } else if (g.cfg.rate > 0) {
            g.tokens -= 1.0;
            /* the stricter limiter's quota is the one told */
            if (g.cfg.window_requests == 0 || (long)floor(g.tokens) < r->rl_remaining) {
                r->rl_remaining = (long)floor(g.tokens);
                bucket_quota(r, (g.cfg.burst - g.tokens) / g.cfg.rate);
            }
        }
    }
    if (g.cfg.quota_spent_s > 0) {
        /* --quota-spent: the headers predict a refusal that never comes */
        r->rl = 1;
        r->rl_name = "spent";
        r->rl_limit = 60;
        r->rl_remaining = 0;
        r->rl_reset = g.cfg.quota_spent_s;
        r->rl_window = ceil_secs(g.cfg.quota_spent_s);
    }
    hold = admitted ? service_hold(r->conc) : (uint64_t)g.cfg.error_ms;
    if (hold > 0) {
        atomic_fetch_add(&g.busy, 1);
        r->slot = 1;
    }
    pthread_mutex_unlock(&g.adm_mu);
    if (!admitted)
        r->kind = SRV_KIND_REJECT;
    else if (!idem_gate(r, url))
        choose_content(r, url);
    return hold;
}

/* ---- responses ------------------------------------------------------------- */

struct body_ctx {
    char unit[BO_ITEM_UNIT_MAX];
    size_t ulen;
    uint64_t size;
    uint64_t corrupt_at; /* UINT64_MAX: none */
    uint64_t reset_at;   /* UINT64_MAX: none; else the body ends here with a TCP reset */
    int fd;              /* the connection's socket, for the reset */
};

/* MHD content reader of a streamed item body: fills the next block from the
 * offset alone, so memory stays one block whatever the body size. */
static ssize_t body_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct body_ctx *b = cls;
    if (pos >= b->size)
        return MHD_CONTENT_READER_END_OF_STREAM;
    if (pos >= b->reset_at) {
        /* --fault-reset: linger 0 makes MHD's close send RST instead of FIN. */
        struct linger lg = {1, 0};
        setsockopt(b->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    uint64_t end = b->reset_at < b->size ? b->reset_at : b->size;
    size_t n = end - pos < max ? (size_t)(end - pos) : max;
    bo_item_fill(b->unit, b->ulen, pos, buf, n);
    if (b->corrupt_at >= pos && b->corrupt_at < pos + n)
        buf[b->corrupt_at - pos] ^= 1;
    return (ssize_t)n;
}

/* Builds the item body response (inline when small, streamed when large so a
 * slow reader of a huge body costs a fixed buffer). */
static struct MHD_Response *item_response(struct req *r)
{
    struct body_ctx *b = malloc(sizeof *b);
    if (!b)
        return NULL;
    b->ulen = bo_item_unit(r->item_n, b->unit);
    b->size = r->item_size;
    b->corrupt_at = UINT64_MAX;
    b->reset_at = UINT64_MAX;
    b->fd = -1;
    unsigned long long n = atomic_fetch_add(&g.items, 1) + 1;
    if (g.cfg.corrupt_every > 0 && n % (unsigned long long)g.cfg.corrupt_every == 0 && b->size > 0)
        b->corrupt_at = b->size / 2;
    if (g.cfg.fault_reset_every > 0 && n % (unsigned long long)g.cfg.fault_reset_every == 0 &&
        b->size > 1) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (ci) {
            b->reset_at = b->size / 2;
            b->fd = ci->connect_fd;
        }
    }
    if (b->size <= INLINE_BODY_MAX && b->reset_at == UINT64_MAX) {
        char *buf = malloc(b->size ? (size_t)b->size : 1);
        struct MHD_Response *resp = NULL;
        if (buf) {
            body_reader(b, 0, buf, (size_t)b->size);
            resp = MHD_create_response_from_buffer((size_t)b->size, buf, MHD_RESPMEM_MUST_FREE);
            if (!resp)
                free(buf);
        }
        free(b);
        return resp;
    }
    struct MHD_Response *resp =
        MHD_create_response_from_callback(b->size, 32 * 1024, body_reader, b, free);
    if (!resp)
        free(b);
    return resp;
}

/* Appends one CSV row to --log, quoting the path when it needs it. */
static void log_row(uint64_t t, const char *method, const char *url, int status, long conc,
                    uint64_t latency)
{
    pthread_mutex_lock(&g.log_mu);
    if (strpbrk(url, ",\"\n")) {
        fprintf(g.log, "%llu,%s,\"", (unsigned long long)t, method);
        for (const char *p = url; *p; p++) {
            if (*p == '"')
                fputc('"', g.log);
            fputc(*p == '\n' ? ' ' : *p, g.log);
        }
        fprintf(g.log, "\",%d,%ld,%llu\n", status, conc, (unsigned long long)latency);
    } else {
        fprintf(g.log, "%llu,%s,%s,%d,%ld,%llu\n", (unsigned long long)t, method, url, status,
                conc, (unsigned long long)latency);
    }
    pthread_mutex_unlock(&g.log_mu);
}

static void add_lines(struct MHD_Response *resp, const rl_line *l, int n)
{
    for (int i = 0; i < n; i++)
        MHD_add_response_header(resp, l[i].name, l[i].value);
}

/* The quota headers of r in the configured dialect (rl_lines.h). */
static void add_ratelimit_headers(struct MHD_Response *resp, const struct req *r)
{
    rl_line l[RL_LINES_MAX];
    rl_quota_state st = {r->rl_limit, r->rl_remaining, r->rl_reset, r->rl_window,
                         r->rl_name, r->wall_ms};
    add_lines(resp, l, rl_quota_lines(g.cfg.rl_dialect, &st, l));
}

/*
 * --fault-reset-post: is r (a POST or PATCH just processed, not a replay) the
 * Nth since the last reset?
 */
static int post_reset_due(const struct req *r)
{
    if (g.cfg.fault_reset_post_every <= 0 || r->kind != SRV_KIND_DIGEST || r->replay ||
        (r->method != SRV_METHOD_POST && r->method != SRV_METHOD_PATCH))
        return 0;
    unsigned long long n = atomic_fetch_add(&g.posts_processed, 1) + 1;
    return n % (unsigned long long)g.cfg.fault_reset_post_every == 0;
}

/* Makes MHD's close of r's connection send RST instead of FIN (linger 0). */
static void reset_on_close(struct req *r)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    struct linger lg = {1, 0};
    if (ci)
        setsockopt(ci->connect_fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
}

/* --reject-body s3: S3's answer to a request rate it will not take (503 SlowDown). */
static const char s3_slowdown[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message>"
    "<RequestId>ratelimit-server</RequestId><HostId>ratelimit-server</HostId></Error>\n";

/* Queues r's answer and does its accounting; returns MHD's verdict. */
static enum MHD_Result respond(struct req *r, const char *method, const char *url)
{
    struct MHD_Response *resp = NULL;
    char line[BO_DIGEST_LINE_MAX];
    int reset = post_reset_due(r);
    idem_finish(r); /* processed: from now on the key's repeats are replayed this answer */
    if (reset) {
        /* processed and stored, then the connection is lost before any answer byte */
        reset_on_close(r);
        atomic_fetch_add(&g.post_resets, 1);
        return MHD_NO;
    }
    switch (r->kind) {
    case SRV_KIND_REJECT:
        if (g.cfg.reject_s3)
            resp = MHD_create_response_from_buffer(strlen(s3_slowdown), (void *)s3_slowdown,
                                                   MHD_RESPMEM_PERSISTENT);
        else
            resp = MHD_create_response_from_buffer(9, (void *)"rejected\n", MHD_RESPMEM_PERSISTENT);
        break;
    case SRV_KIND_ITEM:
        resp = item_response(r);
        break;
    case SRV_KIND_DIGEST: {
        int n = bo_digest_line(r->hash, r->body_len, line, sizeof line);
        resp = MHD_create_response_from_buffer((size_t)n, line, MHD_RESPMEM_MUST_COPY);
        break;
    }
    case SRV_KIND_TEXT:
        resp = MHD_create_response_from_buffer(strlen(r->text), (void *)r->text,
                                               MHD_RESPMEM_PERSISTENT);
        break;
    case SRV_KIND_FILE: /* the response owns the descriptor from here on */
        resp = MHD_create_response_from_fd(r->file_size, r->file_fd1 - 1);
        if (resp != NULL)
            r->file_fd1 = 0;
        break;
    }
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                            r->kind == SRV_KIND_FILE && r->file_html       ? "text/html"
                            : r->kind == SRV_KIND_REJECT && g.cfg.reject_s3 ? "application/xml"
                                                                            : "text/plain");
    if (r->kind == SRV_KIND_REJECT && g.cfg.retry_after_raw) {
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, g.cfg.retry_after_raw);
    } else if (r->kind == SRV_KIND_REJECT && r->retry_after >= 0) {
        rl_line l[RL_LINES_MAX]; /* the date form brings the answer's Date along */
        add_lines(resp, l, rl_wait_lines(g.cfg.wait_form, r->retry_after, r->wall_ms, l));
    }
    if (g.cfg.wait_form == RL_WAIT_DATE && MHD_get_response_header(resp, "Date") == NULL) {
        char date[40];
        rl_http_date(date, sizeof date, wall_ms() / 1000);
        MHD_add_response_header(resp, "Date", date);
    }
    if (r->rl)
        add_ratelimit_headers(resp, r);
    if (r->replay)
        MHD_add_response_header(resp, "Idempotent-Replayed", "true");
    if (g.cfg.close) /* libmicrohttpd ends the connection after such an answer */
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result ret = MHD_queue_response(r->conn, (unsigned)r->status, resp);
    MHD_destroy_response(resp);
    r->answered = 1;
    atomic_fetch_add(&g.requests, 1);
    if (r->kind == SRV_KIND_REJECT)
        atomic_fetch_add(&g.rejected, 1);
    else if (r->status >= 200 && r->status < 300)
        atomic_fetch_add(&g.ok, 1);
    else
        atomic_fetch_add(&g.other, 1);
    if (r->inflight) {
        r->inflight = 0;
        atomic_fetch_sub(&g.inflight, 1);
    }
    if (g.log) {
        uint64_t t = now_ms();
        log_row(t, method, url, r->status, r->conc, t - r->arrive_ms);
    }
    return ret;
}

/* ---- the MHD handler ------------------------------------------------------- */

static enum method classify(const char *m)
{
    if (strcmp(m, "GET") == 0)
        return SRV_METHOD_GET;
    if (strcmp(m, "HEAD") == 0)
        return SRV_METHOD_HEAD;
    if (strcmp(m, "POST") == 0)
        return SRV_METHOD_POST;
    if (strcmp(m, "PUT") == 0)
        return SRV_METHOD_PUT;
    if (strcmp(m, "PATCH") == 0)
        return SRV_METHOD_PATCH;
    return SRV_METHOD_OTHER;
}

/*
 * Drives r through its phases: arrive (counted in the concurrency), admit
 * (outage, bucket, cap), hold its slot, wait the configured delays, answer.
 * Each wait suspends the connection and returns; the timer's resume brings
 * MHD back here with the phase to continue from.
 */
static enum MHD_Result advance(struct req *r, const char *method, const char *url)
{
    for (;;) {
        switch (r->phase) {
        case SRV_PHASE_NEW:
            r->inflight = 1;
            r->conc = atomic_fetch_add(&g.inflight, 1) + 1;
            note_max(&g.max_inflight, r->conc);
            r->phase = SRV_PHASE_ADMIT;
            break;
        case SRV_PHASE_ADMIT: {
            if (g.cfg.gate && !r->gated && gate_hold(r))
                return MHD_YES; /* gate_set resumes it here, gated */
            uint64_t t = now_ms();
            if (r->gated == 1) { /* released: admitted as at the gate's opening */
                t = r->gate_ms;
                r->gated = 2;
            }
            r->phase = SRV_PHASE_HOLD;
            if (atomic_load(&g.stopping)) {
                r->kind = SRV_KIND_REJECT;
                r->status = MHD_HTTP_SERVICE_UNAVAILABLE;
                r->retry_after = cfg_retry_after();
                r->wall_ms = wall_ms();
                break;
            }
            if (g.cfg.fault_drop_every > 0 && (atomic_fetch_add(&g.arrivals, 1) + 1) %
                                                      (unsigned long long)g.cfg.fault_drop_every ==
                                                  0)
                return MHD_NO; /* --fault-drop: close without any response */
            switch (outage_at(t)) {
            case BO_OUTAGE_REFUSE:
                return MHD_NO; /* the server is down: drop the connection */
            case BO_OUTAGE_503:
                r->kind = SRV_KIND_REJECT;
                r->status = MHD_HTTP_SERVICE_UNAVAILABLE;
                r->retry_after = cfg_retry_after();
                r->wall_ms = wall_ms();
                continue;
            case BO_OUTAGE_STALL:
                r->phase = SRV_PHASE_ADMIT;
                if (suspend_until(r, outage_end_ms()))
                    return MHD_YES;
                continue; /* stopping: SRV_PHASE_ADMIT answers 503 */
            case BO_OUTAGE_NONE:
                break;
            }
            uint64_t hold = admit(r, t, url);
            if (hold > 0 && suspend_until(r, t + hold))
                return MHD_YES;
            break;
        }
        case SRV_PHASE_HOLD: {
            if (r->slot) {
                r->slot = 0;
                atomic_fetch_sub(&g.busy, 1);
            }
            r->phase = SRV_PHASE_RESPOND;
            long extra = g.cfg.delay_ms + r->hold_ms;
            if (r->method == SRV_METHOD_POST || r->method == SRV_METHOD_PUT ||
                r->method == SRV_METHOD_PATCH)
                extra += g.cfg.post_delay_ms;
            if (extra > 0 && suspend_until(r, now_ms() + (uint64_t)extra))
                return MHD_YES;
            break;
        }
        case SRV_PHASE_RESPOND:
            return respond(r, method, url);
        }
    }
}

/*
 * MHD's access handler: the first call (headers in) creates the request state,
 * calls with upload data feed the body digest, and the final call (and every
 * call after a resume) advances the request.
 */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    (void)cls;
    (void)version;
    struct req *r = *con_cls;
    if (!r) {
        r = calloc(1, sizeof *r);
        if (!r)
            return MHD_NO;
        r->conn = conn;
        r->method = classify(method);
        r->method_hash = bo_fnv1a64(BO_FNV_OFFSET, method, strlen(method));
        r->arrive_ms = now_ms();
        r->hash = BO_FNV_OFFSET;
        r->retry_after = -1;
        *con_cls = r;
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        r->hash = bo_fnv1a64(r->hash, upload_data, *upload_data_size);
        r->body_len += *upload_data_size;
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (r->answered)
        return MHD_NO;
    return advance(r, method, url);
}

/* Frees r when MHD is done with its request, undoing the counts of a request
 * that was never answered (client gone, refuse outage, shutdown). */
static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)conn;
    (void)toe;
    struct req *r = *con_cls;
    if (!r)
        return;
    if (r->file_fd1 > 0)
        close(r->file_fd1 - 1);
    idem_finish(r); /* processed but never answered (client gone): stored all the same */
    if (r->slot)
        atomic_fetch_sub(&g.busy, 1);
    if (r->inflight)
        atomic_fetch_sub(&g.inflight, 1);
    if (!r->answered && r->phase != SRV_PHASE_NEW)
        atomic_fetch_add(&g.dropped, 1);
    free(r);
    *con_cls = NULL;
}

/* ---- listening --------------------------------------------------------------- */

/* Opens a non-blocking listening socket on 127.0.0.1:port (SO_REUSEADDR, so
 * the refuse outage can reopen the same port); returns the fd or -1. */
static int open_listener(int port)
{
    struct sockaddr_in sa;
    int one = 1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0)
        goto fail;
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0)
        goto fail;
    if (listen(fd, 4096) != 0)
        goto fail;
    return fd;
fail:
    close(fd);
    return -1;
}

/*
 * Accepts connections and spreads them over the daemons; closes the listener
 * for a refuse outage and reopens it on the same port when the outage ends.
 */
static void *accept_main(void *arg)
{
    (void)arg;
    unsigned rr = 0;
    int refuse = g.cfg.outage_mode == BO_OUTAGE_REFUSE;
    while (!atomic_load(&g.stopping)) {
        uint64_t t = now_ms();
        if (refuse) {
            int down = outage_at(t) == BO_OUTAGE_REFUSE;
            if (down && g.listen_fd >= 0) {
                close(g.listen_fd);
                g.listen_fd = -1;
                fprintf(stderr, "ratelimit-server: outage: listener closed\n");
            } else if (!down && g.listen_fd < 0) {
                g.listen_fd = open_listener(g.port);
                if (g.listen_fd >= 0)
                    fprintf(stderr,
                            "ratelimit-server: outage over: listening again on 127.0.0.1:%d\n",
                            g.port);
                else
                    fprintf(stderr, "ratelimit-server: cannot reopen 127.0.0.1:%d: %s (retrying)\n",
                            g.port, strerror(errno));
            }
        }
        struct pollfd p[2] = {{.fd = g.listen_fd, .events = POLLIN},
                              {.fd = g.wake[0], .events = POLLIN}};
        int timeout = -1;
        if (refuse && t < outage_end_ms() + 1000)
            timeout = 20;
        if (poll(p, 2, timeout) < 0 && errno != EINTR)
            break;
        if (p[1].revents)
            break;
        if (g.listen_fd < 0 || !(p[0].revents & POLLIN))
            continue;
        for (int i = 0; i < 256; i++) {
            struct sockaddr_storage ss;
            socklen_t len = sizeof ss;
            int fd =
                accept4(g.listen_fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd < 0) {
                if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                    poll(NULL, 0, 10); /* out of descriptors: let connections finish */
                break;
            }
            MHD_add_connection(g.daemons[rr++ % (unsigned)g.ndaemons], fd, (struct sockaddr *)&ss,
                               len);
        }
    }
    return NULL;
}

/* ---- main -------------------------------------------------------------------- */

/*
 * Reads a PEM file of at most 1 MiB into a NUL-terminated string (what
 * MHD_OPTION_HTTPS_MEM_CERT/KEY take); NULL after one line naming the flag.
 */
static char *read_pem(const char *flag, const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf = NULL;
    size_t n = 0;
    if (f == NULL)
        goto fail;
    buf = malloc(1 << 20);
    if (buf == NULL)
        goto fail;
    n = fread(buf, 1, (1 << 20) - 1, f);
    if (ferror(f) || !feof(f) || n == 0) {
        errno = ferror(f) ? EIO : !feof(f) ? EFBIG : ENODATA;
        goto fail;
    }
    buf[n] = '\0';
    fclose(f);
    char *fit = realloc(buf, n + 1);
    return fit != NULL ? fit : buf;
fail:
    fprintf(stderr, "ratelimit-server: %s \"%s\" cannot be read: %s (expected a PEM file "
                    "under 1 MiB)\n", flag, path, strerror(errno));
    free(buf);
    if (f != NULL)
        fclose(f);
    return NULL;
}

/* Lifts the descriptor limit to the hard limit so 1,000s of connections fit. */
static void raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

static void print_stats_line(uint64_t t)
{
    fprintf(
        stderr,
        "ratelimit-server: t=%llus concurrency=%ld busy=%ld ok=%llu rejected=%llu requests=%llu\n",
        (unsigned long long)(t / 1000), atomic_load(&g.inflight), atomic_load(&g.busy),
        atomic_load(&g.ok), atomic_load(&g.rejected), atomic_load(&g.requests));
}

static void print_summary(void)
{
    /* Columns are read by name, but only ever appended: never reorder them. */
    printf("requests\tok\trejected\tmax_concurrency\tduplicate_posts\tposts\tputs\t"
           "duplicate_puts\tdropped\tstatus_other\tpatches\tduplicate_patches\t"
           "idem_replays\tidem_conflicts\tidem_mismatches\tidem_bad\tpost_resets\n");
    printf("%llu\t%llu\t%llu\t%ld\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t"
           "%llu\t%llu\t%llu\n",
           atomic_load(&g.requests), atomic_load(&g.ok), atomic_load(&g.rejected),
           atomic_load(&g.max_inflight), atomic_load(&g.dup_posts), atomic_load(&g.posts),
           atomic_load(&g.puts), atomic_load(&g.dup_puts), atomic_load(&g.dropped),
           atomic_load(&g.other), atomic_load(&g.patches), atomic_load(&g.dup_patches),
           atomic_load(&g.idem_replays), atomic_load(&g.idem_conflicts),
           atomic_load(&g.idem_mismatches), atomic_load(&g.idem_bad),
           atomic_load(&g.post_resets));
    fflush(stdout);
}

/* Waits for SIGTERM/SIGINT or the end of --duration, printing the stats line
 * every second; SIGUSR1 and SIGUSR2 open and close --gate. */
static void wait_for_end(const sigset_t *set)
{
    uint64_t end = g.cfg.duration_s > 0 ? (uint64_t)(g.cfg.duration_s * 1000.0) : UINT64_MAX;
    uint64_t next_tick = 1000;
    for (;;) {
        uint64_t t = now_ms();
        if (t >= end)
            return;
        if (t >= next_tick) {
            print_stats_line(t);
            if (g.log) {
                pthread_mutex_lock(&g.log_mu);
                fflush(g.log);
                pthread_mutex_unlock(&g.log_mu);
            }
            next_tick = (t / 1000 + 1) * 1000;
        }
        uint64_t until = next_tick < end ? next_tick : end;
        uint64_t wait = until > t ? until - t : 1;
        struct timespec ts = {.tv_sec = (time_t)(wait / 1000),
                              .tv_nsec = (long)(wait % 1000) * 1000000};
        int sig = sigtimedwait(set, NULL, &ts);
        if (sig == SIGTERM || sig == SIGINT)
            return;
        if ((sig == SIGUSR1 || sig == SIGUSR2) && g.cfg.gate)
            gate_set(sig == SIGUSR1);
    }
}

int main(int argc, char **argv)
{
    sigset_t set;
    pthread_t timer_thr, accept_thr;
    pthread_condattr_t ca;
    int rc = bo_srv_parse_args(argc, argv, &g.cfg);
    if (rc == 1)
        return 0;
    if (rc != 0)
        return 2;
    clock_gettime(CLOCK_MONOTONIC, &g.start);
    raise_nofile();
    signal(SIGPIPE, SIG_IGN);
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGUSR1); /* --gate: open */
    sigaddset(&set, SIGUSR2); /* --gate: close */
    pthread_sigmask(SIG_BLOCK, &set, NULL); /* every thread inherits it; main takes them */

    pthread_mutex_init(&g.adm_mu, NULL);
    pthread_mutex_init(&g.heap_mu, NULL);
    pthread_mutex_init(&g.ids_mu, NULL);
    pthread_mutex_init(&g.idem_mu, NULL);
    if (g.cfg.idempotency) {
        size_t n = (size_t)g.cfg.idempotency_keys;
        g.nidem_buckets = 16;
        while (g.nidem_buckets < 2 * n)
            g.nidem_buckets *= 2;
        g.idem = calloc(n, sizeof *g.idem);
        g.idem_buckets = malloc(g.nidem_buckets * sizeof *g.idem_buckets);
        if (!g.idem || !g.idem_buckets)
            goto fail_sys;
        for (size_t i = 0; i < g.nidem_buckets; i++)
            g.idem_buckets[i] = -1;
    }
    pthread_mutex_init(&g.log_mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g.heap_cv, &ca);
    g.tokens = g.cfg.burst;
    if (g.cfg.log_path) {
        g.log = fopen(g.cfg.log_path, "w");
        if (!g.log) {
            fprintf(stderr, "ratelimit-server: --log \"%s\" cannot be opened: %s\n", g.cfg.log_path,
                    strerror(errno));
            return 1;
        }
        fputs("t_ms,method,path,status,concurrency,latency_ms\n", g.log);
    }
    if (pipe2(g.wake, O_CLOEXEC) != 0)
        goto fail_sys;
    g.listen_fd = open_listener(g.cfg.port);
    if (g.listen_fd < 0) {
        fprintf(stderr, "ratelimit-server: cannot listen on 127.0.0.1:%d: %s\n", g.cfg.port,
                strerror(errno));
        return 1;
    }
    struct sockaddr_in sa;
    socklen_t salen = sizeof sa;
    if (getsockname(g.listen_fd, (struct sockaddr *)&sa, &salen) != 0)
        goto fail_sys;
    g.port = ntohs(sa.sin_port);

    /* --tls-cert/--tls-key: every daemon speaks TLS on the connections it is
     * handed (MHD_add_connection), so the port is https only. */
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
                         MHD_ALLOW_SUSPEND_RESUME | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_TURBO;
    char *cert = NULL, *key = NULL;
    if (g.cfg.tls_cert != NULL) {
        if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
            fprintf(stderr, "ratelimit-server: --tls-cert \"%s\" needs TLS, and this "
                            "libmicrohttpd (%s) was built without it\n", g.cfg.tls_cert,
                    MHD_get_version());
            return 2;
        }
        cert = read_pem("--tls-cert", g.cfg.tls_cert);
        key = cert != NULL ? read_pem("--tls-key", g.cfg.tls_key) : NULL;
        if (key == NULL) {
            free(cert);
            return 2;
        }
        flags |= MHD_USE_TLS;
    }
    g.ndaemons = g.cfg.threads;
    g.daemons = calloc((size_t)g.ndaemons, sizeof *g.daemons);
    if (!g.daemons)
        goto fail_sys;
    for (int i = 0; i < g.ndaemons; i++) {
        struct MHD_OptionItem tls[] = {
            {cert != NULL ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, cert},
            {MHD_OPTION_HTTPS_MEM_KEY, 0, key},
            {MHD_OPTION_END, 0, NULL}};
        g.daemons[i] = MHD_start_daemon(
            flags, 0, NULL, NULL, on_request, NULL,
            MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
            MHD_OPTION_CONNECTION_LIMIT, (unsigned int)100000,
            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)g.cfg.idle_timeout_s,
            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(32 * 1024),
            MHD_OPTION_ARRAY, tls,
            MHD_OPTION_END);
        if (!g.daemons[i]) {
            if (cert != NULL)
                fprintf(stderr, "ratelimit-server: --tls-cert \"%s\" and --tls-key \"%s\" "
                                "were not accepted: expected a PEM certificate and its "
                                "matching PEM private key\n", g.cfg.tls_cert, g.cfg.tls_key);
            else
                fprintf(stderr, "ratelimit-server: libmicrohttpd daemon %d did not start\n", i);
            int status = cert != NULL ? 2 : 1;
            for (int k = 0; k < i; k++)
                MHD_stop_daemon(g.daemons[k]);
            free(cert);
            free(key);
            return status;
        }
    }
    if (pthread_create(&timer_thr, NULL, timer_main, NULL) != 0 ||
        pthread_create(&accept_thr, NULL, accept_main, NULL) != 0)
        goto fail_sys;
    printf("listening on 127.0.0.1:%d\n", g.port);
    fflush(stdout);

    wait_for_end(&set);

    /* Stop accepting, release every held request, let answers go out, stop. */
    atomic_store(&g.stopping, 1);
    if (write(g.wake[1], "x", 1) < 0)
        perror("ratelimit-server: wake");
    pthread_join(accept_thr, NULL);
    if (g.listen_fd >= 0)
        close(g.listen_fd);
    if (g.cfg.gate)
        gate_set(1); /* the held requests are answered 503, as stopping */
    pthread_mutex_lock(&g.heap_mu);
    pthread_cond_signal(&g.heap_cv);
    pthread_mutex_unlock(&g.heap_mu);
    pthread_join(timer_thr, NULL);
    for (int i = 0; i < 100 && atomic_load(&g.inflight) > 0; i++)
        poll(NULL, 0, 10);
    for (int i = 0; i < g.ndaemons; i++)
        MHD_stop_daemon(g.daemons[i]);
    free(cert); /* MHD keeps pointers to them until its daemons stop */
    free(key);
    print_stats_line(now_ms());
    print_summary();
    if (g.log)
        fclose(g.log);
    return 0;
fail_sys:
    fprintf(stderr, "ratelimit-server: %s\n", strerror(errno));
    return 1;
}
