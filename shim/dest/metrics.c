/*
 * metrics.c: the host-wide counts and gauges of every destination in the
 * forms monitoring reads (metrics.h): the OpenMetrics and Prometheus text
 * formats, JSON, and `backoff --status --format=F`.  Linked into the
 * library (metrics_file.c writes BACKOFF_METRICS_FILE with it) and the
 * wrapper.
 */
#include "dest/metrics.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <locale.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bo_time.h"
#include "core/core.h"

static const char *const k_formats[] = {
    [BO_METRICS_TABLE] = "table",
    [BO_METRICS_OPENMETRICS] = "openmetrics",
    [BO_METRICS_PROMETHEUS] = "prometheus",
    [BO_METRICS_JSON] = "json",
};

int bo_metrics_format_named(const char *name, bo_metrics_format *out)
{
    for (size_t i = 0; name != NULL && i < sizeof k_formats / sizeof k_formats[0]; i++) {
        if (strcmp(name, k_formats[i]) == 0) {
            *out = (bo_metrics_format)i;
            return 0;
        }
    }
    return -1;
}

/* ---- labels ------------------------------------------------------------ */

size_t bo_metrics_label(const char *key, char *out, size_t len)
{
    const char *sep = strstr(key, "://");
    size_t n = 0;

    if (sep == NULL) { /* tcp:// and http[s]:// have one; unix:path is a path */
        n = strlen(key);
        if (n >= len)
            n = len - 1;
        memcpy(out, key, n);
        out[n] = '\0';
        return n;
    }
    const char *auth = sep + 3;
    size_t alen = strcspn(auth, "/?#");
    const char *at = NULL;
    for (size_t i = 0; i < alen; i++)
        if (auth[i] == '@')
            at = auth + i;
    size_t head = (size_t)(auth - key);
    const char *host = at != NULL ? at + 1 : auth;
    size_t hlen = (size_t)(auth + alen - host);
    if (head >= len)
        head = len - 1;
    memcpy(out, key, head);
    n = head;
    if (hlen > len - 1 - n)
        hlen = len - 1 - n;
    memcpy(out + n, host, hlen);
    n += hlen;
    out[n] = '\0';
    return n;
}

/* The length of the valid UTF-8 sequence at s (n bytes left), 0 when it is not one. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t k;
    unsigned min, cp;

    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        k = 2, min = 0x80, cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        k = 3, min = 0x800, cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        k = 4, min = 0x10000, cp = c & 0x07;
    } else {
        return 0;
    }
    if (n < k)
        return 0;
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return k;
}

/*
 * s as the format's string: a label value's escapes (backslash, double
 * quote and newline: OpenMetrics and the 0.0.4 text format alike) or
 * JSON's (those and every control character); bytes that are not UTF-8 (a
 * UNIX socket's path may hold any) become U+FFFD, since both formats are
 * UTF-8 text.
 */
static void put_string(FILE *out, const char *s, bool json)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);

    while (n > 0) {
        size_t k = utf8_len(p, n);
        if (k == 0) {
            fputs(json ? "\\ufffd" : "\xef\xbf\xbd", out);
            k = 1;
        } else if (*p == '\\') {
            fputs("\\\\", out);
        } else if (*p == '"') {
            fputs("\\\"", out);
        } else if (*p == '\n') {
            fputs("\\n", out);
        } else if (json && *p < 0x20) {
            fprintf(out, "\\u%04x", *p);
        } else {
            fwrite(p, 1, k, out);
        }
        p += k;
        n -= k;
    }
}

static void put_label(FILE *out, const char *key, bool json)
{
    char label[BO_SHARE_KEY_LEN];
    bo_metrics_label(key, label, sizeof label);
    put_string(out, label, json);
}

/* ---- the families ------------------------------------------------------ */

/* Host-wide: said in every counter's help, as the issue asks. */
#define NOT_COUNTED " (host-wide; processes under BACKOFF_SHARE=process are not counted)"

