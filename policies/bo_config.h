/*
 * bo_config: every BACKOFF_* variable, parsed through an
 * injected getter so that tests and the simulator can pass tables instead of
 * the process environment.  Pure: no getenv(), no printing; errors come back
 * as one line of text in a caller-supplied buffer.
 */
#ifndef BO_CONFIG_H
#define BO_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum bo_policy_kind {
    BO_POLICY_NONE = 0,
    BO_POLICY_FIXED,
    BO_POLICY_LINEAR,
    BO_POLICY_EXPONENTIAL,
    BO_POLICY_FULL_JITTER,
    BO_POLICY_EQUAL_JITTER,
    BO_POLICY_DECORRELATED_JITTER,
    BO_POLICY_GAUSSIAN_JITTER,
    BO_POLICY_THAIN,
    BO_POLICY_RESPONSIVE,
    BO_POLICY_AWS_ADAPTIVE,
    BO_POLICY_AIMD,
    BO_POLICY_COUNT
} bo_policy_kind;

/* Bits of BACKOFF_RETRY_ON. */
enum {
    BO_RETRY_429 = 1u << 0,
    BO_RETRY_503 = 1u << 1,
    BO_RETRY_502 = 1u << 2,
    BO_RETRY_504 = 1u << 3,
    BO_RETRY_500 = 1u << 4,
    BO_RETRY_408 = 1u << 5,
    BO_RETRY_5XX = 1u << 6,     /* every 500..599 status */
    BO_RETRY_CONNECT = 1u << 7, /* connection refused / unreachable */
    BO_RETRY_TIMEOUT = 1u << 8,
    BO_RETRY_RESET = 1u << 9,   /* reset, or closed without a response */
    BO_RETRY_DNS = 1u << 10
};

typedef enum bo_aimd_mode { BO_AIMD_RENO = 0, BO_AIMD_TAHOE } bo_aimd_mode;

/* BACKOFF_SHARE: where the per-destination state lives (redis: host-wide,
 * plus the fleet's part in a Redis server) */
typedef enum bo_share_mode { BO_SHARE_HOST = 0, BO_SHARE_PROCESS, BO_SHARE_REDIS } bo_share_mode;

#define BO_MAX_HOSTS 32
#define BO_HOST_LEN 256
#define BO_PATH_LEN 1024
#define BO_ERR_LEN 512
#define BO_REDIS_NS_LEN 64

/* BACKOFF_SHARE=redis://[USER:PASS@]HOST:PORT[/DB][?namespace=N&lease_ms=N&ttl_ms=N&
 * timeout_ms=N] */
#define BO_REDIS_TIMEOUT_MS 20 /* default bound on each wait for Redis */
typedef struct bo_redis_url {
    char host[BO_HOST_LEN]; /* name or address literal, without brackets */
    int port;
    unsigned db;            /* SELECT db; 0: none */
    char user[128];         /* "" with a password alone: AUTH PASS */
    char pass[256];         /* "": none (then REDISCLI_AUTH, in the shim) */
    char ns[BO_REDIS_NS_LEN]; /* from ?namespace=; "": BACKOFF_REDIS_NAMESPACE */
    int64_t lease_ms;       /* a fleet lease's expiry (a host that died holding it) */
    int64_t ttl_ms;         /* an idle destination's keys expire after this */
    int64_t timeout_ms;     /* longest wait for Redis: connect, each command, the lock */
    char shown[BO_PATH_LEN]; /* the URL with the password masked, for messages */
} bo_redis_url;

typedef struct bo_host {
    char name[BO_HOST_LEN]; /* lower-cased host name or address literal */
    int port;               /* 0: any port */
} bo_host;

