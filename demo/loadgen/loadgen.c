/*
 * demo/loadgen/loadgen.c: an ordinary multi-threaded libcurl client, the kind
 * of program users have.  It knows nothing of the backoff shim: each thread
 * owns one easy handle, reuses it (keep-alive) and calls curl_easy_perform
 * once per request.  Request numbers are handed out from one atomic counter,
 * so --requests is exact however many threads there are; with --rate the
 * request n is due at n/R seconds after the start (open loop) and the next
 * free thread takes it.  Output: a TSV header and one row on stdout.  The exit
 * status is 0 whenever the run happened, failed requests included (they are
 * what the columns count); 2 for a bad flag, 1 when it could not start.
 */
#include <curl/curl.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../item_body.h"
#include "../cli_parse.h"

/* A request with --timeout-ms that comes back later than this past it is late. */
#define LATE_MARGIN_MS 100

static const char usage[] =
    "usage: loadgen --url URL [flags]\n"
    "A plain multi-threaded libcurl load generator (one easy handle per thread).\n"
    "\n"
    "  --url URL          request URL; {n} is replaced by the request number (1, 2, ...)\n"
    "  --requests N       number of requests (default 100; 0: until --duration-s)\n"
    "  --threads T        client threads (default 4)\n"
    "  --rate R           open-loop arrival rate: request n is due at (n-1)/R s\n"
    "  --think-ms MS      exponential think time of mean MS before each request of a thread\n"
    "  --duration-s S     start no request after S seconds\n"
    "  --method M         GET, POST or PUT (default GET)\n"
    "  --data-size BYTES  body size of POST/PUT (default 64); each carries X-Request-Id\n"
    "  --timeout-ms MS    CURLOPT_TIMEOUT_MS of each request (default none)\n"
    "  --verify           check every 2xx body: /item/N against its content, POST/PUT\n"
    "                     against the digest of the body sent\n"
    "  --csv FILE         one row per request: t_ms,n,status,curl_code,latency_ms\n"
    "  --seed N           seed of the think times and of the X-Request-Id values (default 1)\n"
    "  --start-at-ms T    wait until the wall clock (ms since the epoch) reads T, then start;\n"
    "                     completion_s counts from T, so that processes started together\n"
    "                     are timed from one instant, not from their own start-up\n"
    "\n"
    "Prints a TSV header and one row: requests ok failed completion_s p50_ms p99_ms bytes\n"
    "body_mismatch status_429 status_503 status_other curl_errors timeouts late\n"
    "(late: with --timeout-ms, requests that came back more than LATE_MARGIN_MS = 100 ms\n"
    "after their timeout: the program's deadline was not held).\n"
    "ok = curl succeeded and HTTP 2xx; latencies (from the start of curl_easy_perform,\n"
    "not from the scheduled time) are over all requests.  Exit status 0\n"
    "when the run happened (even with failed requests), 2 for a bad flag.\n";

struct opts {
    const char *url;
    long requests;
    int threads;
    double rate;
    double think_ms;
    double duration_s;
    long long start_at_ms; /* wall-clock instant to start at (0: at once) */
    int method; /* 0 GET, 1 POST, 2 PUT */
    long data_size;
    long timeout_ms;
    int verify;
    const char *csv;
    unsigned long long seed;
};

struct result {
    int idx;
    double *lat;
    size_t nlat, caplat;
    unsigned long long ok, failed, bytes, mismatch, s429, s503, sother, curl_errors, timeouts, late;
    double last_done;
};

struct body {
    char *data;
    size_t len, cap;
    int keep;
};

static struct opts o;
static struct timespec t0;
static atomic_long next_n;
static pthread_mutex_t csv_mu = PTHREAD_MUTEX_INITIALIZER;
static FILE *csv;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)(ts.tv_sec - t0.tv_sec) + (double)(ts.tv_nsec - t0.tv_nsec) / 1e9;
}

