/*
 * Unit tests for bo_config: defaults, every variable with a valid, an
 * invalid, an empty, a negative and an overflowing value (table-driven, the
 * exact error line checked), cross-checks, host matching, and the format
 * output read back through the getter.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bo_config.h"

/* A getter over a small table of name=value pairs. */
typedef struct kv {
    const char *name;
    const char *value;
} kv;

typedef struct env {
    kv vars[64];
    size_t n;
} env;

static const char *env_get(void *ctx, const char *name)
{
    const env *e = ctx;
    for (size_t i = 0; i < e->n; i++) {
        if (strcmp(e->vars[i].name, name) == 0)
            return e->vars[i].value;
    }
    return NULL;
}

static void env_set(env *e, const char *name, const char *value)
{
    ck_assert_uint_lt(e->n, sizeof e->vars / sizeof e->vars[0]);
    e->vars[e->n].name = name;
    e->vars[e->n].value = value;
    e->n++;
}

/*
 * Every variable the library reads, in the order of bo_config.c's table (a
 * variable added there alone fails test_config_variable_table).
 */
static const char *const all_vars[] = {
    "BACKOFF_POLICY",     "BACKOFF_MAX_ATTEMPTS", "BACKOFF_MAX_TIME_MS", "BACKOFF_BASE_MS",
    "BACKOFF_CAP_MS",     "BACKOFF_FACTOR",       "BACKOFF_JITTER",      "BACKOFF_RETRY_ON",
    "BACKOFF_UNSAFE_RETRY", "BACKOFF_IDEMPOTENCY_KEY", "BACKOFF_WINDOW", "BACKOFF_WINDOW_MAX",
    "BACKOFF_BETA",
    "BACKOFF_AIMD_MODE",  "BACKOFF_UP",           "BACKOFF_DOWN",        "BACKOFF_DOWN_AFTER",
    "BACKOFF_CONNECT",    "BACKOFF_HTTP",         "BACKOFF_HOSTS",       "BACKOFF_STATS",
    "BACKOFF_TRACE",      "BACKOFF_METRICS_FILE", "BACKOFF_METRICS_MODE",
    "BACKOFF_VERBOSE",    "BACKOFF_SEED",         "BACKOFF_STRICT",       "BACKOFF_PACING",
    "BACKOFF_RATELIMIT_HEADERS", "BACKOFF_RETRY_BUDGET", "BACKOFF_SHARE",
    "BACKOFF_REDIS_NAMESPACE",
};
#define N_VARS (sizeof all_vars / sizeof all_vars[0])

#define R_ATTEMPTS "an integer from 0 to 1000000"
#define R_TIME "an integer from 0 to 86400000"
#define R_BUDGET "a percentage of first attempts from 0 (no budget) to 1000"
#define R_BASE "an integer from 1 to 3600000"
#define R_CAP "an integer from 1 to 86400000"
#define R_FACTOR "a number from 1 to 100"
#define R_JITTER "a number from 0 to 1"
#define R_COUNT "an integer from 1 to 1000000"
#define R_BOOL "0 or 1"
#define R_BETA "0 (the policy's own) or a number above 0 and below 1"
#define R_MODE "reno or tahoe"
#define R_SHARE                                                                            \
    "host, process or redis://[USER:PASS@]HOST:PORT[/DB][?namespace=NAME&lease_ms=N&ttl_ms=N&" \
    "timeout_ms=N]"
#define R_NAME "1 to 63 letters, digits, '.', '-' or '_'"
#define R_DOWN "a number above 0 and at most 1"
#define R_SEED "an integer from 0 to 18446744073709551615"
#define R_POLICY                                                                             \
    "none, fixed, linear, exponential, full-jitter, equal-jitter, decorrelated-jitter, "     \
    "gaussian-jitter, thain, responsive, aws-adaptive or aimd"
#define R_RETRY                                                                              \
    "a comma list of 429, 503, 502, 504, 500, 408, 5xx, connect, timeout, reset, dns"
#define R_HOSTS                                                                              \
    "a comma list of at most 32 host, host:port, [ipv6] or [ipv6]:port items, port 1 to "   \
    "65535"
#define R_PATH "a path shorter than 1024 bytes"
#define R_PATHCHARS "a path without control characters"
#define R_ABSPATH "an absolute path (starting with /)"
#define R_OCTAL "an octal file mode from 0000 to 0777"

typedef struct vcase {
    const char *var;
    const char *value;
    const char *expect; /* ok: the format line; bad: the whole error line */
    int ok;
} vcase;

#define OK(var, val, shown) {var, val, var "=" shown "\n", 1}
#define BAD(var, val, range)                                                                       \
    {                                                                                              \
        var, val, "backoff: " var "=\"" val "\" is not valid: expected " range, 0                  \
    }
#define OVER "99999999999999999999"