typedef struct bo_config {
    bo_policy_kind policy;    /* BACKOFF_POLICY, default aimd */
    unsigned max_attempts;    /* BACKOFF_MAX_ATTEMPTS, 0 = no limit, default 8 */
    int64_t max_time_ms;      /* BACKOFF_MAX_TIME_MS, 0 = no limit */
    int64_t base_ms;          /* BACKOFF_BASE_MS, default 100 */
    int64_t cap_ms;           /* BACKOFF_CAP_MS, default 20000 */
    double factor;            /* BACKOFF_FACTOR, default 2 */
    double jitter;            /* BACKOFF_JITTER, default 0.1 */
    unsigned retry_on;        /* BACKOFF_RETRY_ON bits */
    bool unsafe_retry;        /* BACKOFF_UNSAFE_RETRY */
    bool idempotency_key;     /* BACKOFF_IDEMPOTENCY_KEY: the shim adds an Idempotency-Key
                                 to POST and PATCH requests that carry none (bo_idem.h) */
    unsigned window;          /* BACKOFF_WINDOW, default 20 */
    unsigned window_max;      /* BACKOFF_WINDOW_MAX, default 1024 */
    double beta;              /* BACKOFF_BETA; 0 = the policy's own */
    bo_aimd_mode aimd_mode;   /* BACKOFF_AIMD_MODE */
    double up, down;          /* BACKOFF_UP, BACKOFF_DOWN: 1.5, 0.9 */
    unsigned down_after;      /* BACKOFF_DOWN_AFTER: 10 */
    bool connect_hook;        /* BACKOFF_CONNECT, default 1 */
    bool http_hook;           /* BACKOFF_HTTP, default 1: the HTTP hooks of programs without
                                 libcurl (plain sockets, OpenSSL; shim/http/) */
    size_t n_hosts;           /* BACKOFF_HOSTS; 0 = every destination */
    bo_host hosts[BO_MAX_HOSTS];
    char stats_path[BO_PATH_LEN]; /* BACKOFF_STATS: "" off, "stderr", or a path */
    char trace_path[BO_PATH_LEN]; /* BACKOFF_TRACE: "" off */
    char metrics_path[BO_PATH_LEN]; /* BACKOFF_METRICS_FILE: "" off, else an absolute path
                                       rewritten at most once a second with the host-wide
                                       counters (shim/dest/metrics.c) */
    unsigned metrics_mode;    /* BACKOFF_METRICS_MODE: that file's mode, default 0600 */
    bool verbose;             /* BACKOFF_VERBOSE */
    bool seed_set;            /* BACKOFF_SEED given */
    uint64_t seed;
    bool strict;              /* BACKOFF_STRICT: config errors are fatal */
    bool pacing;              /* BACKOFF_PACING: 1 (default) aimd improvements on;
                                 0 gives 000's algorithm exactly (bo_window.c) */
    unsigned retry_budget;    /* BACKOFF_RETRY_BUDGET: retries as a percentage of first
                                 attempts per destination (bo_budget.h), 0 = off, default 20 */
    bool ratelimit_headers;   /* BACKOFF_RATELIMIT_HEADERS: 1 (default) pace from the
                                 server's rate-limit headers (bo_ratelimit.h) */
    bo_share_mode share;      /* BACKOFF_SHARE: host (default, every process of the
                                 user on this host), process (its threads only) or
                                 redis (host, and the fleet's part in Redis) */
    bo_redis_url redis;       /* BACKOFF_SHARE=redis://..., parsed */
    /* A redis URL that could not be used: the line to print once; share is then
     * host (the program keeps working).  "" when none. */
    char share_warning[BO_ERR_LEN];
    char redis_ns[BO_REDIS_NS_LEN]; /* BACKOFF_REDIS_NAMESPACE, default "default" */
} bo_config;

/*
 * The variable table (bo_config.c): one row per BACKOFF_* variable drives
 * loading, validation and its error text, the defaults, bo_config_format
 * (--print-config), and the documentation (`backoff --variables`, which
 * prints the README's variable table; a test keeps the two equal).
 */