/* Sleeps until t seconds after the start, restarting after EINTR. */
static void sleep_until(double t)
{
    struct timespec ts = t0;
    double whole = floor(t);
    ts.tv_sec += (time_t)whole;
    ts.tv_nsec += (long)((t - whole) * 1e9);
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* CURLOPT_WRITEFUNCTION: counts the body bytes and, for --verify, keeps them. */
static size_t on_write(char *p, size_t size, size_t nmemb, void *userdata)
{
    struct body *b = userdata;
    size_t n = size * nmemb;
    if (b->keep) {
        if (b->len + n > b->cap) {
            size_t cap = b->cap ? b->cap : 4096;
            while (cap < b->len + n)
                cap *= 2;
            char *d = realloc(b->data, cap);
            if (!d)
                return 0; /* curl reports CURLE_WRITE_ERROR */
            b->data = d;
            b->cap = cap;
        }
        memcpy(b->data + b->len, p, n);
    }
    b->len += n;
    return n;
}

/* Writes url with every {n} replaced by n into out; returns 0, or -1 if it
 * does not fit. */
static int expand_url(long n, char *out, size_t size)
{
    size_t used = 0;
    for (const char *p = o.url; *p;) {
        if (strncmp(p, "{n}", 3) == 0) {
            int w = snprintf(out + used, size - used, "%ld", n);
            if (w < 0 || (size_t)w >= size - used)
                return -1;
            used += (size_t)w;
            p += 3;
        } else {
            if (used + 1 >= size)
                return -1;
            out[used++] = *p++;
        }
    }
    out[used] = '\0';
    return 0;
}

/*
 * Whether a 2xx body is what the server's content contract promises: the
 * digest line of what we sent for POST/PUT, the item content for GET
 * /item/N[?size=B]; other URLs are not checked.  Returns 1 on a mismatch.
 */
static int body_mismatch(const char *url, const struct body *b, const char *sent, size_t sent_len)
{
    if (o.method != 0) {
        char line[BO_DIGEST_LINE_MAX];
        int n =
            bo_digest_line(bo_fnv1a64(BO_FNV_OFFSET, sent, sent_len), sent_len, line, sizeof line);
        return b->len != (size_t)n || memcmp(b->data, line, (size_t)n) != 0;
    }
    const char *p = strstr(url, "://");
    p = p ? strchr(p + 3, '/') : NULL;
    if (!p)
        return 0;
    size_t plen = strcspn(p, "?#");
    uint64_t item, size = BO_ITEM_DEFAULT_SIZE;
    if (bo_item_parse_path(p, plen, &item) != 0)
        return 0;
    if (p[plen] == '?') {
        const char *q = p + plen + 1;
        while (*q && *q != '#') {
            size_t kv = strcspn(q, "&#");
            if (strncmp(q, "size=", 5) == 0 && bo_item_parse_size(q + 5, kv - 5, &size) != 0)
                return 0;
            q += kv;
            if (*q == '&')
                q++;
        }
    }
    if (b->len != size)
        return 1;
    char unit[BO_ITEM_UNIT_MAX];
    size_t ulen = bo_item_unit(item, unit);
    char chunk[4096];
    for (size_t off = 0; off < b->len; off += sizeof chunk) {
        size_t n = b->len - off < sizeof chunk ? b->len - off : sizeof chunk;
        bo_item_fill(unit, ulen, off, chunk, n);
        if (memcmp(chunk, b->data + off, n) != 0)
            return 1;
    }
    return 0;
}

/* Appends one latency; returns -1 when out of memory. */
static int record_latency(struct result *r, double ms)
{
    if (r->nlat == r->caplat) {
        size_t cap = r->caplat ? r->caplat * 2 : 1024;
        double *l = realloc(r->lat, cap * sizeof *l);
        if (!l)
            return -1;
        r->lat = l;
        r->caplat = cap;
    }
    r->lat[r->nlat++] = ms;
    return 0;
}

/* One client: takes request numbers until they or the time run out. */
static void *client_main(void *arg)
{
    struct result *res = arg;
    uint64_t rng = o.seed * 0x100000001b3ULL + (uint64_t)res->idx;
    struct body b = {.keep = o.verify};
    char url[4096];
    char idh[128];
    char *sent = NULL;
    CURL *h = curl_easy_init();
    if (!h)
        return NULL;
    if (o.method != 0 && !(sent = malloc(o.data_size ? (size_t)o.data_size : 1)))
        goto out;
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    if (o.timeout_ms > 0)
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, o.timeout_ms);
    for (;;) {
        if (o.think_ms > 0) {
            double u = (double)(splitmix(&rng) >> 11) / 9007199254740992.0;
            double until = now_s() - log(1.0 - u) * o.think_ms / 1000.0;
            if (o.duration_s > 0 && until >= o.duration_s)
                break;
            sleep_until(until);
        }
        long n = atomic_fetch_add(&next_n, 1) + 1;
        if (o.requests > 0 && n > o.requests)
            break;
        if (o.rate > 0) {
            double due = (double)(n - 1) / o.rate;
            if (o.duration_s > 0 && due >= o.duration_s)
                break;
            sleep_until(due);
        }
        double start = now_s();
        if (o.duration_s > 0 && start >= o.duration_s)
            break;
        if (expand_url(n, url, sizeof url) != 0)
            break;
        curl_easy_setopt(h, CURLOPT_URL, url);
        struct curl_slist *hdrs = NULL;
        if (o.method != 0) {
            char unit[BO_ITEM_UNIT_MAX];
            size_t ulen = bo_item_unit((uint64_t)n, unit);
            bo_item_fill(unit, ulen, 0, sent, (size_t)o.data_size);
            snprintf(idh, sizeof idh, "X-Request-Id: lg%ld-%llu-%ld", (long)getpid(), o.seed, n);
            hdrs = curl_slist_append(hdrs, idh);
            hdrs = curl_slist_append(hdrs, "Content-Type: application/octet-stream");
            curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
            curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, o.data_size);
            curl_easy_setopt(h, CURLOPT_POSTFIELDS, sent);
            if (o.method == 2)
                curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "PUT");
        }
        b.len = 0;
        CURLcode cc = curl_easy_perform(h);
        double done = now_s();
        long status = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        curl_slist_free_all(hdrs);
        double ms = (done - start) * 1000.0;
        int ok = cc == CURLE_OK && status >= 200 && status < 300;
        if (record_latency(res, ms) != 0)
            break;
        res->bytes += b.len;
        res->last_done = done;
        if (ok) {
            res->ok++;
            if (o.verify && body_mismatch(url, &b, sent, (size_t)o.data_size))
                res->mismatch++;
        } else {
            res->failed++;
        }
        if (cc != CURLE_OK)
            res->curl_errors++;
        if (cc == CURLE_OPERATION_TIMEDOUT)
            res->timeouts++;
        if (o.timeout_ms > 0 && ms > (double)(o.timeout_ms + LATE_MARGIN_MS))
            res->late++;
        if (status == 429)
            res->s429++;
        else if (status == 503)
            res->s503++;
        else if (status != 0 && (status < 200 || status >= 300))
            res->sother++;
        if (csv) {
            pthread_mutex_lock(&csv_mu);
            fprintf(csv, "%.3f,%ld,%ld,%d,%.3f\n", start * 1000.0, n, status, (int)cc, ms);
            pthread_mutex_unlock(&csv_mu);
        }
    }
