/*
 * bo_config: DESIGN.md's BACKOFF_* variables, parsed strictly through an
 * injected getter.  Every accepted value and range is listed in the variable
 * table below, so the error text and the parser cannot disagree.
 *
 * Ranges chosen here (DESIGN.md leaves them open):
 *   MAX_ATTEMPTS 0..1000000; MAX_TIME_MS 0..86400000 (one day);
 *   BASE_MS 1..3600000: a zero base would make every exponential schedule
 *     retry in a hot loop, so the smallest base is 1 ms;
 *   CAP_MS 1..86400000 and not below BASE_MS; FACTOR 1..100; JITTER 0..1;
 *   WINDOW 1..1000000 and WINDOW_MAX 1..1000000, not below WINDOW;
 *   BETA 0 (the policy's own) or 0 < beta < 1; UP 1..100; DOWN 0 < d <= 1;
 *   DOWN_AFTER 1..1000000; booleans exactly "0" or "1".
 */
#include "bo_config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MS_PER_DAY 86400000LL
#define MS_PER_HOUR 3600000LL
#define COUNT_MAX 1000000LL

static const char *const policy_names[BO_POLICY_COUNT] = {
    [BO_POLICY_NONE] = "none",
    [BO_POLICY_FIXED] = "fixed",
    [BO_POLICY_LINEAR] = "linear",
    [BO_POLICY_EXPONENTIAL] = "exponential",
    [BO_POLICY_FULL_JITTER] = "full-jitter",
    [BO_POLICY_EQUAL_JITTER] = "equal-jitter",
    [BO_POLICY_DECORRELATED_JITTER] = "decorrelated-jitter",
    [BO_POLICY_GAUSSIAN_JITTER] = "gaussian-jitter",
    [BO_POLICY_THAIN] = "thain",
    [BO_POLICY_RESPONSIVE] = "responsive",
    [BO_POLICY_AIMD] = "aimd",
};

static const struct {
    const char *token;
    unsigned bit;
} retry_tokens[] = {
    {"429", BO_RETRY_429},         {"503", BO_RETRY_503},
    {"502", BO_RETRY_502},         {"504", BO_RETRY_504},
    {"500", BO_RETRY_500},         {"408", BO_RETRY_408},
    {"5xx", BO_RETRY_5XX},         {"connect", BO_RETRY_CONNECT},
    {"timeout", BO_RETRY_TIMEOUT}, {"reset", BO_RETRY_RESET},
    {"dns", BO_RETRY_DNS},
};

#define N_RETRY_TOKENS (sizeof retry_tokens / sizeof retry_tokens[0])
#define RETRY_ON_DEFAULT                                                     \
    (BO_RETRY_429 | BO_RETRY_503 | BO_RETRY_502 | BO_RETRY_504 |             \
     BO_RETRY_408 | BO_RETRY_CONNECT | BO_RETRY_TIMEOUT | BO_RETRY_RESET)

#define POLICY_LIST                                                          \
    "none, fixed, linear, exponential, full-jitter, equal-jitter, "          \
    "decorrelated-jitter, gaussian-jitter, thain, responsive or aimd"
#define RETRY_ON_LIST                                                        \
    "a comma list of 429, 503, 502, 504, 500, 408, 5xx, connect, timeout, "  \
    "reset, dns"

void bo_config_defaults(bo_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->policy = BO_POLICY_AIMD;
    cfg->max_attempts = 8;
    cfg->max_time_ms = 0;
    cfg->base_ms = 100;
    cfg->cap_ms = 20000;
    cfg->factor = 2.0;
    cfg->jitter = 0.1;
    cfg->retry_on = RETRY_ON_DEFAULT;
    cfg->unsafe_retry = false;
    cfg->window = 20;
    cfg->window_max = 1024;
    cfg->beta = 0.0;
    cfg->aimd_mode = BO_AIMD_RENO;
    cfg->up = 1.5;
    cfg->down = 0.9;
    cfg->down_after = 10;
    cfg->connect_hook = true;
    cfg->n_hosts = 0;
    cfg->verbose = false;
    cfg->seed_set = false;
    cfg->seed = 0;
    cfg->strict = false;
    cfg->pacing = true;
    cfg->ratelimit_headers = true;
    cfg->share = BO_SHARE_HOST;
}

