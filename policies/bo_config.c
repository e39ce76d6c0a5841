/*
 * bo_config: the BACKOFF_* variables, parsed strictly through an
 * injected getter.  Every accepted value and range is listed in the variable
 * table below, so the error text and the parser cannot disagree.
 *
 * The ranges:
 *   MAX_ATTEMPTS 0..1000000; MAX_TIME_MS 0..86400000 (one day);
 *   BASE_MS 1..3600000: a zero base would make every exponential schedule
 *     retry in a hot loop, so the smallest base is 1 ms;
 *   CAP_MS 1..86400000 and not below BASE_MS; FACTOR 1..100; JITTER 0..1;
 *   WINDOW 1..1000000 and WINDOW_MAX 1..1000000, not below WINDOW;
 *   BETA 0 (the policy's own) or 0 < beta < 1; UP 1..100; DOWN 0 < d <= 1;
 *   DOWN_AFTER 1..1000000; RETRY_BUDGET 0..1000 (percent, 0 = off);
 *   booleans exactly "0" or "1"; METRICS_FILE an absolute path (a relative
 *   one would be another file in each process's directory); METRICS_MODE
 *   octal, at most 0777.
 */
#include "bo_config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
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
    [BO_POLICY_AWS_ADAPTIVE] = "aws-adaptive",
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
    "decorrelated-jitter, gaussian-jitter, thain, responsive, aws-adaptive or aimd"
#define HOSTS_LIST                                                           \
    "a comma list of at most 32 host, host:port, [ipv6] or [ipv6]:port items, "   \
    "port 1 to 65535"
#define RETRY_ON_LIST                                                        \
    "a comma list of 429, 503, 502, 504, 500, 408, 5xx, connect, timeout, "  \
    "reset, dns"

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
    static const char what[] = HOSTS_LIST;
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

static int get_path(const bo_var *var, const char *v, char *out, char *err, size_t errlen)
{
    bool absolute = (var->flags & BO_VAR_ABSOLUTE) != 0;
    size_t n = strlen(v);
    if (n >= BO_PATH_LEN)
        return bad(err, errlen, var->name, v, "%s path shorter than %d bytes",
                   absolute ? "an absolute" : "a", BO_PATH_LEN);
    for (size_t i = 0; i < n; i++) {
        if ((unsigned char)v[i] < 0x20)
            return bad(err, errlen, var->name, v, "a path without control characters");
    }
    /* a relative path would name another file in every process's own directory */
    if (absolute && n > 0 && v[0] != '/')
        return bad(err, errlen, var->name, v, "an absolute path (starting with /)");
    memcpy(out, v, n + 1);
    return 0;
}

/* An octal file mode: 1 to 4 octal digits, at most 0777 (no set-id or sticky bits). */
static int parse_mode(const char *s, unsigned *out)
{
    unsigned m = 0;
    size_t n = 0;
    for (; s[n] != '\0'; n++) {
        if (s[n] < '0' || s[n] > '7' || n >= 4)
            return -1;
        m = m * 8 + (unsigned)(s[n] - '0');
    }
    if (n == 0 || m > 0777)
        return -1;
    *out = m;
    return 0;
}

/* ---- the variable table --------------------------------------------- */

#define F(field) offsetof(bo_config, field)

/* --- BACKOFF_SHARE=redis://... --------------------------------------------------- */

#define SHARE_LIST                                                                       \
    "host, process or redis://[USER:PASS@]HOST:PORT[/DB][?namespace=NAME&lease_ms=N&" \
    "ttl_ms=N&timeout_ms=N]"
#define NAME_LIST "1 to 63 letters, digits, '.', '-' or '_'"

static bool name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= BO_REDIS_NS_LEN)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!isalnum((unsigned char)s[i]) && s[i] != '.' && s[i] != '-' && s[i] != '_')
            return false;
    }
    return true;
}

void bo_redis_url_mask(const char *url, char *out, size_t outlen)
{
    const char *auth = strstr(url, "://");
    const char *at = NULL, *colon = NULL;

    if (auth != NULL) { /* the last '@' before the path: the password may hold '@' */
        const char *end = auth + 3 + strcspn(auth + 3, "/?");
        at = memrchr(auth + 3, '@', (size_t)(end - auth - 3));
    }

    if (at != NULL) {
        for (const char *p = auth + 3; p < at; p++) {
            if (*p == ':') {
                colon = p;
                break;
            }
        }
    }
    if (at == NULL) {
        snprintf(out, outlen, "%s", url);
        return;
    }
    if (colon == NULL) /* "redis://PASS@host": the whole of it is the secret */
        colon = auth + 2;
    snprintf(out, outlen, "%.*s:***%s", (int)(colon - url), url, at);
}