out:
    free(sent);
    free(b.data);
    curl_easy_cleanup(h);
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted values. */
static double percentile(const double *v, size_t n, double p)
{
    if (n == 0)
        return 0;
    size_t rank = (size_t)ceil(p / 100.0 * (double)n);
    if (rank < 1)
        rank = 1;
    return v[rank - 1];
}

static int bad(const char *flag, const char *value, const char *expected)
{
    fprintf(stderr, "loadgen: %s \"%s\" is not valid: expected %s\n", flag, value, expected);
    return 2;
}

/* Fills o from argv: returns 0 to run, 1 after --help, 2 after a bad flag. */
static int parse_args(int argc, char **argv)
{
    int have_requests = 0;
    o.requests = 100;
    o.threads = 4;
    o.data_size = 64;
    o.seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *name = argv[i];
        long l;
        double d;
        if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
            fputs(usage, stdout);
            return 1;
        }
        if (strcmp(name, "--verify") == 0) {
            o.verify = 1;
            continue;
        }
        if (strncmp(name, "--", 2) != 0) {
            fprintf(stderr, "loadgen: unknown argument \"%s\" (see --help)\n", name);
            return 2;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "loadgen: %s needs a value (see --help)\n", name);
            return 2;
        }
        const char *val = argv[++i];
        if (strcmp(name, "--url") == 0) {
            if (strncmp(val, "http://", 7) != 0 && strncmp(val, "https://", 8) != 0)
                return bad(name, val, "an http:// or https:// URL");
            o.url = val;
        } else if (strcmp(name, "--requests") == 0) {
            if (cli_parse_long(val, 0, 1000000000, &l))
                return bad(name, val, "an integer from 0 to 1000000000");
            o.requests = l;
            have_requests = 1;
        } else if (strcmp(name, "--threads") == 0) {
            if (cli_parse_long(val, 1, 10000, &l))
                return bad(name, val, "an integer from 1 to 10000");
            o.threads = (int)l;
        } else if (strcmp(name, "--rate") == 0) {
            if (cli_parse_double(val, 1e-6, 1e9, &d))
                return bad(name, val, "requests per second, a number > 0");
            o.rate = d;
        } else if (strcmp(name, "--think-ms") == 0) {
            if (cli_parse_double(val, 0, 3.6e6, &d))
                return bad(name, val, "milliseconds, a number from 0 to 3600000");
            o.think_ms = d;
        } else if (strcmp(name, "--duration-s") == 0) {
            if (cli_parse_double(val, 1e-3, 1e7, &d))
                return bad(name, val, "seconds, a number > 0");
            o.duration_s = d;
        } else if (strcmp(name, "--method") == 0) {
            if (strcmp(val, "GET") == 0)
                o.method = 0;
            else if (strcmp(val, "POST") == 0)
                o.method = 1;
            else if (strcmp(val, "PUT") == 0)
                o.method = 2;
            else
                return bad(name, val, "GET, POST or PUT");
        } else if (strcmp(name, "--data-size") == 0) {
            if (cli_parse_long(val, 0, 1L << 30, &l))
                return bad(name, val, "bytes, an integer from 0 to 1073741824");
            o.data_size = l;
        } else if (strcmp(name, "--timeout-ms") == 0) {
            if (cli_parse_long(val, 1, 86400000, &l))
                return bad(name, val, "milliseconds, an integer from 1 to 86400000");
            o.timeout_ms = l;
        } else if (strcmp(name, "--csv") == 0) {
            o.csv = val;
        } else if (strcmp(name, "--start-at-ms") == 0) {
            if (cli_parse_long(val, 1, LONG_MAX, &l))
                return bad(name, val, "milliseconds since the epoch, an integer > 0");
            o.start_at_ms = l;
        } else if (strcmp(name, "--seed") == 0) {
            if (cli_parse_long(val, 0, LONG_MAX, &l))
                return bad(name, val, "an integer >= 0");
            o.seed = (unsigned long long)l;
        } else {
            fprintf(stderr, "loadgen: unknown option \"%s\" (see --help)\n", name);
            return 2;
        }
    }
    if (!o.url) {
        fprintf(stderr, "loadgen: --url is required (see --help)\n");
        return 2;
    }
    if (!have_requests && o.duration_s > 0)
        o.requests = 0;
    if (o.requests == 0 && o.duration_s <= 0) {
        fprintf(stderr, "loadgen: --requests 0 needs --duration-s to bound the run\n");
        return 2;
    }
    return 0;
}