typedef enum fam_kind { FAM_COUNTER, FAM_GAUGE } fam_kind;

/* What a family's sample of one destination is (sample()). */
typedef enum fam_value {
    V_CALLS, V_ATTEMPTS, V_RETRIES, V_THROTTLED, V_FAILED, V_GAVE_UP, V_BUDGET, V_WAIT,
    V_WINDOW, V_PACE, V_IN_FLIGHT, V_PROCESSES, V_THROTTLE_AGE, V_THROTTLE_TIME
} fam_value;

typedef struct family {
    const char *name;   /* the family; a counter's samples add _total */
    fam_kind kind;
    const char *unit;   /* OpenMetrics' UNIT, NULL: none */
    fam_value value;
    const char *help;
} family;

static const family k_families[] = {
    {"backoff_calls", FAM_COUNTER, NULL, V_CALLS,
     "Calls (a libcurl transfer or a connect()) that ended, however many attempts they took"
     NOT_COUNTED},
    {"backoff_attempts", FAM_COUNTER, NULL, V_ATTEMPTS,
     "Attempts that completed, first ones and retries" NOT_COUNTED},
    {"backoff_retries", FAM_COUNTER, NULL, V_RETRIES,
     "Attempts that were retried" NOT_COUNTED},
    {"backoff_throttled", FAM_COUNTER, NULL, V_THROTTLED,
     "Attempts answered 429, 503 or 504, or that got no connection (kind connect: refused, "
     "unreachable, timed out connecting) or timed out (kind timeout), by kind" NOT_COUNTED},
    {"backoff_failed", FAM_COUNTER, NULL, V_FAILED,
     "Calls that ended without a success" NOT_COUNTED},
    {"backoff_gave_up", FAM_COUNTER, NULL, V_GAVE_UP,
     "Calls that ended on a failure the policy would have retried: attempts or time "
     "spent" NOT_COUNTED},
    {"backoff_budget_delayed", FAM_COUNTER, NULL, V_BUDGET,
     "Calls a retry of which waited for the destination's retry budget (BACKOFF_RETRY_BUDGET: "
     "it says when a retry goes, never ends a call)" NOT_COUNTED},
    {"backoff_wait_seconds", FAM_COUNTER, "seconds", V_WAIT,
     "Time calls waited on the programs' behalf inside blocking calls (curl_easy_perform, "
     "connect; a multi transfer waits in the program's own loop)" NOT_COUNTED},
    {"backoff_window", FAM_GAUGE, NULL, V_WINDOW,
     "The destination's window of attempts in flight (aimd; the other policies keep one too)"},
    {"backoff_pace_per_second", FAM_GAUGE, NULL, V_PACE,
     "Sends a second the destination is paced at (a metered rate, rate-limit headers, "
     "responsive's delay); absent: not paced"},
    {"backoff_in_flight", FAM_GAUGE, NULL, V_IN_FLIGHT,
     "Attempts in flight to the destination now"},
    {"backoff_processes", FAM_GAUGE, NULL, V_PROCESSES,
     "Processes attached to the destination: busy (using it now) or idle (used it and may "
     "come back)"},
    {"backoff_last_throttle_age_seconds", FAM_GAUGE, "seconds", V_THROTTLE_AGE,
     "Seconds since the destination last answered 429, 503 or 504, when the figures were "
     "read (in BACKOFF_METRICS_FILE prefer the timestamp); absent: never"},
    {"backoff_last_throttle_timestamp_seconds", FAM_GAUGE, "seconds", V_THROTTLE_TIME,
     "Unix time the destination last answered 429, 503 or 504; absent: never"},
};

/* Throttle kinds in the order they are written. */
static const bo_cause k_kinds[] = {BO_CAUSE_429, BO_CAUSE_503, BO_CAUSE_504, BO_CAUSE_CONNECT,
                                   BO_CAUSE_TIMEOUT};