/* A decimal number from lo to hi, the whole of [s, s+n). */
static bool span_number(const char *s, size_t n, int64_t lo, int64_t hi, int64_t *out)
{
    int64_t v = 0;
    if (n == 0 || n > 12)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return false;
        v = v * 10 + (s[i] - '0');
    }
    if (v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

#define WHY(...) (snprintf(why, whylen, __VA_ARGS__), -1)

int bo_redis_url_parse(const char *url, bo_redis_url *out, char *why, size_t whylen)
{
    const char *p, *end, *at, *hp, *he, *colon;
    int64_t v;

    memset(out, 0, sizeof *out);
    out->lease_ms = 10000;
    out->ttl_ms = 60000;
    out->timeout_ms = BO_REDIS_TIMEOUT_MS;
    bo_redis_url_mask(url, out->shown, sizeof out->shown);
    if (strncmp(url, "rediss://", 9) == 0)
        return WHY("rediss:// (TLS) needs hiredis_ssl, which this build does not link");
    if (strncmp(url, "redis://", 8) != 0)
        return WHY("it does not start with redis://");
    p = url + 8;
    end = p + strcspn(p, "/?");
    at = memrchr(p, '@', (size_t)(end - p)); /* the password may hold '@' */
    if (at != NULL) {
        const char *c = memchr(p, ':', (size_t)(at - p));
        size_t un = c != NULL ? (size_t)(c - p) : 0;
        const char *pw = c != NULL ? c + 1 : p;
        size_t pn = (size_t)(at - pw);
        if (un >= sizeof out->user || pn >= sizeof out->pass)
            return WHY("the user or password is too long");
        memcpy(out->user, p, un);
        memcpy(out->pass, pw, pn);
        p = at + 1;
    }
    if (*p == '[') { /* [v6]:port */
        hp = p + 1;
        he = memchr(hp, ']', (size_t)(end - hp));
        if (he == NULL)
            return WHY("an IPv6 address lacks its ']'");
        colon = he + 1 < end && he[1] == ':' ? he + 1 : NULL;
    } else {
        hp = p;
        colon = memchr(p, ':', (size_t)(end - p));
        he = colon != NULL ? colon : end;
    }
    if (he == hp)
        return WHY("the host is missing");
    if ((size_t)(he - hp) >= sizeof out->host)
        return WHY("the host is too long");
    for (const char *q = hp; q < he; q++) {
        if (!isalnum((unsigned char)*q) && *q != '.' && *q != '-' && *q != ':' && *q != '_')
            return WHY("the host has a character that is not allowed");
    }
    memcpy(out->host, hp, (size_t)(he - hp));
    if (colon == NULL || !span_number(colon + 1, (size_t)(end - colon - 1), 1, 65535, &v))
        return WHY("the port is missing or not from 1 to 65535");
    out->port = (int)v;
    if (*end == '/') {
        const char *d = end + 1;
        size_t dn = strcspn(d, "?");
        if (dn > 0) {
            if (!span_number(d, dn, 0, 1000000, &v))
                return WHY("the database is not a number");
            out->db = (unsigned)v;
        }
        end = d + dn;
    }
    if (*end == '?') {
        const char *q = end + 1;
        while (*q != '\0') {
            size_t n = strcspn(q, "&");
            const char *eq = memchr(q, '=', n);
            if (eq == NULL)
                return WHY("a query item is not NAME=VALUE");
            size_t kn = (size_t)(eq - q), vn = n - kn - 1;
            if (kn == 9 && strncmp(q, "namespace", 9) == 0) {
                char ns[BO_REDIS_NS_LEN];
                if (vn >= sizeof ns)
                    return WHY("the namespace is too long");
                memcpy(ns, eq + 1, vn);
                ns[vn] = '\0';
                if (!name_ok(ns))
                    return WHY("the namespace is not %s", NAME_LIST);
                memcpy(out->ns, ns, sizeof ns);
            } else if (kn == 8 && strncmp(q, "lease_ms", 8) == 0) {
                if (!span_number(eq + 1, vn, 100, MS_PER_DAY, &out->lease_ms))
                    return WHY("lease_ms is not from 100 to %lld", MS_PER_DAY);
            } else if (kn == 6 && strncmp(q, "ttl_ms", 6) == 0) {
                if (!span_number(eq + 1, vn, 1000, MS_PER_DAY, &out->ttl_ms))
                    return WHY("ttl_ms is not from 1000 to %lld", MS_PER_DAY);
            } else if (kn == 10 && strncmp(q, "timeout_ms", 10) == 0) {
                if (!span_number(eq + 1, vn, 1, 10000, &out->timeout_ms))
                    return WHY("timeout_ms is not from 1 to 10000");
            } else {
                return WHY("the query knows namespace, lease_ms, ttl_ms and timeout_ms only");
            }
            q += n;
            if (*q == '&')
                q++;
        }
    } else if (*end != '\0') {
        return WHY("unexpected text after the port");
    }
    return 0;
}
#undef WHY

/* BACKOFF_SHARE: host, process, or a redis URL; a URL that cannot be used
 * is not fatal: the state stays host-wide and share_warning says why. */
static int get_share(const char *name, const char *s, bo_config *cfg, char *err, size_t errlen)
{
    char why[200];

    cfg->share_warning[0] = '\0';
    if (strcmp(s, "host") == 0 || strcmp(s, "process") == 0) {
        cfg->share = s[0] == 'h' ? BO_SHARE_HOST : BO_SHARE_PROCESS;
        return 0;
    }
    if (strncmp(s, "redis://", 8) != 0 && strncmp(s, "rediss://", 9) != 0) {
        char masked[BO_PATH_LEN];
        bo_redis_url_mask(s, masked, sizeof masked);
        return bad(err, errlen, name, masked, "%s", SHARE_LIST);
    }
    if (bo_redis_url_parse(s, &cfg->redis, why, sizeof why) != 0) {
        char shown[80];
        quote_value(cfg->redis.shown, shown, sizeof shown);
        snprintf(cfg->share_warning, sizeof cfg->share_warning,
                 "backoff: %s=\"%s\" is not valid (%s): expected %s; using host", name, shown,
                 why, SHARE_LIST);
        cfg->share = BO_SHARE_HOST;
        return 0;
    }
    cfg->share = BO_SHARE_REDIS;
    return 0;
}

/* The choices of the BO_VAR_CHOICE variables, in the order of their enums
 * (stored through an int: the enums must be int-sized). */
_Static_assert(sizeof(bo_aimd_mode) == sizeof(int), "BO_VAR_CHOICE fields are int-sized");
_Static_assert(sizeof(bo_share_mode) == sizeof(int), "BO_VAR_CHOICE fields are int-sized");
static const char *const aimd_modes[] = {[BO_AIMD_RENO] = "reno", [BO_AIMD_TAHOE] = "tahoe", NULL};

/*
 * Every variable, in the order --print-config lists them and the order in
 * which a bad value is reported first.  `deflt` is the default written as
 * the variable's own text (parsed by the same code as a user's value, so
 * the default cannot fall outside what is accepted); "" is the unset state
 * of the variables that have one (HOSTS: every destination, SEED: from the
 * clock, STATS, TRACE and METRICS_FILE: off).
 */
static const bo_var vars[] = {
    {"BACKOFF_POLICY", BO_VAR_POLICY, F(policy), 0, 0, 0, NULL, "aimd", "aimd",
     "the retry policy; aimd, the default, shares a window of requests in flight per "
     "destination, paced from the server's answers (the README compares them all)",
     NULL},
    {"BACKOFF_MAX_ATTEMPTS", BO_VAR_UINT, F(max_attempts), 0, COUNT_MAX, 0, NULL, "8", "8",
     "attempts per call, the first included (0: no limit; waiting for a window slot is "
     "not an attempt)",
     NULL},
    {"BACKOFF_MAX_TIME_MS", BO_VAR_I64, F(max_time_ms), 0, MS_PER_DAY, 0, NULL, "0", "0",
     "no new attempt once this long has passed since the call began (0: no limit; for "
     "connect() 0 means 30 s); the program's own time limit (CURLOPT_TIMEOUT, a socket's "
     "send timeout) also bounds the call, the sooner wins",
     NULL},
    {"BACKOFF_BASE_MS", BO_VAR_I64, F(base_ms), 1, MS_PER_HOUR, 0, NULL, "100", "100",
     "first delay of the delay schedules, in ms", NULL},
    {"BACKOFF_CAP_MS", BO_VAR_I64, F(cap_ms), 1, MS_PER_DAY, 0, NULL, "20000", "20000",
     "largest delay, in ms, not below BACKOFF_BASE_MS; a wait the server asks for past it "
     "(or past the call's deadline) is not waited for at all: a Retry-After's answer is the "
     "program's at once, a rate-limit reset lets the request go",
     NULL},
    {"BACKOFF_FACTOR", BO_VAR_DOUBLE, F(factor), 1, 100, 0, NULL, "2", "2",
     "growth factor of the exponential schedules", NULL},
    {"BACKOFF_JITTER", BO_VAR_DOUBLE, F(jitter), 0, 1, 0, NULL, "0.1", "0.1",
     "spread of gaussian-jitter and of responsive's randomization, as a fraction", NULL},
    {"BACKOFF_RETRY_ON", BO_VAR_RETRY_ON, F(retry_on), 0, 0, 0, NULL,
     "429,503,502,504,408,connect,timeout,reset", "429,503,502,504,408,connect,timeout,reset",
     "the outcomes that are retried", NULL},
    {"BACKOFF_UNSAFE_RETRY", BO_VAR_BOOL, F(unsafe_retry), 0, 1, 0, NULL, "0", "0",
     "1: also retry a non-idempotent request (POST) after it may have reached the server", NULL},
    {"BACKOFF_IDEMPOTENCY_KEY", BO_VAR_BOOL, F(idempotency_key), 0, 1, 0, NULL, "0", "0",
     "1: every POST and PATCH that carries no Idempotency-Key gets one (a fresh UUID v4, "
     "the IETF draft's header), the same on every attempt and on the program's own retries, "
     "so that it is retried like an idempotent request where the server honours the key (a "
     "request that carries its own key always is); keys never repeat across processes, "
     "BACKOFF_SEED or not",
     NULL},
    {"BACKOFF_WINDOW", BO_VAR_UINT, F(window), 1, COUNT_MAX, 0, NULL, "20", "20",
     "aimd: initial window of requests in flight per destination (before any answer, on a "
     "destination that has not throttled, four times it go out, 0.5 ms apart)",
     NULL},
    {"BACKOFF_WINDOW_MAX", BO_VAR_UINT, F(window_max), 1, COUNT_MAX, 0, NULL, "1024", "1024",
     "aimd: largest window (also the initial slow-start threshold), not below "
     "BACKOFF_WINDOW",
     NULL},
    {"BACKOFF_BETA", BO_VAR_DOUBLE, F(beta), 0, 1, BO_VAR_LO_OPEN | BO_VAR_HI_OPEN | BO_VAR_ZERO_OK,
     "0 (the policy's own) or a number above 0 and below 1", "0", "0",
     "aimd: multiplicative decrease on a throttle (0: the policy's own, 0.9)", NULL},
    {"BACKOFF_AIMD_MODE", BO_VAR_CHOICE, F(aimd_mode), 0, 0, 0, NULL, "reno", "reno",
     "aimd: on a throttle the slow-start threshold becomes window x beta and the window "
     "that threshold (reno) or BACKOFF_WINDOW again (tahoe)",
     aimd_modes},
    {"BACKOFF_UP", BO_VAR_DOUBLE, F(up), 1, 100, 0, NULL, "1.5", "1.5",
     "responsive: delay multiplier on a throttle", NULL},
    {"BACKOFF_DOWN", BO_VAR_DOUBLE, F(down), 0, 1, BO_VAR_LO_OPEN, NULL, "0.9", "0.9",
     "responsive: delay multiplier after a streak of successes", NULL},
    {"BACKOFF_DOWN_AFTER", BO_VAR_UINT, F(down_after), 1, COUNT_MAX, 0, NULL, "10", "10",
     "responsive: the streak of successes that lowers the delay", NULL},
    {"BACKOFF_CONNECT", BO_VAR_BOOL, F(connect_hook), 0, 1, 0, NULL, "1", "1",
     "0: the connect() hook passes every call through", NULL},
    {"BACKOFF_HTTP", BO_VAR_BOOL, F(http_hook), 0, 1, 0, NULL, "1", "1",
     "0: the HTTP hooks of programs without libcurl (HTTP/1.x over plain TCP sockets, "
     "OpenSSL objects bound to a socket and GnuTLS sessions: Python, Ruby, Perl, PHP, "
     "wget) pass every call through",
     NULL},
    {"BACKOFF_HOSTS", BO_VAR_HOSTS, F(hosts), 0, 0, 0, NULL, "", "every destination",
     "only these destinations are managed; a refused connect() to one of them is retried "
     "even before it was seen alive",
     NULL},
    {"BACKOFF_STATS", BO_VAR_PATH, F(stats_path), 0, 0, 0, NULL, "", "off",
     "stderr or a file: one JSON object per process at exit (appended)", NULL},
    {"BACKOFF_TRACE", BO_VAR_PATH, F(trace_path), 0, 0, 0, NULL, "", "off",
     "a file: one CSV row per attempt (appended)", NULL},
    {"BACKOFF_METRICS_FILE", BO_VAR_PATH, F(metrics_path), 0, 0, BO_VAR_ABSOLUTE, NULL, "",
     "off",
     "a file rewritten at most once a second, atomically (a temporary in its directory, then "
     "a rename), with every host-wide destination's counters and gauges in the Prometheus "
     "text format, for node_exporter's textfile collector (README: Watching it); nothing "
     "under BACKOFF_SHARE=process, whose destinations have no host-wide counters",
     NULL},
    {"BACKOFF_METRICS_MODE", BO_VAR_MODE, F(metrics_mode), 0, 0, 0, NULL, "0600", "0600",
     "the mode of BACKOFF_METRICS_FILE (0644 lets a node_exporter run as another user read "
     "it)",
     NULL},
    {"BACKOFF_VERBOSE", BO_VAR_BOOL, F(verbose), 0, 1, 0, NULL, "0", "0",
     "1: one stderr line per retry decision", NULL},
    {"BACKOFF_SEED", BO_VAR_SEED, F(seed), 0, 0, 0, NULL, "", "from the clock",
     "seed of every random choice, for repeatable runs", NULL},
    {"BACKOFF_STRICT", BO_VAR_BOOL, F(strict), 0, 1, 0, NULL, "0", "0",
     "1: a bad variable ends the program with exit status 2 instead of passing every call "
     "through",
     NULL},
    {"BACKOFF_PACING", BO_VAR_BOOL, F(pacing), 0, 1, 0, NULL, "1", "1",
     "aimd: 1 paces sends over the round trip and sizes decreases from the measured "
     "delivery rate; 0 runs article 000's algorithm exactly",
     NULL},
    {"BACKOFF_RATELIMIT_HEADERS", BO_VAR_BOOL, F(ratelimit_headers), 0, 1, 0, NULL, "1", "1",
     "1: pace from the server's rate-limit headers (x-ratelimit-* of GitHub and Discord, "
     "x-rate-limit-*, OpenAI's x-ratelimit-*-requests/-tokens, RateLimit-*, the IETF draft's "
     "RateLimit and RateLimit-Policy): spend the quota at the program's pace, then wait for "
     "its reset; 0: ignore them",
     NULL},
    {"BACKOFF_RETRY_BUDGET", BO_VAR_UINT, F(retry_budget), 0, 1000, 0,
     "a percentage of first attempts from 0 (no budget) to 1000", "20", "20",
     "per destination, over a sliding 10 s window: the shim's retries allowed as a "
     "percentage of the first attempts of new logical requests, on top of 3 and one per "
     "success, so that a destination that keeps failing sees a bounded multiple of the "
     "program's own load; a retry beyond it waits until the budget allows one (while "
     "nothing is in flight, one goes as a probe, up to a second apart), never ends a call "
     "(0: no budget)",
     NULL},
    {"BACKOFF_SHARE", BO_VAR_SHARE, F(share), 0, 0, 0, NULL, "host", "host",
     "where each destination's state lives: host, in a shared-memory file of this user that "
     "every process on the host maps (shell loops and parallel jobs learn together); "
     "process, in each process alone; redis://..., host-wide and, for aimd, the fleet's "
     "window and pace in that Redis server, shared by every host using it (README: Fleet); "
     "a URL that cannot be used prints one line and stays host",
     NULL},
    {"BACKOFF_REDIS_NAMESPACE", BO_VAR_NAME, F(redis_ns), 0, 0, 0, NULL, "default", "default",
     "with BACKOFF_SHARE=redis://...: the fleet's keys are backoff:NAME:{DESTINATION}, so "
     "that fleets sharing one Redis do not mix (the URL's ?namespace= wins)",
     NULL},
};
#undef F

#define N_VARS (sizeof vars / sizeof vars[0])

const bo_var *bo_config_vars(size_t *n)
{
    *n = N_VARS;
    return vars;
}

/* What a variable accepts, as the error line and the documentation say it. */
size_t bo_var_accepted(const bo_var *v, char *buf, size_t len)
{
    int n;
    if (v->accepted != NULL)
        return (size_t)snprintf(buf, len, "%s", v->accepted);
    switch (v->kind) {
    case BO_VAR_POLICY:
        return (size_t)snprintf(buf, len, "%s", POLICY_LIST);
    case BO_VAR_UINT:
    case BO_VAR_I64:
        n = snprintf(buf, len, "an integer from %.0f to %.0f", v->lo, v->hi);
        break;
    case BO_VAR_DOUBLE:
        if (v->flags & BO_VAR_LO_OPEN)
            n = snprintf(buf, len, "a number above %g and %s %g", v->lo,
                         (v->flags & BO_VAR_HI_OPEN) ? "below" : "at most", v->hi);
        else
            n = snprintf(buf, len, "a number from %g to %g", v->lo, v->hi);
        break;
    case BO_VAR_BOOL:
        return (size_t)snprintf(buf, len, "0 or 1");
    case BO_VAR_CHOICE: {
        size_t at = 0;
        for (int i = 0; v->choices[i] != NULL; i++) {
            const char *sep = i == 0 ? "" : v->choices[i + 1] == NULL ? " or " : ", ";
            int k = snprintf(buf + (at < len ? at : len), at < len ? len - at : 0, "%s%s", sep,
                             v->choices[i]);
            at += k > 0 ? (size_t)k : 0;
        }
        return at;
    }
    case BO_VAR_RETRY_ON:
        return (size_t)snprintf(buf, len, "%s", RETRY_ON_LIST);
    case BO_VAR_HOSTS:
        return (size_t)snprintf(buf, len, "%s", HOSTS_LIST);
    case BO_VAR_PATH:
        return (size_t)snprintf(buf, len, "%s path shorter than %d bytes",
                                (v->flags & BO_VAR_ABSOLUTE) ? "an absolute" : "a", BO_PATH_LEN);
    case BO_VAR_MODE:
        return (size_t)snprintf(buf, len, "an octal file mode from 0000 to 0777");
    case BO_VAR_SEED:
        return (size_t)snprintf(buf, len, "an integer from 0 to 18446744073709551615");
    case BO_VAR_SHARE:
        return (size_t)snprintf(buf, len, "%s", SHARE_LIST);
    case BO_VAR_NAME:
        return (size_t)snprintf(buf, len, "%s", NAME_LIST);
    default:
        n = snprintf(buf, len, "?");
        break;
    }
    return n < 0 ? 0 : (size_t)n;
}

/* The error line of a bad value `s` of `v`, saying what it accepts; returns -1.
 * The text is made only here, on the way out: the constructor parses every
 * default in every process, and formatting numbers was most of its work. */
static int bad_var(const bo_var *v, const char *s, char *err, size_t errlen)
{
    char what[256];

    if (err == NULL || errlen == 0)
        return -1;
    bo_var_accepted(v, what, sizeof what);
    return bad(err, errlen, v->name, s, "%s", what);
}

/* Parse value `s` of variable `v` into cfg; on a bad value write err, return -1. */
static int set_var(bo_config *cfg, const bo_var *v, const char *s, char *err, size_t errlen)
{
    char *field = (char *)cfg + v->offset;
    int64_t x = 0;
    double d = 0;

    switch (v->kind) {
    case BO_VAR_POLICY:
        if (bo_policy_from_name(s, (bo_policy_kind *)(void *)field) != 0)
            return bad_var(v, s, err, errlen);
        return 0;
    case BO_VAR_UINT:
        if (parse_i64(s, &x) != 0 || x < (int64_t)v->lo || x > (int64_t)v->hi)
            return bad_var(v, s, err, errlen);
        *(unsigned *)(void *)field = (unsigned)x;
        return 0;
    case BO_VAR_I64:
        if (parse_i64(s, &x) != 0 || x < (int64_t)v->lo || x > (int64_t)v->hi)
            return bad_var(v, s, err, errlen);
        *(int64_t *)(void *)field = x;
        return 0;
    case BO_VAR_DOUBLE: {
        bool ok = parse_double(s, &d) == 0;
        if (ok && !((v->flags & BO_VAR_ZERO_OK) && d == 0))
            ok = ((v->flags & BO_VAR_LO_OPEN) ? d > v->lo : d >= v->lo) &&
                 ((v->flags & BO_VAR_HI_OPEN) ? d < v->hi : d <= v->hi);
        if (!ok)
            return bad_var(v, s, err, errlen);
        *(double *)(void *)field = d;
        return 0;
    }
    case BO_VAR_BOOL:
        return get_bool(v->name, s, (bool *)(void *)field, err, errlen);
    case BO_VAR_CHOICE: /* an enum whose values are the choices' indexes */
        for (int i = 0; v->choices[i] != NULL; i++) {
            if (strcmp(s, v->choices[i]) == 0) {
                *(int *)(void *)field = i;
                return 0;
            }
        }
        return bad_var(v, s, err, errlen);
    case BO_VAR_RETRY_ON:
        return get_retry_on(v->name, s, (unsigned *)(void *)field, err, errlen);
    case BO_VAR_HOSTS:
        if (s[0] == '\0') { /* the unset state: every destination */
            memset(cfg->hosts, 0, sizeof cfg->hosts);
            cfg->n_hosts = 0;
            return 0;
        }
        return get_hosts(v->name, s, cfg, err, errlen);
    case BO_VAR_PATH:
        return get_path(v, s, field, err, errlen);
    case BO_VAR_MODE:
        if (parse_mode(s, (unsigned *)(void *)field) != 0)
            return bad_var(v, s, err, errlen);
        return 0;
    case BO_VAR_SEED:
        if (s[0] == '\0') { /* the unset state: from the clock */
            cfg->seed = 0;
            cfg->seed_set = false;
            return 0;
        }
        if (parse_u64(s, &cfg->seed) != 0)
            return bad_var(v, s, err, errlen);
        cfg->seed_set = true;
        return 0;
    case BO_VAR_SHARE:
        return get_share(v->name, s, cfg, err, errlen);
    case BO_VAR_NAME:
        if (!name_ok(s))
            return bad_var(v, s, err, errlen);
        snprintf(field, BO_REDIS_NS_LEN, "%s", s);
        return 0;
    }
    return bad_var(v, s, err, errlen);
}

void bo_config_defaults(bo_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    for (size_t i = 0; i < N_VARS; i++)
        (void)set_var(cfg, &vars[i], vars[i].deflt, NULL, 0); /* a unit test parses each */
}

/* The value the user gave for the field at `offset`, or NULL. */
static const char *given_for(const char *const given[N_VARS], size_t offset)
{
    for (size_t i = 0; i < N_VARS; i++) {
        if (vars[i].offset == offset)
            return given[i];
    }
    return NULL;
}

/*
 * Parse every variable.  Order matters only for the error reported first;
 * the cross-checks (cap against base, window_max against window) run once
 * both sides are known, and blame whichever side the user set.
 */
int bo_config_load(bo_config *cfg, bo_getenv_fn get, void *ctx, char *err, size_t errlen)
{
    const char *given[N_VARS] = {0};

    if (err != NULL && errlen > 0)
        err[0] = '\0';
    bo_config_defaults(cfg);
    for (size_t i = 0; i < N_VARS; i++) {
        given[i] = get(ctx, vars[i].name);
        if (given[i] != NULL && set_var(cfg, &vars[i], given[i], err, errlen) != 0)
            return -1;
    }

#define GIVEN(field) given_for(given, offsetof(bo_config, field))
    if (cfg->cap_ms < cfg->base_ms) {
        if (GIVEN(cap_ms) != NULL)
            return bad(err, errlen, "BACKOFF_CAP_MS", GIVEN(cap_ms),
                       "an integer from BACKOFF_BASE_MS (%" PRId64 ") to %lld", cfg->base_ms,
                       MS_PER_DAY);
        return bad(err, errlen, "BACKOFF_BASE_MS", GIVEN(base_ms),
                   "an integer from 1 to BACKOFF_CAP_MS (%" PRId64 ")", cfg->cap_ms);
    }
    if (cfg->window_max < cfg->window) {
        if (GIVEN(window_max) != NULL)
            return bad(err, errlen, "BACKOFF_WINDOW_MAX", GIVEN(window_max),
                       "an integer from BACKOFF_WINDOW (%u) to %lld", cfg->window, COUNT_MAX);
        return bad(err, errlen, "BACKOFF_WINDOW", GIVEN(window),
                   "an integer from 1 to BACKOFF_WINDOW_MAX (%u)", cfg->window_max);
    }
#undef GIVEN
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
static void out_double(outbuf *o, double v)
{
    char tmp[40];
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        if (strtod(tmp, NULL) == v)
            break;
    }
    out_add(o, "%s", tmp);
}

/* The value of variable `v` in cfg, as the text that reads back as it. */
static void format_var(outbuf *o, const bo_config *cfg, const bo_var *v)
{
    const char *field = (const char *)cfg + v->offset;
    bool first = true;

    out_add(o, "%s=", v->name);
    switch (v->kind) {
    case BO_VAR_POLICY: {
        const char *name = bo_policy_name(cfg->policy);
        out_add(o, "%s", name ? name : "?");
        break;
    }
    case BO_VAR_UINT:
        out_add(o, "%u", *(const unsigned *)(const void *)field);
        break;
    case BO_VAR_I64:
        out_add(o, "%" PRId64, *(const int64_t *)(const void *)field);
        break;
    case BO_VAR_DOUBLE:
        out_double(o, *(const double *)(const void *)field);
        break;
    case BO_VAR_BOOL:
        out_add(o, "%d", *(const bool *)(const void *)field ? 1 : 0);
        break;
    case BO_VAR_CHOICE:
        out_add(o, "%s", v->choices[*(const int *)(const void *)field]);
        break;
    case BO_VAR_RETRY_ON:
        for (size_t i = 0; i < N_RETRY_TOKENS; i++) {
            if (cfg->retry_on & retry_tokens[i].bit) {
                out_add(o, "%s%s", first ? "" : ",", retry_tokens[i].token);
                first = false;
            }
        }
        break;
    case BO_VAR_HOSTS:
        for (size_t i = 0; i < cfg->n_hosts && i < BO_MAX_HOSTS; i++) {
            const bo_host *h = &cfg->hosts[i];
            bool v6 = strchr(h->name, ':') != NULL;
            out_add(o, "%s%s%s%s", i ? "," : "", v6 ? "[" : "", h->name, v6 ? "]" : "");
            if (h->port != 0)
                out_add(o, ":%d", h->port);
        }
        break;
    case BO_VAR_PATH:
        out_add(o, "%s", field);
        break;
    case BO_VAR_MODE:
        out_add(o, "%04o", *(const unsigned *)(const void *)field);
        break;
    case BO_VAR_SEED:
        if (cfg->seed_set)
            out_add(o, "%" PRIu64, cfg->seed);
        break;
    case BO_VAR_SHARE: /* the password masked: this text may be shown */
        out_add(o, "%s", cfg->share == BO_SHARE_REDIS    ? cfg->redis.shown
                         : cfg->share == BO_SHARE_PROCESS ? "process"
                                                          : "host");
        break;
    case BO_VAR_NAME:
        out_add(o, "%s", field);
        break;
    }
    out_add(o, "\n");
}

/*
 * One "BACKOFF_X=value" line per variable, every variable, in the table's
 * order.  A variable in its unset state (HOSTS: every destination, SEED:
 * from the clock, STATS, TRACE and METRICS_FILE: off) prints with an empty
 * value, which those variables accept as that state: the text can be fed
 * back as the environment.
 */
size_t bo_config_format(const bo_config *cfg, char *buf, size_t len)
{
    outbuf o = {buf, len, 0};

    if (buf != NULL && len > 0)
        buf[0] = '\0';
    for (size_t i = 0; i < N_VARS; i++)
        format_var(&o, cfg, &vars[i]);
    return o.need;
}