/* Sleep until the wall clock reads at_ms; -1 when that was more than 100 ms ago. */
static int wait_until_wall_ms(long long at_ms)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    long long now_ms = (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
    if (now_ms > at_ms + 100)
        return -1;
    struct timespec at = {(time_t)(at_ms / 1000), (long)(at_ms % 1000) * 1000000L};
    while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &at, NULL) == EINTR)
        ;
    return 0;
}

int main(int argc, char **argv)
{
    pthread_t *thr = NULL;
    struct result *res = NULL;
    struct result all = {0};
    int started = 0;
    int rc = parse_args(argc, argv);
    if (rc == 1)
        return 0;
    if (rc != 0)
        return 2;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "loadgen: curl_global_init failed\n");
        return 1;
    }
    rc = 1;
    if (o.csv) {
        csv = fopen(o.csv, "w");
        if (!csv) {
            fprintf(stderr, "loadgen: --csv \"%s\" cannot be opened: %s\n", o.csv, strerror(errno));
            goto fail;
        }
        fputs("t_ms,n,status,curl_code,latency_ms\n", csv);
    }
    thr = calloc((size_t)o.threads, sizeof *thr);
    res = calloc((size_t)o.threads, sizeof *res);
    if (!thr || !res)
        goto fail;
    if (o.start_at_ms > 0 && wait_until_wall_ms(o.start_at_ms) != 0) {
        fprintf(stderr, "loadgen: --start-at-ms %lld is already past (started late)\n",
                o.start_at_ms);
        goto fail;
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (; started < o.threads; started++) {
        res[started].idx = started;
        if (pthread_create(&thr[started], NULL, client_main, &res[started]) != 0) {
            fprintf(stderr, "loadgen: cannot start thread %d: %s\n", started, strerror(errno));
            break;
        }
    }
    for (int i = 0; i < started; i++)
        pthread_join(thr[i], NULL);
    if (started == 0)
        goto fail;
    for (int i = 0; i < started; i++) {
        struct result *r = &res[i];
        for (size_t k = 0; k < r->nlat; k++)
            if (record_latency(&all, r->lat[k]) != 0)
                goto fail;
        all.ok += r->ok;
        all.failed += r->failed;
        all.bytes += r->bytes;
        all.mismatch += r->mismatch;
        all.s429 += r->s429;
        all.s503 += r->s503;
        all.sother += r->sother;
        all.curl_errors += r->curl_errors;
        all.timeouts += r->timeouts;
        all.late += r->late;
        if (r->last_done > all.last_done)
            all.last_done = r->last_done;
    }
    if (all.nlat > 0)
        qsort(all.lat, all.nlat, sizeof *all.lat, cmp_double);
    printf("requests\tok\tfailed\tcompletion_s\tp50_ms\tp99_ms\tbytes\tbody_mismatch\t"
           "status_429\tstatus_503\tstatus_other\tcurl_errors\ttimeouts\tlate\n");
    printf("%zu\t%llu\t%llu\t%.3f\t%.3f\t%.3f\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\n",
           all.nlat, all.ok, all.failed, all.last_done, percentile(all.lat, all.nlat, 50),
           percentile(all.lat, all.nlat, 99), all.bytes, all.mismatch, all.s429, all.s503,
           all.sother, all.curl_errors, all.timeouts, all.late);
    rc = 0;
fail:
    if (csv && fclose(csv) != 0 && rc == 0) {
        fprintf(stderr, "loadgen: writing --csv \"%s\" failed\n", o.csv);
        rc = 1;
    }
    for (int i = 0; res && i < o.threads; i++)
        free(res[i].lat);
    free(all.lat);
    free(res);
    free(thr);
    curl_global_cleanup();
    return rc;
}
