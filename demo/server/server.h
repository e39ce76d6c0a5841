/*
 * demo/server/server.h: configuration of ratelimit-server, shared by the flag
 * parser (options.c) and the server itself (server.c).
 */
#ifndef BO_SERVER_H
#define BO_SERVER_H

#include <stdint.h>

#define BO_SRV_MAX_CAPACITY 64

enum bo_srv_outage { BO_OUTAGE_NONE, BO_OUTAGE_REFUSE, BO_OUTAGE_503, BO_OUTAGE_STALL };

struct bo_srv_capacity {
    uint64_t at_ms;  /* from this time since start... */
    long max_busy;   /* ...the concurrency cap is this */
};

/* What a token-bucket rejection carries. */
enum bo_srv_hints {
    BO_HINTS_ACCURATE = 0, /* Retry-After: seconds to the next token, RateLimit-* headers */
    BO_HINTS_FIXED, /* Retry-After: --retry-after (1 if unset) whatever the state, no RateLimit-* */
    BO_HINTS_NONE   /* no Retry-After, no RateLimit-* */
};

struct bo_srv_config {
    int port;              /* 0: any free port */
    int threads;           /* MHD event-loop threads */
    double duration_s;     /* 0: run until SIGTERM/SIGINT */
    long max_busy;         /* -1: no cap */
    long service_ms;       /* hold time of an admitted request */
    long error_ms;         /* hold time of a rejected request */
    int reject_status;     /* 429, 503 or 403 for every limiter's rejections */
    long retry_after;      /* -1: no Retry-After on cap/outage rejections */
    int wait_form;         /* how a rejection's wait is written (RL_WAIT_*, rl_lines.h) */
    double rate;           /* token bucket refill per second, 0: off */
    double burst;          /* token bucket size */
    enum bo_srv_hints bucket_hints; /* what a bucket rejection says */
    long latency_limit;    /* 0: latency model off */
    double latency_factor;
    double latency_k;
    struct bo_srv_capacity capacity[BO_SRV_MAX_CAPACITY];
    int ncapacity;
    double outage_at_s;
    double outage_for_s;
    enum bo_srv_outage outage_mode;
    long delay_ms;         /* added to every answer, holds no slot */
    long post_delay_ms;    /* added to POST/PUT answers, after the body was processed */
    long corrupt_every;    /* test only: alter every Nth item body, 0: never */
    const char *log_path;  /* CSV per request, NULL: none */
    long idle_timeout_s;   /* idle keep-alive connections are closed after this */
    int close;             /* --close: every answer ends its connection (Connection: close) */
    int gate;              /* --gate: requests wait before admission while the gate is
                              closed; it starts closed, SIGUSR1 opens it, SIGUSR2 closes it */
    long fault_drop_every; /* every Nth request is closed without any response, 0: never */
    long fault_reset_every;/* every Nth item body is reset half way, 0: never */
    long fault_reset_post_every; /* every Nth POST or PATCH processed is reset before any
                                    answer byte (its answer stored under its key), 0: never */
    int idempotency;       /* --idempotency: a request with an Idempotency-Key is processed
                              once per key, its answer replayed */
    int idempotency_required; /* --idempotency-required: POST/PATCH without a key: 400 */
    long idempotency_keys; /* --idempotency-keys: keys kept, the oldest dropped (4096) */
    const char *retry_after_raw; /* Retry-After sent verbatim on rejections, NULL: numeric */
    int reject_s3;         /* --reject-body s3: rejections carry S3's SlowDown error XML */
    int rl_dialect;        /* headers of the bucket and the fixed window (RL_DIALECT_*,
                              rl_lines.h) */
    long window_requests;  /* fixed window: N requests per window, 0: off */
    long window_s;         /* fixed window length, windows aligned to the epoch */
    double quota_spent_s;  /* > 0: every answer says no request is left until a reset this
                              far ahead (--quota-spent), and nothing is refused for it */
    const char *serve_dir; /* GET/HEAD of other paths than /item/ serve its files, NULL: off */
    const char *tls_cert;  /* PEM certificate (chain) file: https, NULL: plain http */
    const char *tls_key;   /* PEM private key file, with tls_cert */
};

/* Fills cfg from argv.  Returns 0 to run, 1 when --help was printed, 2 after
 * printing one line about a bad flag on stderr. */
int bo_srv_parse_args(int argc, char **argv, struct bo_srv_config *cfg);

#endif