/* clang-format off */
static const vcase cases[] = {
    OK("BACKOFF_POLICY", "none", "none"),
    OK("BACKOFF_POLICY", "fixed", "fixed"),
    OK("BACKOFF_POLICY", "linear", "linear"),
    OK("BACKOFF_POLICY", "exponential", "exponential"),
    OK("BACKOFF_POLICY", "full-jitter", "full-jitter"),
    OK("BACKOFF_POLICY", "equal-jitter", "equal-jitter"),
    OK("BACKOFF_POLICY", "decorrelated-jitter", "decorrelated-jitter"),
    OK("BACKOFF_POLICY", "gaussian-jitter", "gaussian-jitter"),
    OK("BACKOFF_POLICY", "thain", "thain"),
    OK("BACKOFF_POLICY", "responsive", "responsive"),
    OK("BACKOFF_POLICY", "aimd", "aimd"),
    BAD("BACKOFF_POLICY", "AIMD", R_POLICY),
    BAD("BACKOFF_POLICY", "fulljitter", R_POLICY),
    BAD("BACKOFF_POLICY", "", R_POLICY),
    BAD("BACKOFF_POLICY", "-1", R_POLICY),
    BAD("BACKOFF_POLICY", OVER, R_POLICY),
    BAD("BACKOFF_POLICY", " aimd", R_POLICY),

    OK("BACKOFF_MAX_ATTEMPTS", "0", "0"),
    OK("BACKOFF_MAX_ATTEMPTS", "3", "3"),
    OK("BACKOFF_MAX_ATTEMPTS", "1000000", "1000000"),
    BAD("BACKOFF_MAX_ATTEMPTS", "abc", R_ATTEMPTS),
    BAD("BACKOFF_MAX_ATTEMPTS", "12abc", R_ATTEMPTS),
    BAD("BACKOFF_MAX_ATTEMPTS", " ", R_ATTEMPTS),
    BAD("BACKOFF_MAX_ATTEMPTS", " 5", R_ATTEMPTS),
    BAD("BACKOFF_MAX_ATTEMPTS", "5 ", R_ATTEMPTS),
    BAD("BACKOFF_MAX_ATTEMPTS", "+5", R_ATTEMPTS),
    BAD("BACKOFF_MAX_ATTEMPTS", "5.0", R_ATTEMPTS),
    BAD("BACKOFF_MAX_ATTEMPTS", "", R_ATTEMPTS),
    BAD("BACKOFF_MAX_ATTEMPTS", "-1", R_ATTEMPTS),
    BAD("BACKOFF_MAX_ATTEMPTS", "1000001", R_ATTEMPTS),
    BAD("BACKOFF_MAX_ATTEMPTS", OVER, R_ATTEMPTS),

    OK("BACKOFF_RETRY_BUDGET", "0", "0"),
    OK("BACKOFF_RETRY_BUDGET", "20", "20"),
    OK("BACKOFF_RETRY_BUDGET", "1000", "1000"),
    BAD("BACKOFF_RETRY_BUDGET", "", R_BUDGET),
    BAD("BACKOFF_RETRY_BUDGET", "-1", R_BUDGET),
    BAD("BACKOFF_RETRY_BUDGET", "20%", R_BUDGET),
    BAD("BACKOFF_RETRY_BUDGET", "0.2", R_BUDGET),
    BAD("BACKOFF_RETRY_BUDGET", "1001", R_BUDGET),
    BAD("BACKOFF_RETRY_BUDGET", OVER, R_BUDGET),
    OK("BACKOFF_MAX_TIME_MS", "0", "0"),
    OK("BACKOFF_MAX_TIME_MS", "86400000", "86400000"),
    BAD("BACKOFF_MAX_TIME_MS", "1s", R_TIME),
    BAD("BACKOFF_MAX_TIME_MS", "", R_TIME),
    BAD("BACKOFF_MAX_TIME_MS", "-1", R_TIME),
    BAD("BACKOFF_MAX_TIME_MS", "86400001", R_TIME),
    BAD("BACKOFF_MAX_TIME_MS", OVER, R_TIME),

    OK("BACKOFF_BASE_MS", "1", "1"),
    OK("BACKOFF_BASE_MS", "250", "250"),
    BAD("BACKOFF_BASE_MS", "0", R_BASE),
    BAD("BACKOFF_BASE_MS", "0x10", R_BASE),
    BAD("BACKOFF_BASE_MS", "", R_BASE),
    BAD("BACKOFF_BASE_MS", "-100", R_BASE),
    BAD("BACKOFF_BASE_MS", "3600001", R_BASE),
    BAD("BACKOFF_BASE_MS", OVER, R_BASE),

    OK("BACKOFF_CAP_MS", "100", "100"),
    OK("BACKOFF_CAP_MS", "86400000", "86400000"),
    BAD("BACKOFF_CAP_MS", "20s", R_CAP),
    BAD("BACKOFF_CAP_MS", "", R_CAP),
    BAD("BACKOFF_CAP_MS", "-1", R_CAP),
    BAD("BACKOFF_CAP_MS", "0", R_CAP),
    BAD("BACKOFF_CAP_MS", OVER, R_CAP),

    OK("BACKOFF_FACTOR", "1", "1"),
    OK("BACKOFF_FACTOR", "2.7", "2.7"),
    OK("BACKOFF_FACTOR", "100", "100"),
    BAD("BACKOFF_FACTOR", "two", R_FACTOR),
    BAD("BACKOFF_FACTOR", "2x", R_FACTOR),
    BAD("BACKOFF_FACTOR", "nan", R_FACTOR),
    BAD("BACKOFF_FACTOR", "inf", R_FACTOR),
    BAD("BACKOFF_FACTOR", "0x2", R_FACTOR),
    OK("BACKOFF_FACTOR", "1.5e1", "15"),
    OK("BACKOFF_FACTOR", "3.", "3"),
    BAD("BACKOFF_FACTOR", "0.5", R_FACTOR),
    BAD("BACKOFF_FACTOR", "", R_FACTOR),
    BAD("BACKOFF_FACTOR", "-2", R_FACTOR),
    BAD("BACKOFF_FACTOR", "1e999", R_FACTOR),
    BAD("BACKOFF_FACTOR", OVER, R_FACTOR),

    OK("BACKOFF_JITTER", "0", "0"),
    OK("BACKOFF_JITTER", "0.25", "0.25"),
    OK("BACKOFF_JITTER", "1", "1"),
    BAD("BACKOFF_JITTER", "10%", R_JITTER),
    OK("BACKOFF_JITTER", ".5", "0.5"),
    BAD("BACKOFF_JITTER", ".", R_JITTER),
    BAD("BACKOFF_JITTER", "0.1e", R_JITTER),
    BAD("BACKOFF_JITTER", "", R_JITTER),
    BAD("BACKOFF_JITTER", "-0.1", R_JITTER),
    BAD("BACKOFF_JITTER", "1.01", R_JITTER),
    BAD("BACKOFF_JITTER", "1e-400", R_JITTER),
    BAD("BACKOFF_JITTER", OVER, R_JITTER),

    OK("BACKOFF_RETRY_ON", "429", "429"),
    OK("BACKOFF_RETRY_ON", "dns,5xx,429", "429,5xx,dns"),
    OK("BACKOFF_RETRY_ON", "429,503,502,504,500,408,5xx,connect,timeout,reset,dns",
       "429,503,502,504,500,408,5xx,connect,timeout,reset,dns"),
    OK("BACKOFF_RETRY_ON", "429,429", "429"),
    BAD("BACKOFF_RETRY_ON", "429,foo", R_RETRY " (unknown item \"foo\")"),
    BAD("BACKOFF_RETRY_ON", "429, 503", R_RETRY " (unknown item \" 503\")"),
    BAD("BACKOFF_RETRY_ON", "CONNECT", R_RETRY " (unknown item \"CONNECT\")"),
    BAD("BACKOFF_RETRY_ON", "429,,503", R_RETRY " (an item is empty)"),
    BAD("BACKOFF_RETRY_ON", "429,", R_RETRY " (an item is empty)"),
    BAD("BACKOFF_RETRY_ON", "", R_RETRY " (an item is empty)"),
    BAD("BACKOFF_RETRY_ON", "-1", R_RETRY " (unknown item \"-1\")"),
    BAD("BACKOFF_RETRY_ON", OVER, R_RETRY " (unknown item \"" OVER "\")"),

    OK("BACKOFF_UNSAFE_RETRY", "0", "0"),
    OK("BACKOFF_UNSAFE_RETRY", "1", "1"),
    BAD("BACKOFF_UNSAFE_RETRY", "yes", R_BOOL),
    BAD("BACKOFF_UNSAFE_RETRY", "01", R_BOOL),
    BAD("BACKOFF_UNSAFE_RETRY", "", R_BOOL),
    BAD("BACKOFF_UNSAFE_RETRY", "-1", R_BOOL),
    BAD("BACKOFF_UNSAFE_RETRY", OVER, R_BOOL),

    OK("BACKOFF_IDEMPOTENCY_KEY", "0", "0"),
    OK("BACKOFF_IDEMPOTENCY_KEY", "1", "1"),
    BAD("BACKOFF_IDEMPOTENCY_KEY", "yes", R_BOOL),
    BAD("BACKOFF_IDEMPOTENCY_KEY", "true", R_BOOL),
    BAD("BACKOFF_IDEMPOTENCY_KEY", "", R_BOOL),
    BAD("BACKOFF_IDEMPOTENCY_KEY", "2", R_BOOL),
    BAD("BACKOFF_IDEMPOTENCY_KEY", "-1", R_BOOL),
    BAD("BACKOFF_IDEMPOTENCY_KEY", OVER, R_BOOL),

    OK("BACKOFF_WINDOW", "1", "1"),
    OK("BACKOFF_WINDOW", "1024", "1024"),
    BAD("BACKOFF_WINDOW", "many", R_COUNT),
    BAD("BACKOFF_WINDOW", "0", R_COUNT),
    BAD("BACKOFF_WINDOW", "", R_COUNT),
    BAD("BACKOFF_WINDOW", "-20", R_COUNT),
    BAD("BACKOFF_WINDOW", OVER, R_COUNT),

    OK("BACKOFF_WINDOW_MAX", "20", "20"),
    OK("BACKOFF_WINDOW_MAX", "1000000", "1000000"),
    BAD("BACKOFF_WINDOW_MAX", "1k", R_COUNT),
    BAD("BACKOFF_WINDOW_MAX", "", R_COUNT),
    BAD("BACKOFF_WINDOW_MAX", "-1", R_COUNT),
    BAD("BACKOFF_WINDOW_MAX", "1000001", R_COUNT),
    BAD("BACKOFF_WINDOW_MAX", OVER, R_COUNT),

    OK("BACKOFF_BETA", "0", "0"),
    OK("BACKOFF_BETA", "0.5", "0.5"),
    OK("BACKOFF_BETA", "0.875", "0.875"),
    BAD("BACKOFF_BETA", "half", R_BETA),
    BAD("BACKOFF_BETA", "1", R_BETA),
    BAD("BACKOFF_BETA", "", R_BETA),
    BAD("BACKOFF_BETA", "-0.5", R_BETA),
    BAD("BACKOFF_BETA", OVER, R_BETA),

    OK("BACKOFF_AIMD_MODE", "reno", "reno"),
    OK("BACKOFF_AIMD_MODE", "tahoe", "tahoe"),
    BAD("BACKOFF_AIMD_MODE", "Reno", R_MODE),
    BAD("BACKOFF_AIMD_MODE", "", R_MODE),
    BAD("BACKOFF_AIMD_MODE", "-1", R_MODE),
    BAD("BACKOFF_AIMD_MODE", OVER, R_MODE),

    OK("BACKOFF_SHARE", "host", "host"),
    OK("BACKOFF_SHARE", "process", "process"),
    BAD("BACKOFF_SHARE", "Host", R_SHARE),
    BAD("BACKOFF_SHARE", "", R_SHARE),
    OK("BACKOFF_SHARE", "redis://127.0.0.1:6379", "redis://127.0.0.1:6379"),
    OK("BACKOFF_SHARE", "redis://u:pw@[::1]:6379/2?namespace=a.b&lease_ms=500",
       "redis://u:***@[::1]:6379/2?namespace=a.b&lease_ms=500"),
    OK("BACKOFF_SHARE", "redis://127.0.0.1", "host"), /* unusable: one line, then host */
    BAD("BACKOFF_SHARE", "-1", R_SHARE),
    BAD("BACKOFF_SHARE", "redis:/127.0.0.1:6379", R_SHARE),
    BAD("BACKOFF_SHARE", OVER, R_SHARE),
    BAD("BACKOFF_SHARE", "memcache://:***@h:1", R_SHARE), /* the password masked */

    OK("BACKOFF_REDIS_NAMESPACE", "default", "default"),
    OK("BACKOFF_REDIS_NAMESPACE", "crawl-2.eu_west", "crawl-2.eu_west"),
    BAD("BACKOFF_REDIS_NAMESPACE", "", R_NAME),
    BAD("BACKOFF_REDIS_NAMESPACE", "a b", R_NAME),
    BAD("BACKOFF_REDIS_NAMESPACE", "a:b", R_NAME),
    OK("BACKOFF_REDIS_NAMESPACE", "-1", "-1"),       /* a name, not a number */
    OK("BACKOFF_REDIS_NAMESPACE", OVER, OVER),

    OK("BACKOFF_UP", "1", "1"),
    OK("BACKOFF_UP", "1.5", "1.5"),
    BAD("BACKOFF_UP", "up", R_FACTOR),
    BAD("BACKOFF_UP", "0.9", R_FACTOR),
    BAD("BACKOFF_UP", "", R_FACTOR),
    BAD("BACKOFF_UP", "-1.5", R_FACTOR),
    BAD("BACKOFF_UP", OVER, R_FACTOR),

    OK("BACKOFF_DOWN", "1", "1"),
    OK("BACKOFF_DOWN", "0.6", "0.6"),
    BAD("BACKOFF_DOWN", "0", R_DOWN),
    BAD("BACKOFF_DOWN", "0.6.1", R_DOWN),
    BAD("BACKOFF_DOWN", "", R_DOWN),
    BAD("BACKOFF_DOWN", "-0.9", R_DOWN),
    BAD("BACKOFF_DOWN", OVER, R_DOWN),

    OK("BACKOFF_DOWN_AFTER", "1", "1"),
    OK("BACKOFF_DOWN_AFTER", "5", "5"),
    BAD("BACKOFF_DOWN_AFTER", "0", R_COUNT),
    BAD("BACKOFF_DOWN_AFTER", "ten", R_COUNT),
    BAD("BACKOFF_DOWN_AFTER", "", R_COUNT),
    BAD("BACKOFF_DOWN_AFTER", "-10", R_COUNT),
    BAD("BACKOFF_DOWN_AFTER", OVER, R_COUNT),

    OK("BACKOFF_CONNECT", "0", "0"),
    OK("BACKOFF_CONNECT", "1", "1"),
    BAD("BACKOFF_CONNECT", "off", R_BOOL),
    BAD("BACKOFF_CONNECT", "", R_BOOL),
    BAD("BACKOFF_CONNECT", "-1", R_BOOL),
    BAD("BACKOFF_CONNECT", OVER, R_BOOL),
    OK("BACKOFF_HTTP", "0", "0"),
    OK("BACKOFF_HTTP", "1", "1"),
    BAD("BACKOFF_HTTP", "off", R_BOOL),
    BAD("BACKOFF_HTTP", "", R_BOOL),
    BAD("BACKOFF_HTTP", "-1", R_BOOL),
    BAD("BACKOFF_HTTP", OVER, R_BOOL),

    OK("BACKOFF_HOSTS", "example.com", "example.com"),
    OK("BACKOFF_HOSTS", "Example.COM:8080,127.0.0.1", "example.com:8080,127.0.0.1"),
    OK("BACKOFF_HOSTS", "[::1]:8080,[FE80::1]", "[::1]:8080,[fe80::1]"),
    OK("BACKOFF_HOSTS", "::1", "[::1]"),
    OK("BACKOFF_HOSTS", "[0:0:0:0:0:0:0:1]:443,[2001:DB8:0:0::1]", "[::1]:443,[2001:db8::1]"),
    BAD("BACKOFF_HOSTS", "[:::::]", R_HOSTS " (bad item \"[:::::]\")"),
    BAD("BACKOFF_HOSTS", "1:2:3", R_HOSTS " (bad item \"1:2:3\")"),
    BAD("BACKOFF_HOSTS", "[fe80::1%eth0]", R_HOSTS " (bad item \"[fe80::1%eth0]\")"),
    OK("BACKOFF_HOSTS", "a:1,b:65535", "a:1,b:65535"),
    BAD("BACKOFF_HOSTS", "a,,b", R_HOSTS " (bad item \"\")"),
    BAD("BACKOFF_HOSTS", "host:0", R_HOSTS " (bad item \"host:0\")"),
    BAD("BACKOFF_HOSTS", "host:65536", R_HOSTS " (bad item \"host:65536\")"),
    BAD("BACKOFF_HOSTS", "host:", R_HOSTS " (bad item \"host:\")"),
    BAD("BACKOFF_HOSTS", "host:http", R_HOSTS " (bad item \"host:http\")"),
    BAD("BACKOFF_HOSTS", ":80", R_HOSTS " (bad item \":80\")"),
    BAD("BACKOFF_HOSTS", "[::1", R_HOSTS " (bad item \"[::1\")"),
    BAD("BACKOFF_HOSTS", "[::1]80", R_HOSTS " (bad item \"[::1]80\")"),
    BAD("BACKOFF_HOSTS", "[]:80", R_HOSTS " (bad item \"[]:80\")"),
    BAD("BACKOFF_HOSTS", "[example.com]", R_HOSTS " (bad item \"[example.com]\")"),
    BAD("BACKOFF_HOSTS", "ho st", R_HOSTS " (bad item \"ho st\")"),
    BAD("BACKOFF_HOSTS", "http://x", R_HOSTS " (bad item \"http://x\")"),
    OK("BACKOFF_HOSTS", "", ""),
    BAD("BACKOFF_HOSTS", "-1", R_HOSTS " (bad item \"-1\")"),
    BAD("BACKOFF_HOSTS", ".example.com", R_HOSTS " (bad item \".example.com\")"),
    BAD("BACKOFF_HOSTS", "host:-1", R_HOSTS " (bad item \"host:-1\")"),
    BAD("BACKOFF_HOSTS", "host:" OVER, R_HOSTS " (bad item \"host:" OVER "\")"),

    OK("BACKOFF_STATS", "", ""),
    OK("BACKOFF_STATS", "stderr", "stderr"),
    OK("BACKOFF_STATS", "/tmp/backoff stats.json", "/tmp/backoff stats.json"),
    OK("BACKOFF_STATS", "-1", "-1"),
    OK("BACKOFF_STATS", OVER, OVER),
    {"BACKOFF_STATS", "a\tb", "backoff: BACKOFF_STATS=\"a?b\" is not valid: expected " R_PATHCHARS, 0},

    OK("BACKOFF_TRACE", "", ""),
    OK("BACKOFF_TRACE", "trace.csv", "trace.csv"),
    OK("BACKOFF_TRACE", "-1", "-1"),
    OK("BACKOFF_TRACE", OVER, OVER),
    {"BACKOFF_TRACE", "x\ry", "backoff: BACKOFF_TRACE=\"x?y\" is not valid: expected " R_PATHCHARS, 0},

    OK("BACKOFF_METRICS_FILE", "", ""),
    OK("BACKOFF_METRICS_FILE", "/var/lib/node_exporter/backoff.prom", "/var/lib/node_exporter/backoff.prom"),
    OK("BACKOFF_METRICS_FILE", "/" OVER, "/" OVER),
    BAD("BACKOFF_METRICS_FILE", "-1", R_ABSPATH),
    BAD("BACKOFF_METRICS_FILE", "backoff.prom", R_ABSPATH),
    BAD("BACKOFF_METRICS_FILE", "./backoff.prom", R_ABSPATH),
    BAD("BACKOFF_METRICS_FILE", OVER, R_ABSPATH),
    {"BACKOFF_METRICS_FILE", "/a\nb", "backoff: BACKOFF_METRICS_FILE=\"/a?b\" is not valid: expected " R_PATHCHARS, 0},

    OK("BACKOFF_METRICS_MODE", "0600", "0600"),
    OK("BACKOFF_METRICS_MODE", "644", "0644"),
    OK("BACKOFF_METRICS_MODE", "0", "0000"),
    OK("BACKOFF_METRICS_MODE", "0777", "0777"),
    BAD("BACKOFF_METRICS_MODE", "", R_OCTAL),
    BAD("BACKOFF_METRICS_MODE", "-600", R_OCTAL),
    BAD("BACKOFF_METRICS_MODE", "0800", R_OCTAL),
    BAD("BACKOFF_METRICS_MODE", "1777", R_OCTAL),
    BAD("BACKOFF_METRICS_MODE", "04755", R_OCTAL),
    BAD("BACKOFF_METRICS_MODE", "0o644", R_OCTAL),
    BAD("BACKOFF_METRICS_MODE", "rw-r--r--", R_OCTAL),
    BAD("BACKOFF_METRICS_MODE", " 0644", R_OCTAL),
    BAD("BACKOFF_METRICS_MODE", OVER, R_OCTAL),

    OK("BACKOFF_VERBOSE", "0", "0"),
    OK("BACKOFF_VERBOSE", "1", "1"),
    BAD("BACKOFF_VERBOSE", "true", R_BOOL),
    BAD("BACKOFF_VERBOSE", "", R_BOOL),
    BAD("BACKOFF_VERBOSE", "-1", R_BOOL),
    BAD("BACKOFF_VERBOSE", OVER, R_BOOL),

    OK("BACKOFF_SEED", "0", "0"),
    OK("BACKOFF_SEED", "42", "42"),
    OK("BACKOFF_SEED", "18446744073709551615", "18446744073709551615"),
    BAD("BACKOFF_SEED", "random", R_SEED),
    BAD("BACKOFF_SEED", "42x", R_SEED),
    OK("BACKOFF_SEED", "", ""),
    BAD("BACKOFF_SEED", "-1", R_SEED),
    BAD("BACKOFF_SEED", "18446744073709551616", R_SEED),
    BAD("BACKOFF_SEED", OVER, R_SEED),

    OK("BACKOFF_STRICT", "0", "0"),
    OK("BACKOFF_STRICT", "1", "1"),
    BAD("BACKOFF_STRICT", "2", R_BOOL),
    BAD("BACKOFF_STRICT", "", R_BOOL),
    BAD("BACKOFF_STRICT", "-1", R_BOOL),
    BAD("BACKOFF_STRICT", OVER, R_BOOL),

    OK("BACKOFF_PACING", "0", "0"),
    OK("BACKOFF_PACING", "1", "1"),
    BAD("BACKOFF_PACING", "no", R_BOOL),
    BAD("BACKOFF_PACING", "", R_BOOL),
    BAD("BACKOFF_PACING", "-1", R_BOOL),
    BAD("BACKOFF_PACING", OVER, R_BOOL),

    OK("BACKOFF_RATELIMIT_HEADERS", "0", "0"),
    OK("BACKOFF_RATELIMIT_HEADERS", "1", "1"),
    BAD("BACKOFF_RATELIMIT_HEADERS", "off", R_BOOL),
    BAD("BACKOFF_RATELIMIT_HEADERS", "", R_BOOL),
    BAD("BACKOFF_RATELIMIT_HEADERS", "-1", R_BOOL),
    BAD("BACKOFF_RATELIMIT_HEADERS", OVER, R_BOOL),
};
/* clang-format on */
#define N_CASES (sizeof cases / sizeof cases[0])