static int by_key(const void *a, const void *b)
{
    return strcmp(((const bo_share_view *)a)->key, ((const bo_share_view *)b)->key);
}

/* Sort, then fold each run of one destination into its first view; returns the count left. */
static size_t merge(bo_share_view *v, size_t n)
{
    size_t k = 0;

    if (n > 1)
        qsort(v, n, sizeof *v, by_key);
    for (size_t i = 0; i < n; i++) {
        if (k > 0 && strcmp(v[k - 1].key, v[i].key) == 0) {
            bo_share_view *m = &v[k - 1];
            const bo_share_counts *c = &v[i].counts;
            if (c->attempts > m->counts.attempts) { /* the gauges of the busiest state */
                m->window = v[i].window;
                m->pace_hz = v[i].pace_hz;
            }
            m->counts.calls += c->calls;
            m->counts.attempts += c->attempts;
            m->counts.retries += c->retries;
            m->counts.failed += c->failed;
            m->counts.gave_up += c->gave_up;
            m->counts.budget_delayed += c->budget_delayed;
            m->counts.wait_ns += c->wait_ns;
            for (size_t j = 0; j < BO_CAUSE_COUNT; j++)
                m->counts.throttled[j] += c->throttled[j];
            if (c->last_throttle_ns > m->counts.last_throttle_ns)
                m->counts.last_throttle_ns = c->last_throttle_ns;
            m->in_flight += v[i].in_flight;
            m->busy += v[i].busy;
            m->idle += v[i].idle;
            continue;
        }
        if (k != i)
            v[k] = v[i];
        k++;
    }
    return k;
}

/* The shortest %g text that reads back as exactly v. */
static void put_double(FILE *out, double v)
{
    char tmp[40];
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        if (strtod(tmp, NULL) == v)
            break;
    }
    fputs(tmp, out);
}

static void put_ns_as_s(FILE *out, int64_t ns)
{
    fprintf(out, "%" PRId64 ".%03" PRId64, (int64_t)(ns / BO_NS_PER_S),
            (int64_t)(ns % BO_NS_PER_S / BO_NS_PER_MS));
}

/* The age of the last throttle at mono_ns; -1: never (or a time from the future). */
static int64_t throttle_age(const bo_share_view *v, int64_t mono_ns)
{
    int64_t t = v->counts.last_throttle_ns;
    return t == 0 || t > mono_ns ? -1 : mono_ns - t;
}

/* One sample line's start: "name{destination="..."" (the caller closes it);
 * label is the destination's, escaped. */
static void sample_head(FILE *out, const family *f, const char *label)
{
    fputs(f->name, out);
    fputs(f->kind == FAM_COUNTER ? "_total{destination=\"" : "{destination=\"", out);
    fputs(label, out);
    fputc('"', out);
}

/* The samples of family f for view v, whose label is label (escaped). */
static void samples(FILE *out, const family *f, const bo_share_view *v, const char *label,
                    int64_t mono_ns, int64_t wall_ns)
{
    const bo_share_counts *c = &v->counts;
    uint64_t count = 0;
    int64_t age = throttle_age(v, mono_ns);

    switch (f->value) {
    case V_THROTTLED:
        for (size_t i = 0; i < sizeof k_kinds / sizeof k_kinds[0]; i++) {
            sample_head(out, f, label);
            fprintf(out, ",kind=\"%s\"} %" PRIu64 "\n", bo_cause_name(k_kinds[i]),
                    c->throttled[k_kinds[i]]);
        }
        return;
    case V_PROCESSES:
        sample_head(out, f, label);
        fprintf(out, ",state=\"busy\"} %u\n", v->busy);
        sample_head(out, f, label);
        fprintf(out, ",state=\"idle\"} %u\n", v->idle);
        return;
    case V_WAIT:
        sample_head(out, f, label);
        fputs("} ", out);
        put_ns_as_s(out, (int64_t)(c->wait_ns > INT64_MAX ? INT64_MAX : c->wait_ns));
        fputc('\n', out);
        return;
    case V_WINDOW:
    case V_PACE:
        if (f->value == V_PACE && !(v->pace_hz > 0))
            return;
        sample_head(out, f, label);
        fputs("} ", out);
        put_double(out, f->value == V_PACE ? v->pace_hz : v->window);
        fputc('\n', out);
        return;
    case V_THROTTLE_AGE:
    case V_THROTTLE_TIME:
        if (age < 0)
            return;
        sample_head(out, f, label);
        fputs("} ", out);
        put_ns_as_s(out, f->value == V_THROTTLE_AGE ? age : wall_ns - age);
        fputc('\n', out);
        return;
    case V_IN_FLIGHT:
        count = v->in_flight;
        break;
    case V_CALLS:
        count = c->calls;
        break;
    case V_ATTEMPTS:
        count = c->attempts;
        break;
    case V_RETRIES:
        count = c->retries;
        break;
    case V_FAILED:
        count = c->failed;
        break;
    case V_GAVE_UP:
        count = c->gave_up;
        break;
    case V_BUDGET:
        count = c->budget_delayed;
        break;
    }
    sample_head(out, f, label);
    fprintf(out, "} %" PRIu64 "\n", count);
}