const char *bo_policy_name(bo_policy_kind kind)
{
    if ((int)kind < 0 || kind >= BO_POLICY_COUNT)
        return NULL;
    return policy_names[kind];
}

int bo_policy_from_name(const char *name, bo_policy_kind *out)
{
    if (name == NULL)
        return -1;
    for (int i = 0; i < BO_POLICY_COUNT; i++) {
        if (strcmp(name, policy_names[i]) == 0) {
            *out = (bo_policy_kind)i;
            return 0;
        }
    }
    return -1;
}

/*
 * Quote a user's value for an error line: at most 64 characters, control and
 * non-ASCII bytes shown as '?', so the message stays one printable line.
 */
static void quote_value(const char *value, char *out, size_t outlen)
{
    size_t o = 0;
    size_t i = 0;
    for (; value[i] != '\0' && i < 64 && o + 1 < outlen; i++) {
        unsigned char c = (unsigned char)value[i];
        out[o++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    if (value[i] != '\0' && o + 4 < outlen) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
}

/*
 * Write the standard error line for `name`="value" and return -1, so a
 * parser can `return bad(...)`.  `expected` is printf-style.
 */
static int bad(char *err, size_t errlen, const char *name, const char *value,
               const char *expected, ...) __attribute__((format(printf, 5, 6)));
static int bad(char *err, size_t errlen, const char *name, const char *value,
               const char *expected, ...)
{
    char shown[80];
    char what[256];
    va_list ap;

    if (err == NULL || errlen == 0)
        return -1;
    quote_value(value, shown, sizeof shown);
    va_start(ap, expected);
    vsnprintf(what, sizeof what, expected, ap);
    va_end(ap);
    snprintf(err, errlen, "backoff: %s=\"%s\" is not valid: expected %s", name, shown,
             what);
    return -1;
}

/*
 * Strict signed integer: optional '-', then decimal digits only, the whole
 * string, no overflow.  Returns 0 and sets *out, or -1.
 */
static int parse_i64(const char *s, int64_t *out)
{
    char *end = NULL;
    const char *p = s[0] == '-' ? s + 1 : s;

    if (!isdigit((unsigned char)p[0]))
        return -1;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno == ERANGE || end == s || *end != '\0')
        return -1;
    *out = (int64_t)v;
    return 0;
}

/* Strict unsigned 64-bit decimal: digits only (strtoull would accept "-1"). */
static int parse_u64(const char *s, uint64_t *out)
{
    char *end = NULL;

    if (!isdigit((unsigned char)s[0]))
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno == ERANGE || end == s || *end != '\0')
        return -1;
    *out = (uint64_t)v;
    return 0;
}

/*
 * Strict finite double in plain decimal notation ("2", "0.25", "1e-3"):
 * starts with a digit, '-' or '.', the whole string, no overflow or
 * underflow, no hex floats, inf or nan.  strtod follows LC_NUMERIC; the
 * variables are parsed from the library's constructor, before a program
 * can call setlocale(), so the decimal point is '.'.
 */