static size_t format(const bo_config *c, char *buf, size_t len)
{
    size_t n = bo_config_format(c, buf, len);
    ck_assert_uint_lt(n, len);
    return n;
}

/* One variable set alone: accepted with the expected effect, or rejected with the exact line. */
START_TEST(test_variable_table)
{
    const vcase *w = &cases[_i];
    env e = {.n = 0};
    bo_config c, d;
    char err[BO_ERR_LEN];
    char text[8192], deftext[8192];

    env_set(&e, w->var, w->value);
    int rc = bo_config_load(&c, env_get, &e, err, sizeof err);
    if (w->ok) {
        ck_assert_msg(rc == 0, "%s=\"%s\" rejected: %s", w->var, w->value, err);
        format(&c, text, sizeof text);
        ck_assert_msg(strstr(text, w->expect) != NULL, "%s=\"%s\": no line \"%s\" in\n%s", w->var,
                      w->value, w->expect, text);
    } else {
        ck_assert_msg(rc == -1, "%s=\"%s\" accepted", w->var, w->value);
        ck_assert_str_eq(err, w->expect);
        ck_assert(strchr(err, '\n') == NULL);
        ck_assert(strncmp(err, "backoff: ", 9) == 0);
        /* Nothing was parsed before the bad value, so cfg holds the defaults. */
        bo_config_defaults(&d);
        format(&c, text, sizeof text);
        format(&d, deftext, sizeof deftext);
        ck_assert_str_eq(text, deftext);
    }
}
END_TEST