typedef enum bo_var_kind {
    BO_VAR_POLICY,    /* a policy name */
    BO_VAR_UINT,      /* unsigned, lo..hi */
    BO_VAR_I64,       /* int64_t, lo..hi */
    BO_VAR_DOUBLE,    /* double, lo..hi (bounds open or closed: flags) */
    BO_VAR_BOOL,      /* exactly "0" or "1" */
    BO_VAR_CHOICE,    /* one of `choices`, stored as its index in an int-sized enum */
    BO_VAR_RETRY_ON,  /* comma list of outcomes */
    BO_VAR_HOSTS,     /* comma list of destinations; "" = every destination */
    BO_VAR_PATH,      /* a path; "" = off (BO_VAR_ABSOLUTE: an absolute one) */
    BO_VAR_MODE,      /* an octal file mode, 0 to 0777 */
    BO_VAR_SEED,      /* a 64-bit seed; "" = from the clock */
    BO_VAR_SHARE,     /* host, process or a redis:// URL (bo_redis_url) */
    BO_VAR_NAME       /* 1 to 63 of [A-Za-z0-9._-] */
} bo_var_kind;

enum {
    BO_VAR_LO_OPEN = 1u << 0, /* the value must be above lo */
    BO_VAR_HI_OPEN = 1u << 1, /* the value must be below hi */
    BO_VAR_ZERO_OK = 1u << 2, /* 0 is accepted besides the range (the policy's own) */
    BO_VAR_ABSOLUTE = 1u << 3 /* BO_VAR_PATH: only an absolute path (or "": off) */
};

typedef struct bo_var {
    const char *name;          /* "BACKOFF_MAX_ATTEMPTS" */
    bo_var_kind kind;
    size_t offset;             /* of its field in bo_config */
    double lo, hi;             /* numeric kinds */
    unsigned flags;            /* BO_VAR_* bounds */
    const char *accepted;      /* the accepted values in words, when the kind's own
                                  text does not say it; NULL: from kind and range */
    const char *deflt;         /* the default, as the variable's own text */
    const char *default_shown; /* the default, for a person ("every destination") */
    const char *doc;           /* what it does, one sentence */
    const char *const *choices; /* BO_VAR_CHOICE: the accepted words, NULL-terminated */
} bo_var;

/* The table, in --print-config order; *n is set to its length. */
const bo_var *bo_config_vars(size_t *n);

/* What `v` accepts, in words (the error line's "expected ..."); like snprintf. */
size_t bo_var_accepted(const bo_var *v, char *buf, size_t len);

/* Returns the value of variable `name`, or NULL when it is unset. */
typedef const char *(*bo_getenv_fn)(void *ctx, const char *name);

/* Fill `cfg` with the defaults of the variable table. */
void bo_config_defaults(bo_config *cfg);

/*
 * Parse every BACKOFF_* variable through `get`.  Returns 0 on success.  On
 * the first bad value returns -1, leaves `cfg` holding the defaults plus the
 * values parsed so far, and writes one line (no newline) to `err`:
 *   backoff: BACKOFF_MAX_ATTEMPTS="abc" is not valid: expected an integer from 0 to 1000000
 * An empty value counts as bad, except for the variables that have an unset
 * state (HOSTS, STATS, TRACE, METRICS_FILE, SEED), where it means that state.
 */
int bo_config_load(bo_config *cfg, bo_getenv_fn get, void *ctx, char *err, size_t errlen);

/*
 * Parse a redis:// URL (pure; the shim connects).  0, or -1 with the reason in
 * why ("the port is missing").  out->shown is set in both cases.
 */
int bo_redis_url_parse(const char *url, bo_redis_url *out, char *why, size_t whylen);

/* url with the password (between "user:" and "@") replaced by "***". */
void bo_redis_url_mask(const char *url, char *out, size_t outlen);

/* Name of a policy ("full-jitter"), or NULL for an out-of-range value. */
const char *bo_policy_name(bo_policy_kind kind);

/* Policy by name; returns -1 when the name is unknown. */
int bo_policy_from_name(const char *name, bo_policy_kind *out);

/*
 * True when destination host:port is managed under BACKOFF_HOSTS (always
 * true when the list is empty).  Host comparison ignores case.
 */
bool bo_config_host_matches(const bo_config *cfg, const char *host, int port);

/*
 * Write the effective configuration as "BACKOFF_X=value" lines into buf;
 * returns the length that the whole text needs (like snprintf).
 */
size_t bo_config_format(const bo_config *cfg, char *buf, size_t len);

#endif