static int parse_double(const char *s, double *out)
{
    char *end = NULL;
    const char *p = s[0] == '-' ? s + 1 : s;

    if (!isdigit((unsigned char)p[0]) && p[0] != '.')
        return -1;
    if (s[strspn(s, "0123456789.eE+-")] != '\0')
        return -1;
    errno = 0;
    double v = strtod(s, &end);
    if (errno == ERANGE || end == s || *end != '\0' || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

static int get_int(const char *name, const char *v, int64_t lo, int64_t hi, int64_t *out,
                   char *err, size_t errlen)
{
    int64_t x = 0;
    if (parse_i64(v, &x) != 0 || x < lo || x > hi)
        return bad(err, errlen, name, v, "an integer from %" PRId64 " to %" PRId64, lo, hi);
    *out = x;
    return 0;
}

static int get_bool(const char *name, const char *v, bool *out, char *err, size_t errlen)
{
    if (strcmp(v, "0") == 0)
        *out = false;
    else if (strcmp(v, "1") == 0)
        *out = true;
    else
        return bad(err, errlen, name, v, "0 or 1");
    return 0;
}

/* Parse BACKOFF_RETRY_ON; names the first empty or unknown item. */
static int get_retry_on(const char *name, const char *v, unsigned *out, char *err,
                        size_t errlen)
{
    unsigned bits = 0;
    const char *p = v;

    for (;;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        size_t i;

        if (n == 0)
            return bad(err, errlen, name, v, "%s (an item is empty)", RETRY_ON_LIST);
        for (i = 0; i < N_RETRY_TOKENS; i++) {
            if (strlen(retry_tokens[i].token) == n && memcmp(retry_tokens[i].token, p, n) == 0)
                break;
        }
        if (i == N_RETRY_TOKENS) {
            char item[80];
            char shown[80];
            snprintf(item, sizeof item, "%.*s", (int)(n < 64 ? n : 64), p);
            quote_value(item, shown, sizeof shown);
            return bad(err, errlen, name, v, "%s (unknown item \"%s\")", RETRY_ON_LIST, shown);
        }
        bits |= retry_tokens[i].bit;
        if (comma == NULL)
            break;
        p = comma + 1;
    }
    *out = bits;
    return 0;
}

static bool host_char_ok(char c)
{
    return isalnum((unsigned char)c) || c == '-' || c == '.' || c == '_';
}

static bool ipv6_char_ok(char c)
{
    return isxdigit((unsigned char)c) || c == ':' || c == '.';
}

/*
 * Write the canonical text of IPv6 literal `in` ("0:0::1" -> "::1", as
 * inet_ntop prints it, which is what the connect() hook sees) to out, which
 * may be `in`.  Returns -1 when `in` is not an IPv6 address.
 */
static int canonical_ipv6(const char *in, char *out, size_t outlen)
{
    struct in6_addr a;
    char text[INET6_ADDRSTRLEN];

    if (inet_pton(AF_INET6, in, &a) != 1 || inet_ntop(AF_INET6, &a, text, sizeof text) == NULL)
        return -1;
    if (strlen(text) >= outlen)
        return -1;
    memcpy(out, text, strlen(text) + 1);
    return 0;
}

/*
 * Parse one BACKOFF_HOSTS item of n bytes at p into h: "host", "host:port",
 * "[v6]", "[v6]:port", or a bare IPv6 literal (any port).  Stores the name
 * lower-cased and without brackets.  Returns 0 or -1.
 */
static int parse_host_item(const char *p, size_t n, bo_host *h)
{
    const char *name = p;
    size_t name_len;
    const char *port = NULL;
    size_t port_len = 0;
    bool v6 = false;

    if (n == 0)
        return -1;
    if (p[0] == '[') {
        const char *close = memchr(p, ']', n);
        if (close == NULL)
            return -1;
        name = p + 1;
        name_len = (size_t)(close - name);
        v6 = true;
        size_t rest = n - (size_t)(close + 1 - p);
        if (rest > 0) {
            if (close[1] != ':')
                return -1;
            port = close + 2;
            port_len = rest - 1;
        }
    } else {
        const char *colon = memchr(p, ':', n);
        const char *second = colon ? memchr(colon + 1, ':', n - (size_t)(colon + 1 - p)) : NULL;
        if (second != NULL) {
            v6 = true; /* bare IPv6 literal: no port possible */
            name_len = n;
        } else if (colon != NULL) {
            name_len = (size_t)(colon - p);
            port = colon + 1;
            port_len = n - name_len - 1;
        } else {
            name_len = n;
        }
    }
    if (name_len == 0 || name_len >= BO_HOST_LEN)
        return -1;
    /* A host name starts with a letter or digit (RFC 1123), never '-' or '.'. */
    if (!v6 && !isalnum((unsigned char)name[0]))
        return -1;
    for (size_t i = 0; i < name_len; i++) {
        if (v6 ? !ipv6_char_ok(name[i]) : !host_char_ok(name[i]))
            return -1;
        h->name[i] = (char)tolower((unsigned char)name[i]);
    }
    h->name[name_len] = '\0';
    if (v6 && canonical_ipv6(h->name, h->name, sizeof h->name) != 0)
        return -1;
    h->port = 0;
    if (port != NULL) {
        char buf[8];
        int64_t x;
        if (port_len == 0 || port_len >= sizeof buf)
            return -1;
        memcpy(buf, port, port_len);
        buf[port_len] = '\0';
        if (buf[0] == '-' || parse_i64(buf, &x) != 0 || x < 1 || x > 65535)
            return -1;
        h->port = (int)x;
    }
    return 0;
}

/* Parse BACKOFF_HOSTS into cfg; names the first bad item. */
static int get_hosts(const char *name, const char *v, bo_config *cfg, char *err,
                     size_t errlen)
{
    static const char what[] =
        "a comma list of at most 32 host, host:port, [ipv6] or [ipv6]:port items, "
        "port 1 to 65535";
    bo_host hosts[BO_MAX_HOSTS];
    size_t count = 0;
    const char *p = v;

    /* Zeroed so that equal host lists give byte-identical configs. */
    memset(hosts, 0, sizeof hosts);

    for (;;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);

        if (count == BO_MAX_HOSTS)
            return bad(err, errlen, name, v, "%s (too many items)", what);
        if (parse_host_item(p, n, &hosts[count]) != 0) {
            char item[80];
            char shown[80];
            snprintf(item, sizeof item, "%.*s", (int)(n < 64 ? n : 64), p);
            quote_value(item, shown, sizeof shown);
            return bad(err, errlen, name, v, "%s (bad item \"%s\")", what, shown);
        }
        count++;
        if (comma == NULL)
            break;
        p = comma + 1;
    }
    memcpy(cfg->hosts, hosts, count * sizeof hosts[0]);
    cfg->n_hosts = count;
    return 0;
}

static int get_path(const char *name, const char *v, char *out, char *err, size_t errlen)
{
    size_t n = strlen(v);
    if (n >= BO_PATH_LEN)
        return bad(err, errlen, name, v, "a path shorter than %d bytes", BO_PATH_LEN);
    for (size_t i = 0; i < n; i++) {
        if ((unsigned char)v[i] < 0x20)
            return bad(err, errlen, name, v, "a path without control characters");
    }
    memcpy(out, v, n + 1);
    return 0;
}

/*
 * Parse every variable.  Order matters only for the error reported first;
 * the cross-checks (cap against base, window_max against window) run once
 * both sides are known, and blame whichever side the user set.
 */
int bo_config_load(bo_config *cfg, bo_getenv_fn get, void *ctx, char *err, size_t errlen)
{
    const char *v;
    const char *base_v = NULL, *cap_v = NULL, *win_v = NULL, *winmax_v = NULL;
    int64_t x = 0;
    double d = 0;

    if (err != NULL && errlen > 0)
        err[0] = '\0';
    bo_config_defaults(cfg);

#define GET(var) ((v = get(ctx, (var))) != NULL)

    if (GET("BACKOFF_POLICY")) {
        if (bo_policy_from_name(v, &cfg->policy) != 0)
            return bad(err, errlen, "BACKOFF_POLICY", v, "%s", POLICY_LIST);
    }
    if (GET("BACKOFF_MAX_ATTEMPTS")) {
        if (get_int("BACKOFF_MAX_ATTEMPTS", v, 0, COUNT_MAX, &x, err, errlen) != 0)
            return -1;
        cfg->max_attempts = (unsigned)x;
    }
    if (GET("BACKOFF_MAX_TIME_MS")) {
        if (get_int("BACKOFF_MAX_TIME_MS", v, 0, MS_PER_DAY, &cfg->max_time_ms, err, errlen) != 0)
            return -1;
    }
    if (GET("BACKOFF_BASE_MS")) {
        if (get_int("BACKOFF_BASE_MS", v, 1, MS_PER_HOUR, &cfg->base_ms, err, errlen) != 0)
            return -1;
        base_v = v;
    }
    if (GET("BACKOFF_CAP_MS")) {
        if (get_int("BACKOFF_CAP_MS", v, 1, MS_PER_DAY, &cfg->cap_ms, err, errlen) != 0)
            return -1;
        cap_v = v;
    }
    if (GET("BACKOFF_FACTOR")) {
        if (parse_double(v, &d) != 0 || d < 1.0 || d > 100.0)
            return bad(err, errlen, "BACKOFF_FACTOR", v, "a number from 1 to 100");
        cfg->factor = d;
    }
    if (GET("BACKOFF_JITTER")) {
        if (parse_double(v, &d) != 0 || d < 0.0 || d > 1.0)
            return bad(err, errlen, "BACKOFF_JITTER", v, "a number from 0 to 1");
        cfg->jitter = d;
    }
    if (GET("BACKOFF_RETRY_ON")) {
        if (get_retry_on("BACKOFF_RETRY_ON", v, &cfg->retry_on, err, errlen) != 0)
            return -1;
    }
    if (GET("BACKOFF_UNSAFE_RETRY")) {
        if (get_bool("BACKOFF_UNSAFE_RETRY", v, &cfg->unsafe_retry, err, errlen) != 0)
            return -1;
    }
    if (GET("BACKOFF_WINDOW")) {
        if (get_int("BACKOFF_WINDOW", v, 1, COUNT_MAX, &x, err, errlen) != 0)
            return -1;
        cfg->window = (unsigned)x;
        win_v = v;
    }
    if (GET("BACKOFF_WINDOW_MAX")) {
        if (get_int("BACKOFF_WINDOW_MAX", v, 1, COUNT_MAX, &x, err, errlen) != 0)
            return -1;
        cfg->window_max = (unsigned)x;
        winmax_v = v;
    }
    if (GET("BACKOFF_BETA")) {
        if (parse_double(v, &d) != 0 || d < 0.0 || d >= 1.0)
            return bad(err, errlen, "BACKOFF_BETA", v,
                       "0 (the policy's own) or a number above 0 and below 1");
        cfg->beta = d;
    }
    if (GET("BACKOFF_AIMD_MODE")) {
        if (strcmp(v, "reno") == 0)
            cfg->aimd_mode = BO_AIMD_RENO;
        else if (strcmp(v, "tahoe") == 0)
            cfg->aimd_mode = BO_AIMD_TAHOE;
        else
            return bad(err, errlen, "BACKOFF_AIMD_MODE", v, "reno or tahoe");
    }
    if (GET("BACKOFF_SHARE")) {
        if (strcmp(v, "host") == 0)
            cfg->share = BO_SHARE_HOST;
        else if (strcmp(v, "process") == 0)
            cfg->share = BO_SHARE_PROCESS;
        else
            return bad(err, errlen, "BACKOFF_SHARE", v, "host or process");
    }
    if (GET("BACKOFF_UP")) {
        if (parse_double(v, &d) != 0 || d < 1.0 || d > 100.0)
            return bad(err, errlen, "BACKOFF_UP", v, "a number from 1 to 100");
        cfg->up = d;
    }
    if (GET("BACKOFF_DOWN")) {
        if (parse_double(v, &d) != 0 || !(d > 0.0) || d > 1.0)
            return bad(err, errlen, "BACKOFF_DOWN", v, "a number above 0 and at most 1");
        cfg->down = d;
    }
    if (GET("BACKOFF_DOWN_AFTER")) {
        if (get_int("BACKOFF_DOWN_AFTER", v, 1, COUNT_MAX, &x, err, errlen) != 0)
            return -1;
        cfg->down_after = (unsigned)x;
    }
    if (GET("BACKOFF_CONNECT")) {
        if (get_bool("BACKOFF_CONNECT", v, &cfg->connect_hook, err, errlen) != 0)
            return -1;
    }
    if (GET("BACKOFF_HOSTS")) {
        if (get_hosts("BACKOFF_HOSTS", v, cfg, err, errlen) != 0)
            return -1;
    }
    if (GET("BACKOFF_STATS")) {
        if (get_path("BACKOFF_STATS", v, cfg->stats_path, err, errlen) != 0)
            return -1;
    }
    if (GET("BACKOFF_TRACE")) {
        if (get_path("BACKOFF_TRACE", v, cfg->trace_path, err, errlen) != 0)
            return -1;
    }
    if (GET("BACKOFF_VERBOSE")) {
        if (get_bool("BACKOFF_VERBOSE", v, &cfg->verbose, err, errlen) != 0)
            return -1;
    }
    if (GET("BACKOFF_SEED")) {
        if (parse_u64(v, &cfg->seed) != 0)
            return bad(err, errlen, "BACKOFF_SEED", v,
                       "an integer from 0 to 18446744073709551615");
        cfg->seed_set = true;
    }
    if (GET("BACKOFF_PACING")) {
        if (get_bool("BACKOFF_PACING", v, &cfg->pacing, err, errlen) != 0)
            return -1;
    }
    if (GET("BACKOFF_RATELIMIT_HEADERS")) {
        if (get_bool("BACKOFF_RATELIMIT_HEADERS", v, &cfg->ratelimit_headers, err, errlen) != 0)
            return -1;
    }
    if (GET("BACKOFF_STRICT")) {
        if (get_bool("BACKOFF_STRICT", v, &cfg->strict, err, errlen) != 0)
            return -1;
    }
#undef GET

    if (cfg->cap_ms < cfg->base_ms) {
        if (cap_v != NULL)
            return bad(err, errlen, "BACKOFF_CAP_MS", cap_v,
                       "an integer from BACKOFF_BASE_MS (%" PRId64 ") to %lld", cfg->base_ms,
                       MS_PER_DAY);
        return bad(err, errlen, "BACKOFF_BASE_MS", base_v,
                   "an integer from 1 to BACKOFF_CAP_MS (%" PRId64 ")", cfg->cap_ms);
    }
    if (cfg->window_max < cfg->window) {
        if (winmax_v != NULL)
            return bad(err, errlen, "BACKOFF_WINDOW_MAX", winmax_v,
                       "an integer from BACKOFF_WINDOW (%u) to %lld", cfg->window, COUNT_MAX);
        return bad(err, errlen, "BACKOFF_WINDOW", win_v,
                   "an integer from 1 to BACKOFF_WINDOW_MAX (%u)", cfg->window_max);
    }
    return 0;
}

/*
 * Strip the brackets of "[v6]", put IPv6 literals in canonical form and
 * compare case-insensitively, so that curl's URL host ("[0::1]") and
 * inet_ntop's ("::1") both match an entry "[::1]".
 */
bool bo_config_host_matches(const bo_config *cfg, const char *host, int port)
{
    char v6[BO_HOST_LEN];
    size_t n;

    if (cfg->n_hosts == 0)
        return true;
    if (host == NULL)
        return false;
    n = strlen(host);
    if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
        host++;
        n -= 2;
    }
    /* IPv6 literals compare in canonical form, as the list stores them. */
    if (memchr(host, ':', n) != NULL && n < sizeof v6) {
        memcpy(v6, host, n);
        v6[n] = '\0';
        if (canonical_ipv6(v6, v6, sizeof v6) == 0) {
            host = v6;
            n = strlen(v6);
        }
    }
    for (size_t i = 0; i < cfg->n_hosts; i++) {
        const bo_host *h = &cfg->hosts[i];
        if (strlen(h->name) == n && strncasecmp(h->name, host, n) == 0 &&
            (h->port == 0 || h->port == port))
            return true;
    }
    return false;
}