/* The table covers every variable, each with at least one good and one bad value. */
START_TEST(test_table_covers_every_variable)
{
    for (size_t v = 0; v < N_VARS; v++) {
        int good = 0, bad = 0, empty = 0, negative = 0, overflow = 0;
        for (size_t i = 0; i < N_CASES; i++) {
            if (strcmp(cases[i].var, all_vars[v]) != 0)
                continue;
            good += cases[i].ok;
            bad += !cases[i].ok;
            empty += cases[i].value[0] == '\0';
            negative += cases[i].value[0] == '-';
            overflow += strstr(cases[i].value, OVER) != NULL;
        }
        ck_assert_msg(good > 0 && bad > 0 && empty > 0 && negative > 0 && overflow > 0,
                      "%s: good %d bad %d empty %d negative %d overflow %d", all_vars[v], good,
                      bad, empty, negative, overflow);
    }
}
END_TEST

START_TEST(test_defaults)
{
    bo_config c;
    memset(&c, 0x5a, sizeof c);
    bo_config_defaults(&c);
    ck_assert_int_eq(c.policy, BO_POLICY_AIMD);
    ck_assert_uint_eq(c.max_attempts, 8);
    ck_assert_int_eq(c.max_time_ms, 0);
    ck_assert_int_eq(c.base_ms, 100);
    ck_assert_int_eq(c.cap_ms, 20000);
    ck_assert(c.factor == 2.0);
    ck_assert(c.jitter == 0.1);
    ck_assert_uint_eq(c.retry_on, BO_RETRY_429 | BO_RETRY_503 | BO_RETRY_502 | BO_RETRY_504 |
                                      BO_RETRY_408 | BO_RETRY_CONNECT | BO_RETRY_TIMEOUT |
                                      BO_RETRY_RESET);
    ck_assert(!c.unsafe_retry);
    ck_assert_uint_eq(c.window, 20);
    ck_assert_uint_eq(c.window_max, 1024);
    ck_assert(c.beta == 0.0);
    ck_assert_int_eq(c.aimd_mode, BO_AIMD_RENO);
    ck_assert(c.up == 1.5);
    ck_assert(c.down == 0.9);
    ck_assert_uint_eq(c.down_after, 10);
    ck_assert(c.connect_hook);
    ck_assert(c.http_hook);
    ck_assert_uint_eq(c.n_hosts, 0);
    ck_assert_str_eq(c.stats_path, "");
    ck_assert_str_eq(c.trace_path, "");
    ck_assert_str_eq(c.metrics_path, "");
    ck_assert_uint_eq(c.metrics_mode, 0600);
    ck_assert(!c.verbose);
    ck_assert(!c.seed_set);
    ck_assert(!c.strict);
    ck_assert(c.pacing);
    ck_assert_uint_eq(c.retry_budget, 20);
    ck_assert_int_eq(c.share, BO_SHARE_HOST);
}
END_TEST