/* HELP's text: backslash and newline escaped (the texts hold none: one fputs). */
static void put_help(FILE *out, const char *s)
{
    if (strpbrk(s, "\\\n") == NULL) {
        fputs(s, out);
        return;
    }
    for (; *s != '\0'; s++) {
        if (*s == '\\')
            fputs("\\\\", out);
        else if (*s == '\n')
            fputs("\\n", out);
        else
            fputc(*s, out);
    }
}

/*
 * Every destination's label, escaped once (a file of 10,000 destinations has
 * 170,000 samples): the labels one after another in *buf, each ended by a
 * NUL, their offsets in *off.  0, or -1 when memory ran out.
 */
static int escape_labels(const bo_share_view *v, size_t n, char **buf, size_t **off)
{
    size_t len = 0;
    FILE *mem = open_memstream(buf, &len);

    *off = malloc((n + 1) * sizeof **off);
    if (mem == NULL || *off == NULL) {
        if (mem != NULL)
            fclose(mem);
        free(*buf);
        free(*off);
        *buf = NULL;
        *off = NULL;
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        (*off)[i] = (size_t)ftell(mem);
        put_label(mem, v[i].key, false);
        fputc('\0', mem);
    }
    if (fclose(mem) != 0) {
        free(*buf);
        free(*off);
        *buf = NULL;
        *off = NULL;
        return -1;
    }
    return 0;
}

static int render_text(FILE *out, bool open_metrics, const bo_share_view *v, size_t n,
                       int64_t mono_ns, int64_t wall_ns)
{
    char *labels = NULL;
    size_t *off = NULL;

    if (escape_labels(v, n, &labels, &off) != 0) {
        errno = ENOMEM;
        return -1;
    }
    for (size_t i = 0; i < sizeof k_families / sizeof k_families[0]; i++) {
        const family *f = &k_families[i];
        /* 0.0.4 names a counter by its sample; OpenMetrics by its family */
        const char *suffix = !open_metrics && f->kind == FAM_COUNTER ? "_total" : "";
        fprintf(out, "# HELP %s%s ", f->name, suffix);
        put_help(out, f->help);
        fprintf(out, ".\n# TYPE %s%s %s\n", f->name, suffix,
                f->kind == FAM_COUNTER ? "counter" : "gauge");
        if (open_metrics && f->unit != NULL)
            fprintf(out, "# UNIT %s %s\n", f->name, f->unit);
        for (size_t j = 0; j < n; j++)
            samples(out, f, &v[j], labels + off[j], mono_ns, wall_ns);
    }
    if (open_metrics)
        fputs("# EOF\n", out);
    free(labels);
    free(off);
    return 0;
}