/* Appends to a bounded buffer, counting what the whole text needs. */
typedef struct outbuf {
    char *buf;
    size_t len;
    size_t need;
} outbuf;

static void out_add(outbuf *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out_add(outbuf *o, const char *fmt, ...)
{
    va_list ap;
    size_t room = o->need < o->len ? o->len - o->need : 0;
    va_start(ap, fmt);
    int n = vsnprintf(room ? o->buf + o->need : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->need += (size_t)n;
}

/* The shortest %g text that reads back as exactly the same double. */
static void out_double(outbuf *o, const char *name, double v)
{
    char tmp[40];
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        if (strtod(tmp, NULL) == v)
            break;
    }
    out_add(o, "%s=%s\n", name, tmp);
}

/*
 * One "BACKOFF_X=value" line per variable, every variable.  A variable in
 * its unset state (HOSTS: every destination, SEED: from the clock, STATS and
 * TRACE: off) prints with an empty value, which reads back as unset.
 */
size_t bo_config_format(const bo_config *cfg, char *buf, size_t len)
{
    outbuf o = {buf, len, 0};
    const char *pname = bo_policy_name(cfg->policy);
    bool first = true;

    if (buf != NULL && len > 0)
        buf[0] = '\0';
    out_add(&o, "BACKOFF_POLICY=%s\n", pname ? pname : "?");
    out_add(&o, "BACKOFF_MAX_ATTEMPTS=%u\n", cfg->max_attempts);
    out_add(&o, "BACKOFF_MAX_TIME_MS=%" PRId64 "\n", cfg->max_time_ms);
    out_add(&o, "BACKOFF_BASE_MS=%" PRId64 "\n", cfg->base_ms);
    out_add(&o, "BACKOFF_CAP_MS=%" PRId64 "\n", cfg->cap_ms);
    out_double(&o, "BACKOFF_FACTOR", cfg->factor);
    out_double(&o, "BACKOFF_JITTER", cfg->jitter);
    out_add(&o, "BACKOFF_RETRY_ON=");
    for (size_t i = 0; i < N_RETRY_TOKENS; i++) {
        if (cfg->retry_on & retry_tokens[i].bit) {
            out_add(&o, "%s%s", first ? "" : ",", retry_tokens[i].token);
            first = false;
        }
    }
    out_add(&o, "\n");
    out_add(&o, "BACKOFF_UNSAFE_RETRY=%d\n", cfg->unsafe_retry ? 1 : 0);
    out_add(&o, "BACKOFF_WINDOW=%u\n", cfg->window);
    out_add(&o, "BACKOFF_WINDOW_MAX=%u\n", cfg->window_max);
    out_double(&o, "BACKOFF_BETA", cfg->beta);
    out_add(&o, "BACKOFF_AIMD_MODE=%s\n", cfg->aimd_mode == BO_AIMD_TAHOE ? "tahoe" : "reno");
    out_double(&o, "BACKOFF_UP", cfg->up);
    out_double(&o, "BACKOFF_DOWN", cfg->down);
    out_add(&o, "BACKOFF_DOWN_AFTER=%u\n", cfg->down_after);
    out_add(&o, "BACKOFF_CONNECT=%d\n", cfg->connect_hook ? 1 : 0);
    out_add(&o, "BACKOFF_HOSTS=");
    for (size_t i = 0; i < cfg->n_hosts && i < BO_MAX_HOSTS; i++) {
        const bo_host *h = &cfg->hosts[i];
        bool v6 = strchr(h->name, ':') != NULL;
        out_add(&o, "%s%s%s%s", i ? "," : "", v6 ? "[" : "", h->name, v6 ? "]" : "");
        if (h->port != 0)
            out_add(&o, ":%d", h->port);
    }
    out_add(&o, "\n");
    out_add(&o, "BACKOFF_STATS=%s\n", cfg->stats_path);
    out_add(&o, "BACKOFF_TRACE=%s\n", cfg->trace_path);
    out_add(&o, "BACKOFF_VERBOSE=%d\n", cfg->verbose ? 1 : 0);
    if (cfg->seed_set)
        out_add(&o, "BACKOFF_SEED=%" PRIu64 "\n", cfg->seed);
    else
        out_add(&o, "BACKOFF_SEED=\n");
    out_add(&o, "BACKOFF_STRICT=%d\n", cfg->strict ? 1 : 0);
    out_add(&o, "BACKOFF_PACING=%d\n", cfg->pacing ? 1 : 0);
    out_add(&o, "BACKOFF_RATELIMIT_HEADERS=%d\n", cfg->ratelimit_headers ? 1 : 0);
    out_add(&o, "BACKOFF_SHARE=%s\n", cfg->share == BO_SHARE_PROCESS ? "process" : "host");
    return o.need;
}