/* Loading an empty environment gives exactly the defaults. */
START_TEST(test_load_nothing_is_defaults)
{
    env e = {.n = 0};
    bo_config c, d;
    char err[BO_ERR_LEN] = "stale";
    ck_assert_int_eq(bo_config_load(&c, env_get, &e, err, sizeof err), 0);
    ck_assert_str_eq(err, "");
    bo_config_defaults(&d);
    ck_assert(memcmp(&c, &d, sizeof c) == 0);
}
END_TEST

/* Each parsed value lands in its own field. */
START_TEST(test_fields)
{
    env e = {.n = 0};
    bo_config c;
    char err[BO_ERR_LEN];
    env_set(&e, "BACKOFF_POLICY", "decorrelated-jitter");
    env_set(&e, "BACKOFF_MAX_ATTEMPTS", "0");
    env_set(&e, "BACKOFF_MAX_TIME_MS", "30000");
    env_set(&e, "BACKOFF_BASE_MS", "5");
    env_set(&e, "BACKOFF_CAP_MS", "2000");
    env_set(&e, "BACKOFF_FACTOR", "2.7");
    env_set(&e, "BACKOFF_JITTER", "0.3");
    env_set(&e, "BACKOFF_RETRY_ON", "429,5xx,dns");
    env_set(&e, "BACKOFF_UNSAFE_RETRY", "1");
    env_set(&e, "BACKOFF_WINDOW", "4");
    env_set(&e, "BACKOFF_WINDOW_MAX", "64");
    env_set(&e, "BACKOFF_BETA", "0.7");
    env_set(&e, "BACKOFF_AIMD_MODE", "tahoe");
    env_set(&e, "BACKOFF_UP", "2");
    env_set(&e, "BACKOFF_DOWN", "0.6");
    env_set(&e, "BACKOFF_DOWN_AFTER", "5");
    env_set(&e, "BACKOFF_CONNECT", "0");
    env_set(&e, "BACKOFF_HTTP", "0");
    env_set(&e, "BACKOFF_HOSTS", "API.example.com:443,[::1]");
    env_set(&e, "BACKOFF_STATS", "stderr");
    env_set(&e, "BACKOFF_TRACE", "/tmp/t.csv");
    env_set(&e, "BACKOFF_METRICS_FILE", "/run/backoff.prom");
    env_set(&e, "BACKOFF_METRICS_MODE", "0640");
    env_set(&e, "BACKOFF_VERBOSE", "1");
    env_set(&e, "BACKOFF_SEED", "12345678901234567890");
    env_set(&e, "BACKOFF_STRICT", "1");
    env_set(&e, "BACKOFF_PACING", "0");
    ck_assert_msg(bo_config_load(&c, env_get, &e, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(c.policy, BO_POLICY_DECORRELATED_JITTER);
    ck_assert_uint_eq(c.max_attempts, 0);
    ck_assert_int_eq(c.max_time_ms, 30000);
    ck_assert_int_eq(c.base_ms, 5);
    ck_assert_int_eq(c.cap_ms, 2000);
    ck_assert(c.factor == 2.7);
    ck_assert(c.jitter == 0.3);
    ck_assert_uint_eq(c.retry_on, BO_RETRY_429 | BO_RETRY_5XX | BO_RETRY_DNS);
    ck_assert(c.unsafe_retry);
    ck_assert_uint_eq(c.window, 4);
    ck_assert_uint_eq(c.window_max, 64);
    ck_assert(c.beta == 0.7);
    ck_assert_int_eq(c.aimd_mode, BO_AIMD_TAHOE);
    ck_assert(c.up == 2.0);
    ck_assert(c.down == 0.6);
    ck_assert_uint_eq(c.down_after, 5);
    ck_assert(!c.connect_hook);
    ck_assert(!c.http_hook);
    ck_assert_uint_eq(c.n_hosts, 2);
    ck_assert_str_eq(c.hosts[0].name, "api.example.com");
    ck_assert_int_eq(c.hosts[0].port, 443);
    ck_assert_str_eq(c.hosts[1].name, "::1");
    ck_assert_int_eq(c.hosts[1].port, 0);
    ck_assert_str_eq(c.stats_path, "stderr");
    ck_assert_str_eq(c.trace_path, "/tmp/t.csv");
    ck_assert_str_eq(c.metrics_path, "/run/backoff.prom");
    ck_assert_uint_eq(c.metrics_mode, 0640);
    ck_assert(c.verbose);
    ck_assert(c.seed_set);
    ck_assert(c.seed == 12345678901234567890ULL);
    ck_assert(c.strict);
    ck_assert(!c.pacing);
}
END_TEST

START_TEST(test_cross_checks)
{
    char err[BO_ERR_LEN];
    bo_config c;
    struct {
        const char *a, *av, *b, *bv, *want;
    } rows[] = {
        {"BACKOFF_CAP_MS", "50", NULL, NULL,
         "backoff: BACKOFF_CAP_MS=\"50\" is not valid: expected an integer from "
         "BACKOFF_BASE_MS (100) to 86400000"},
        {"BACKOFF_BASE_MS", "500", "BACKOFF_CAP_MS", "400",
         "backoff: BACKOFF_CAP_MS=\"400\" is not valid: expected an integer from "
         "BACKOFF_BASE_MS (500) to 86400000"},
        {"BACKOFF_BASE_MS", "30000", NULL, NULL,
         "backoff: BACKOFF_BASE_MS=\"30000\" is not valid: expected an integer from 1 to "
         "BACKOFF_CAP_MS (20000)"},
        {"BACKOFF_WINDOW_MAX", "10", NULL, NULL,
         "backoff: BACKOFF_WINDOW_MAX=\"10\" is not valid: expected an integer from "
         "BACKOFF_WINDOW (20) to 1000000"},
        {"BACKOFF_WINDOW", "50", "BACKOFF_WINDOW_MAX", "40",
         "backoff: BACKOFF_WINDOW_MAX=\"40\" is not valid: expected an integer from "
         "BACKOFF_WINDOW (50) to 1000000"},
        {"BACKOFF_WINDOW", "2000", NULL, NULL,
         "backoff: BACKOFF_WINDOW=\"2000\" is not valid: expected an integer from 1 to "
         "BACKOFF_WINDOW_MAX (1024)"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        env e = {.n = 0};
        env_set(&e, rows[i].a, rows[i].av);
        if (rows[i].b)
            env_set(&e, rows[i].b, rows[i].bv);
        ck_assert_int_eq(bo_config_load(&c, env_get, &e, err, sizeof err), -1);
        ck_assert_str_eq(err, rows[i].want);
    }
    /* Equal is fine on both. */
    env ok = {.n = 0};
    env_set(&ok, "BACKOFF_BASE_MS", "700");
    env_set(&ok, "BACKOFF_CAP_MS", "700");
    env_set(&ok, "BACKOFF_WINDOW", "30");
    env_set(&ok, "BACKOFF_WINDOW_MAX", "30");
    ck_assert_int_eq(bo_config_load(&c, env_get, &ok, err, sizeof err), 0);
}
END_TEST

/* The first bad value stops parsing; what came before it is kept. */
START_TEST(test_error_keeps_earlier_values)
{
    env e = {.n = 0};
    bo_config c;
    char err[BO_ERR_LEN];
    env_set(&e, "BACKOFF_POLICY", "fixed");
    env_set(&e, "BACKOFF_BASE_MS", "7");
    env_set(&e, "BACKOFF_WINDOW", "abc");
    env_set(&e, "BACKOFF_SEED", "zzz");
    ck_assert_int_eq(bo_config_load(&c, env_get, &e, err, sizeof err), -1);
    ck_assert_str_eq(err, "backoff: BACKOFF_WINDOW=\"abc\" is not valid: expected " R_COUNT);
    ck_assert_int_eq(c.policy, BO_POLICY_FIXED);
    ck_assert_int_eq(c.base_ms, 7);
    ck_assert_uint_eq(c.window, 20);
    ck_assert(!c.seed_set);
}
END_TEST

/* Values are shown on one printable line, long ones shortened. */
START_TEST(test_error_value_quoting)
{
    env e = {.n = 0};
    bo_config c;
    char err[BO_ERR_LEN];
    char longv[300];
    env_set(&e, "BACKOFF_JITTER", "0.1\n2");
    ck_assert_int_eq(bo_config_load(&c, env_get, &e, err, sizeof err), -1);
    ck_assert_str_eq(err, "backoff: BACKOFF_JITTER=\"0.1?2\" is not valid: expected " R_JITTER);

    memset(longv, '7', sizeof longv - 1);
    longv[sizeof longv - 1] = '\0';
    e.n = 0;
    env_set(&e, "BACKOFF_WINDOW", longv);
    ck_assert_int_eq(bo_config_load(&c, env_get, &e, err, sizeof err), -1);
    ck_assert_str_eq(err, "backoff: BACKOFF_WINDOW=\"7777777777777777777777777777777777777777777777"
                          "777777777777777777...\" is not valid: expected " R_COUNT);

    /* A small error buffer is truncated, still terminated. */
    char small[20];
    ck_assert_int_eq(bo_config_load(&c, env_get, &e, small, sizeof small), -1);
    ck_assert_str_eq(small, "backoff: BACKOFF_WI");
    /* And no buffer at all is allowed. */
    ck_assert_int_eq(bo_config_load(&c, env_get, &e, NULL, 0), -1);
}
END_TEST

START_TEST(test_path_length)
{
    env e = {.n = 0};
    bo_config c;
    char err[BO_ERR_LEN];
    static char path[BO_PATH_LEN + 1];
    memset(path, 'p', BO_PATH_LEN - 1);
    path[BO_PATH_LEN - 1] = '\0';
    env_set(&e, "BACKOFF_TRACE", path);
    ck_assert_int_eq(bo_config_load(&c, env_get, &e, err, sizeof err), 0);
    ck_assert_uint_eq(strlen(c.trace_path), BO_PATH_LEN - 1);
    path[BO_PATH_LEN - 1] = 'p';
    path[BO_PATH_LEN] = '\0';
    ck_assert_int_eq(bo_config_load(&c, env_get, &e, err, sizeof err), -1);
    ck_assert(strstr(err, "backoff: BACKOFF_TRACE=\"pppp") == err);
    ck_assert(strstr(err, "...\" is not valid: expected " R_PATH) != NULL);
}
END_TEST

START_TEST(test_host_count_limit)
{
    env e = {.n = 0};
    bo_config c;
    char err[BO_ERR_LEN];
    char list[BO_MAX_HOSTS * 8 + 16] = "";
    for (int i = 0; i < BO_MAX_HOSTS; i++) {
        char item[16];
        snprintf(item, sizeof item, "%sh%d", i ? "," : "", i);
        strcat(list, item);
    }
    env_set(&e, "BACKOFF_HOSTS", list);
    ck_assert_msg(bo_config_load(&c, env_get, &e, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(c.n_hosts, BO_MAX_HOSTS);
    ck_assert_str_eq(c.hosts[BO_MAX_HOSTS - 1].name, "h31");
    strcat(list, ",h32");
    ck_assert_int_eq(bo_config_load(&c, env_get, &e, err, sizeof err), -1);
    ck_assert(strstr(err, "backoff: BACKOFF_HOSTS=\"h0,h1,") == err);
    ck_assert(strstr(err, "expected " R_HOSTS " (too many items)") != NULL);
    ck_assert_uint_eq(c.n_hosts, 0);
}
END_TEST

START_TEST(test_host_matches)
{
    env e = {.n = 0};
    bo_config c;
    char err[BO_ERR_LEN];

    bo_config_defaults(&c);
    ck_assert(bo_config_host_matches(&c, "anything.example", 1));
    ck_assert(bo_config_host_matches(&c, NULL, 0));

    env_set(&e, "BACKOFF_HOSTS", "Api.Example.com,127.0.0.1:8080,[::1]:9000,fe80::2");
    ck_assert_msg(bo_config_load(&c, env_get, &e, err, sizeof err) == 0, "%s", err);
    ck_assert(bo_config_host_matches(&c, "api.example.com", 443));
    ck_assert(bo_config_host_matches(&c, "API.EXAMPLE.COM", 80));
    ck_assert(!bo_config_host_matches(&c, "x.api.example.com", 443));
    ck_assert(!bo_config_host_matches(&c, "api.example.co", 443));
    ck_assert(!bo_config_host_matches(&c, "api.example.com.", 443));
    ck_assert(bo_config_host_matches(&c, "127.0.0.1", 8080));
    ck_assert(!bo_config_host_matches(&c, "127.0.0.1", 8081));
    ck_assert(!bo_config_host_matches(&c, "127.0.0.2", 8080));
    ck_assert(bo_config_host_matches(&c, "::1", 9000));
    ck_assert(bo_config_host_matches(&c, "[::1]", 9000));
    ck_assert(!bo_config_host_matches(&c, "::1", 9001));
    ck_assert(bo_config_host_matches(&c, "FE80::2", 1));
    ck_assert(bo_config_host_matches(&c, "[fe80::2]", 65535));
    ck_assert(bo_config_host_matches(&c, "0:0:0:0:0:0:0:1", 9000));
    ck_assert(bo_config_host_matches(&c, "[0::1]", 9000));
    ck_assert(bo_config_host_matches(&c, "FE80:0:0:0:0:0:0:2", 1));
    ck_assert(!bo_config_host_matches(&c, "::2", 9000));
    ck_assert(!bo_config_host_matches(&c, NULL, 8080));
    ck_assert(!bo_config_host_matches(&c, "", 8080));
}
END_TEST

START_TEST(test_policy_names)
{
    for (int k = 0; k < BO_POLICY_COUNT; k++) {
        bo_policy_kind out = BO_POLICY_COUNT;
        const char *name = bo_policy_name((bo_policy_kind)k);
        ck_assert_ptr_nonnull(name);
        ck_assert_int_eq(bo_policy_from_name(name, &out), 0);
        ck_assert_int_eq(out, k);
    }
    ck_assert_str_eq(bo_policy_name(BO_POLICY_FULL_JITTER), "full-jitter");
    ck_assert_ptr_null(bo_policy_name(BO_POLICY_COUNT));
    ck_assert_ptr_null(bo_policy_name((bo_policy_kind)-1));
    bo_policy_kind out = BO_POLICY_FIXED;
    ck_assert_int_eq(bo_policy_from_name("Fixed", &out), -1);
    ck_assert_int_eq(bo_policy_from_name("", &out), -1);
    ck_assert_int_eq(bo_policy_from_name(NULL, &out), -1);
    ck_assert_int_eq(out, BO_POLICY_FIXED);
}
END_TEST

/*
 * Read format output back: each "NAME=value" line becomes a variable, an
 * empty value meaning unset.  Copies the text so the pointers stay valid.
 */
static void env_from_format(env *e, char *text)
{
    e->n = 0;
    for (char *line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        char *eq = strchr(line, '=');
        ck_assert_ptr_nonnull(eq);
        *eq = '\0';
        if (eq[1] != '\0')
            env_set(e, line, eq + 1);
    }
}

static void check_round_trip(const bo_config *c)
{
    char text[8192], copy[8192], again[8192];
    bo_config back;
    env e;
    char err[BO_ERR_LEN];

    format(c, text, sizeof text);
    memcpy(copy, text, sizeof copy);
    env_from_format(&e, copy);
    ck_assert_msg(bo_config_load(&back, env_get, &e, err, sizeof err) == 0, "%s\n%s", err, text);
    format(&back, again, sizeof again);
    ck_assert_str_eq(again, text);
    ck_assert_msg(memcmp(&back, c, sizeof back) == 0, "config differs after round trip:\n%s",
                  text);
}

START_TEST(test_format_round_trip)
{
    bo_config c;
    env e = {.n = 0};
    char err[BO_ERR_LEN];

    bo_config_defaults(&c);
    check_round_trip(&c);

    env_set(&e, "BACKOFF_POLICY", "gaussian-jitter");
    env_set(&e, "BACKOFF_MAX_ATTEMPTS", "1000000");
    env_set(&e, "BACKOFF_MAX_TIME_MS", "12345");
    env_set(&e, "BACKOFF_BASE_MS", "3");
    env_set(&e, "BACKOFF_CAP_MS", "86400000");
    env_set(&e, "BACKOFF_FACTOR", "1.0000000000000002");
    env_set(&e, "BACKOFF_JITTER", "0.3333333333333333");
    env_set(&e, "BACKOFF_RETRY_ON", "dns,reset,500,5xx");
    env_set(&e, "BACKOFF_UNSAFE_RETRY", "1");
    env_set(&e, "BACKOFF_IDEMPOTENCY_KEY", "1");
    env_set(&e, "BACKOFF_WINDOW", "7");
    env_set(&e, "BACKOFF_WINDOW_MAX", "7");
    env_set(&e, "BACKOFF_BETA", "0.1");
    env_set(&e, "BACKOFF_AIMD_MODE", "tahoe");
    env_set(&e, "BACKOFF_UP", "99.99");
    env_set(&e, "BACKOFF_DOWN", "1e-3");
    env_set(&e, "BACKOFF_DOWN_AFTER", "1");
    env_set(&e, "BACKOFF_CONNECT", "0");
    env_set(&e, "BACKOFF_HOSTS", "A.b:1,[::FFFF:10.0.0.1]:443,::1,localhost");
    env_set(&e, "BACKOFF_STATS", "/tmp/s.json");
    env_set(&e, "BACKOFF_TRACE", "t.csv");
    env_set(&e, "BACKOFF_METRICS_FILE", "/tmp/m.prom");
    env_set(&e, "BACKOFF_METRICS_MODE", "7");
    env_set(&e, "BACKOFF_VERBOSE", "1");
    env_set(&e, "BACKOFF_SEED", "0");
    env_set(&e, "BACKOFF_STRICT", "1");
    env_set(&e, "BACKOFF_PACING", "0");
    ck_assert_msg(bo_config_load(&c, env_get, &e, err, sizeof err) == 0, "%s", err);
    check_round_trip(&c);

    /* Every policy and both modes. */
    for (int k = 0; k < BO_POLICY_COUNT; k++) {
        c.policy = (bo_policy_kind)k;
        c.aimd_mode = k % 2 ? BO_AIMD_RENO : BO_AIMD_TAHOE;
        check_round_trip(&c);
    }
}
END_TEST

START_TEST(test_format_lists_every_variable_once)
{
    bo_config c;
    char text[8192];
    bo_config_defaults(&c);
    format(&c, text, sizeof text);
    size_t lines = 0;
    for (const char *p = text; *p; p++)
        lines += *p == '\n';
    ck_assert_uint_eq(lines, N_VARS);
    for (size_t v = 0; v < N_VARS; v++) {
        char key[64];
        snprintf(key, sizeof key, "%s=", all_vars[v]);
        const char *at = strstr(text, key);
        ck_assert_msg(at != NULL && (at == text || at[-1] == '\n'), "%s missing", key);
        ck_assert_msg(strstr(at + 1, key) == NULL, "%s twice", key);
    }
    ck_assert(strstr(text, "BACKOFF_POLICY=aimd\n") != NULL);
    ck_assert(strstr(text, "BACKOFF_RETRY_ON=429,503,502,504,408,connect,timeout,reset\n") !=
              NULL);
}
END_TEST

/* Like snprintf: the return is the full length, whatever the buffer. */
START_TEST(test_format_snprintf_like)
{
    bo_config c;
    char full[8192], small[40];
    bo_config_defaults(&c);
    size_t n = bo_config_format(&c, full, sizeof full);
    ck_assert_uint_eq(n, strlen(full));
    ck_assert_uint_eq(bo_config_format(&c, NULL, 0), n);
    ck_assert_uint_eq(bo_config_format(&c, small, sizeof small), n);
    ck_assert_uint_eq(strlen(small), sizeof small - 1);
    ck_assert(strncmp(small, full, sizeof small - 1) == 0);
    char one[1] = {'x'};
    ck_assert_uint_eq(bo_config_format(&c, one, 1), n);
    ck_assert_int_eq(one[0], '\0');
}
END_TEST

/*
 * The variable table: the same variables as all_vars (the test's own list,
 * so a variable added to the table alone fails here), every default parses
 * alone to exactly the defaults, every row has documentation, and the
 * accepted-values text is the one a bad value's error line gives.
 */
START_TEST(test_config_variable_table)
{
    size_t n = 0;
    const bo_var *v = bo_config_vars(&n);
    bo_config d;
    bo_config_defaults(&d);

    ck_assert_uint_eq(n, N_VARS);
    for (size_t i = 0; i < n; i++) {
        env e = {.n = 0};
        bo_config c;
        char err[BO_ERR_LEN], what[256], line[BO_ERR_LEN];

        ck_assert_str_eq(v[i].name, all_vars[i]);
        ck_assert_msg(v[i].doc != NULL && strlen(v[i].doc) > 10, "%s has no doc", v[i].name);
        ck_assert_ptr_nonnull(v[i].default_shown);
        env_set(&e, v[i].name, v[i].deflt);
        ck_assert_msg(bo_config_load(&c, env_get, &e, err, sizeof err) == 0, "%s", err);
        ck_assert_msg(memcmp(&c, &d, sizeof c) == 0, "%s=%s is not the default", v[i].name,
                      v[i].deflt);

        /* "\x01" is bad for every kind */
        e.n = 0;
        env_set(&e, v[i].name, "\x01");
        ck_assert_int_eq(bo_config_load(&c, env_get, &e, err, sizeof err), -1);
        bo_var_accepted(&v[i], what, sizeof what);
        if (v[i].kind == BO_VAR_PATH) /* a path's length is checked, then its bytes */
            snprintf(what, sizeof what, "%s", "a path without control characters");
        snprintf(line, sizeof line, "backoff: %s=\"?\" is not valid: expected %s", v[i].name,
                 what);
        ck_assert_msg(strncmp(err, line, strlen(line)) == 0, "%s\nvs %s", err, line);
    }
}
END_TEST

/* BACKOFF_SHARE=redis://...: fields, and unusable URLs that stay host with one line. */
START_TEST(test_share_redis_url)
{
    static const struct {
        const char *url, *why;
    } bad[] = {
        {"redis://127.0.0.1", "the port is missing"},
        {"redis://127.0.0.1:0", "the port is missing"},
        {"redis://127.0.0.1:70000", "the port is missing"},
        {"redis://:6379", "the host is missing"},
        {"redis://h:6379/x", "the database is not a number"},
        {"redis://h:6379?namespace=a%20b", "the namespace is not"},
        {"redis://h:6379?lease_ms=5", "lease_ms is not from 100"},
        {"redis://h:6379?ttl_ms=5", "ttl_ms is not from 1000"},
        {"redis://h:6379?timeout_ms=0", "timeout_ms is not from 1 to 10000"},
        {"redis://h:6379?timeout_ms=10001", "timeout_ms is not from 1 to 10000"},
        {"redis://h:6379?color=red", "the query knows"},
        {"redis://h:6379x", "the port is missing"},
        {"redis://[::1:6379", "lacks its ']'"},
        {"rediss://h:6379", "needs hiredis_ssl"},
        {"redis://admin:hunter2@h", "the port is missing"},
    };
    char err[BO_ERR_LEN];
    bo_config c;

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        env e = {.n = 0};
        env_set(&e, "BACKOFF_SHARE", bad[i].url);
        ck_assert_msg(bo_config_load(&c, env_get, &e, err, sizeof err) == 0, "%s: %s",
                      bad[i].url, err);
        ck_assert_int_eq(c.share, BO_SHARE_HOST);
        ck_assert_msg(strstr(c.share_warning, bad[i].why) != NULL, "%s: %s", bad[i].url,
                      c.share_warning);
        ck_assert_msg(strncmp(c.share_warning, "backoff: BACKOFF_SHARE=\"", 24) == 0, "%s",
                      c.share_warning);
        ck_assert_msg(strstr(c.share_warning, "; using host") != NULL, "%s", c.share_warning);
        ck_assert_msg(strstr(c.share_warning, "hunter2") == NULL, "%s", c.share_warning);
        ck_assert_ptr_null(strchr(c.share_warning, '\n'));
    }

    env e = {.n = 0};
    env_set(&e, "BACKOFF_SHARE", "redis://fleet:p@ss:w@redis.example:6380/3?namespace=n1&"
                                 "lease_ms=2500&ttl_ms=9000&timeout_ms=250");
    ck_assert_msg(bo_config_load(&c, env_get, &e, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(c.share, BO_SHARE_REDIS);
    ck_assert_str_eq(c.share_warning, "");
    ck_assert_str_eq(c.redis.user, "fleet");
    ck_assert_str_eq(c.redis.pass, "p@ss:w");
    ck_assert_str_eq(c.redis.host, "redis.example");
    ck_assert_int_eq(c.redis.port, 6380);
    ck_assert_int_eq(c.redis.db, 3);
    ck_assert_str_eq(c.redis.ns, "n1");
    ck_assert_int_eq(c.redis.lease_ms, 2500);
    ck_assert_int_eq(c.redis.ttl_ms, 9000);
    ck_assert_int_eq(c.redis.timeout_ms, 250);
    ck_assert_str_eq(c.redis_ns, "default");
    ck_assert(strstr(c.redis.shown, "p@ss") == NULL);

    e.n = 0; /* a password alone; the defaults */
    env_set(&e, "BACKOFF_SHARE", "redis://:sekrit@10.0.0.1:6379");
    env_set(&e, "BACKOFF_REDIS_NAMESPACE", "ci");
    ck_assert_msg(bo_config_load(&c, env_get, &e, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(c.redis.user, "");
    ck_assert_str_eq(c.redis.pass, "sekrit");
    ck_assert_str_eq(c.redis.shown, "redis://:***@10.0.0.1:6379");
    ck_assert_str_eq(c.redis.ns, "");
    ck_assert_str_eq(c.redis_ns, "ci");
    ck_assert_int_eq(c.redis.lease_ms, 10000);
    ck_assert_int_eq(c.redis.ttl_ms, 60000);
    ck_assert_int_eq(c.redis.timeout_ms, BO_REDIS_TIMEOUT_MS);
}
END_TEST

/* --print-config's text fed back as the environment, empty values included. */
START_TEST(test_format_feeds_back_with_empty_values)
{
    bo_config c, back;
    char text[8192];
    char err[BO_ERR_LEN];
    env e = {.n = 0};

    bo_config_defaults(&c);
    format(&c, text, sizeof text);
    for (char *line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        char *eq = strchr(line, '=');
        ck_assert_ptr_nonnull(eq);
        *eq = '\0';
        env_set(&e, line, eq + 1); /* empty values too, as `env $(backoff --print-config)` */
    }
    ck_assert_msg(bo_config_load(&back, env_get, &e, err, sizeof err) == 0, "%s", err);
    ck_assert(memcmp(&back, &c, sizeof c) == 0);
}
END_TEST

static Suite *config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("core");
    tcase_add_loop_test(tc, test_variable_table, 0, (int)N_CASES);
    tcase_add_test(tc, test_table_covers_every_variable);
    tcase_add_test(tc, test_defaults);
    tcase_add_test(tc, test_load_nothing_is_defaults);
    tcase_add_test(tc, test_fields);
    tcase_add_test(tc, test_cross_checks);
    tcase_add_test(tc, test_error_keeps_earlier_values);
    tcase_add_test(tc, test_error_value_quoting);
    tcase_add_test(tc, test_path_length);
    tcase_add_test(tc, test_host_count_limit);
    tcase_add_test(tc, test_host_matches);
    tcase_add_test(tc, test_policy_names);
    tcase_add_test(tc, test_format_round_trip);
    tcase_add_test(tc, test_format_lists_every_variable_once);
    tcase_add_test(tc, test_format_snprintf_like);
    tcase_add_test(tc, test_config_variable_table);
    tcase_add_test(tc, test_format_feeds_back_with_empty_values);
    tcase_add_test(tc, test_share_redis_url);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(config_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