static void render_json(FILE *out, const bo_share_view *v, size_t n, int64_t mono_ns,
                        int64_t wall_ns)
{
    fputs("{\"scope\":\"host\",\"not_counted\":\"processes under BACKOFF_SHARE=process (each "
          "keeps its own figures: BACKOFF_STATS)\",\"destinations\":[",
          out);
    for (size_t i = 0; i < n; i++) {
        const bo_share_counts *c = &v[i].counts;
        int64_t age = throttle_age(&v[i], mono_ns);
        fputs(i == 0 ? "\n{\"destination\":\"" : ",\n{\"destination\":\"", out);
        put_label(out, v[i].key, true);
        fprintf(out,
                "\",\"calls\":%" PRIu64 ",\"attempts\":%" PRIu64 ",\"retries\":%" PRIu64
                ",\"failed\":%" PRIu64 ",\"gave_up\":%" PRIu64 ",\"budget_delayed\":%" PRIu64
                ",\"throttled\":{",
                c->calls, c->attempts, c->retries, c->failed, c->gave_up, c->budget_delayed);
        for (size_t k = 0; k < sizeof k_kinds / sizeof k_kinds[0]; k++)
            fprintf(out, "%s\"%s\":%" PRIu64, k == 0 ? "" : ",", bo_cause_name(k_kinds[k]),
                    c->throttled[k_kinds[k]]);
        fprintf(out, "},\"wait_ms\":%" PRIu64 ",\"window\":", c->wait_ns / (uint64_t)BO_NS_PER_MS);
        put_double(out, v[i].window);
        fputs(",\"pace_per_s\":", out);
        if (v[i].pace_hz > 0)
            put_double(out, v[i].pace_hz);
        else
            fputs("null", out);
        fprintf(out, ",\"in_flight\":%u,\"processes\":{\"busy\":%u,\"idle\":%u}", v[i].in_flight,
                v[i].busy, v[i].idle);
        fputs(",\"last_throttle_age_s\":", out);
        if (age >= 0)
            put_ns_as_s(out, age);
        else
            fputs("null", out);
        fputs(",\"last_throttle_unix\":", out);
        if (age >= 0)
            put_ns_as_s(out, wall_ns - age);
        else
            fputs("null", out);
        fputc('}', out);
    }
    fputs(n > 0 ? "\n]}\n" : "]}\n", out);
}

int bo_metrics_render(FILE *out, bo_metrics_format fmt, bo_share_view *views, size_t n,
                      int64_t mono_ns, int64_t wall_ns)
{
    /* "%g" and "%f" follow the program's LC_NUMERIC: a decimal comma is
     * neither format's number */
    locale_t c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    locale_t before = c_locale != (locale_t)0 ? uselocale(c_locale) : (locale_t)0;

    int rc = 0;
    n = merge(views, n);
    if (fmt == BO_METRICS_JSON)
        render_json(out, views, n, mono_ns, wall_ns);
    else
        rc = render_text(out, fmt == BO_METRICS_OPENMETRICS, views, n, mono_ns, wall_ns);
    if (c_locale != (locale_t)0) {
        uselocale(before);
        freelocale(c_locale);
    }
    return rc != 0 || ferror(out) ? -1 : 0;
}

int bo_metrics_status(FILE *out, FILE *err, bo_metrics_format fmt)
{
    char why[PATH_MAX + 256];
    bo_share_view *v = NULL;
    size_t n = 0;

    if (fmt == BO_METRICS_TABLE)
        return bo_share_status(out);
    int rc = bo_share_views(NULL, &v, &n, 0, why, sizeof why);
    if (rc == 2) {
        fprintf(err, "backoff: shared state not readable: %s\n", why);
        return 2;
    }
    rc = bo_metrics_render(out, fmt, v, n, bo_core_now_ns(), bo_core_wall_ns());
    free(v);
    if (fflush(out) != 0 || rc != 0) {
        fprintf(err, "backoff: --status: cannot write the output: %s\n", strerror(errno));
        return 2;
    }
    return 0;
}
