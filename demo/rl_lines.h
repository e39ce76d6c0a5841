/*
 * demo/rl_lines.h: the rate-limit header lines of each dialect and the
 * forms of a throttled answer's wait, written the way the APIs that use
 * them document them.  One copy for ratelimit-server (demo/server) and the
 * simulator (demo/sim/headers.c), so that what the simulator reads back
 * through policies/bo_ratelimit.c is exactly what the server sends.
 *
 *   x-ratelimit   GitHub: x-ratelimit-limit/-remaining, -reset (epoch s)
 *   ratelimit     RateLimit-Limit/-Remaining/-Reset (seconds, rounded up)
 *   draft         RateLimit-Policy: "N";q=Q;w=W + RateLimit: "N";r=R;t=T
 *   x-rate-limit  X (Twitter): x-rate-limit-limit/-remaining, -reset (epoch s)
 *   openai        OpenAI: x-ratelimit-{limit,remaining,reset}-{requests,
 *                 tokens}, resets as durations ("850ms", "1.5s", "6m0s");
 *                 tokens: 100 per request, a limit of 200 per request of
 *                 the requests' limit (never the stricter of the two here)
 *   openai-s      the same with the resets in whole seconds, rounded to the
 *                 nearest ("1s", "2s", "6m0s", as OpenAI's documentation
 *                 shows them): up to half a second early or late
 *   discord       Discord: X-RateLimit-Limit/-Remaining, X-RateLimit-Reset
 *                 (epoch with 3 decimals), X-RateLimit-Reset-After (seconds
 *                 with 3 decimals), X-RateLimit-Bucket
 * Waits (a throttled answer's hint):
 *   seconds       Retry-After: whole seconds, rounded up (at least 1 when above 0)
 *   date          Retry-After: the instant as an IMF-fixdate (rounded up to
 *                 its second), with the answer's Date (rounded down)
 *   ms            retry-after-ms: milliseconds (OpenAI's clients read it)
 *   ms-azure      x-ms-retry-after-ms: milliseconds (Azure Cosmos DB)
 *   none          no hint
 */
#ifndef RL_LINES_H
#define RL_LINES_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum rl_dialect {
    RL_DIALECT_NONE = 0,
    RL_DIALECT_X,
    RL_DIALECT_RATELIMIT,
    RL_DIALECT_DRAFT,
    RL_DIALECT_XRATE,
    RL_DIALECT_OPENAI,
    RL_DIALECT_DISCORD,
    RL_DIALECT_OPENAI_S,
    RL_DIALECT_COUNT
};

static const char *const rl_dialect_names[RL_DIALECT_COUNT] = {
    "none", "x-ratelimit", "ratelimit", "draft", "x-rate-limit", "openai", "discord", "openai-s"};
#define RL_DIALECT_LIST                                                                    \
    "none, x-ratelimit, ratelimit, draft, x-rate-limit, openai, discord or openai-s"

enum rl_wait_form {
    RL_WAIT_SECONDS = 0,
    RL_WAIT_DATE,
    RL_WAIT_MS,
    RL_WAIT_MS_AZURE,
    RL_WAIT_NONE,
    RL_WAIT_COUNT
};

static const char *const rl_wait_names[RL_WAIT_COUNT] = {"seconds", "date", "ms", "ms-azure",
                                                          "none"};
#define RL_WAIT_LIST "seconds, date, ms, ms-azure or none"

/* One header line's name and value. */
typedef struct rl_line {
    char name[40];
    char value[96];
} rl_line;

#define RL_LINES_MAX 8

/* What the limiter tells of its quota on one answer. */
typedef struct rl_quota_state {
    long limit;       /* requests per window (a bucket: its size) */
    long remaining;   /* requests left now */
    double reset_s;   /* exact time until the window resets (a bucket: until full) */
    long window_s;    /* the window's length in whole seconds (the draft's w) */
    const char *name; /* the draft's policy name */
    int64_t wall_ms;  /* the answer's wall-clock time, ms since the epoch */
} rl_quota_state;

/* Index of `name` in `names` (n of them), -1 when none. */
static inline int rl_lookup(const char *const *names, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    return -1;
}

static inline rl_line *rl_add(rl_line *l, int *n, const char *name)
{
    rl_line *x = &l[(*n)++];
    snprintf(x->name, sizeof x->name, "%s", name);
    x->value[0] = '\0';
    return x;
}

static inline long rl_ceil_s(double s)
{
    double c = ceil(s - 1e-9);
    return c < 0 ? 0 : (long)c;
}

/* A duration in Go's form, rounded up to the millisecond: "850ms", "1s",
 * "1.5s", "6m0s", "1m30.5s", "1h0m0s". */
static inline void rl_duration(char *buf, size_t len, double s)
{
    long long ms = (long long)ceil(s * 1000.0 - 1e-6);
    if (ms < 0)
        ms = 0;
    if (ms < 1000) {
        snprintf(buf, len, "%lldms", ms);
        return;
    }
    long long h = ms / 3600000, m = ms / 60000 % 60, sec = ms / 1000 % 60, frac = ms % 1000;
    char secs[16];
    if (frac == 0) {
        snprintf(secs, sizeof secs, "%llds", sec);
    } else {
        snprintf(secs, sizeof secs, "%lld.%03lld", sec, frac);
        size_t k = strlen(secs);
        while (secs[k - 1] == '0')
            secs[--k] = '\0';
        secs[k++] = 's';
        secs[k] = '\0';
    }
    if (h > 0)
        snprintf(buf, len, "%lldh%lldm%s", h, m, secs);
    else if (m > 0)
        snprintf(buf, len, "%lldm%s", m, secs);
    else
        snprintf(buf, len, "%s", secs);
}

/* An IMF-fixdate of an epoch second: "Sun, 06 Nov 1994 08:49:37 GMT". */
static inline void rl_http_date(char *buf, size_t len, int64_t epoch_s)
{
    static const char days[] = "ThuFriSatSunMonTueWed"; /* 1970-01-01 was a Thursday */
    static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
    int64_t z = (epoch_s >= 0 ? epoch_s : epoch_s - 86399) / 86400, sod = epoch_s - z * 86400;
    int wd = (int)(((z % 7) + 7) % 7);
    /* civil_from_days (H. Hinnant) */
    int64_t zz = z + 719468, era = (zz >= 0 ? zz : zz - 146096) / 146097;
    int64_t doe = zz - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
    int64_t d = doy - (153 * mp + 2) / 5 + 1, m = mp < 10 ? mp + 3 : mp - 9;
    int64_t y = yoe + era * 400 + (m <= 2);
    snprintf(buf, len, "%.3s, %02d %.3s %04lld %02d:%02d:%02d GMT", days + 3 * wd, (int)d,
             months + 3 * (m - 1), (long long)y, (int)(sod / 3600), (int)(sod / 60 % 60),
             (int)(sod % 60));
}

/* The quota lines of dialect d for state st; returns how many were written to l. */
static inline int rl_quota_lines(int d, const rl_quota_state *st, rl_line *l)
{
    int n = 0;
    long reset = rl_ceil_s(st->reset_s);
    /* the exact instant, rounded up to the second (epoch dialects) */
    long long epoch = (long long)ceil(((double)st->wall_ms + st->reset_s * 1000.0) / 1000.0 - 1e-9);
    double exact_ms = (double)st->wall_ms + st->reset_s * 1000.0;

    switch (d) {
    case RL_DIALECT_X:
        snprintf(rl_add(l, &n, "x-ratelimit-limit")->value, sizeof l->value, "%ld", st->limit);
        snprintf(rl_add(l, &n, "x-ratelimit-remaining")->value, sizeof l->value, "%ld",
                 st->remaining);
        snprintf(rl_add(l, &n, "x-ratelimit-reset")->value, sizeof l->value, "%lld", epoch);
        break;
    case RL_DIALECT_RATELIMIT:
        snprintf(rl_add(l, &n, "RateLimit-Limit")->value, sizeof l->value, "%ld", st->limit);
        snprintf(rl_add(l, &n, "RateLimit-Remaining")->value, sizeof l->value, "%ld",
                 st->remaining);
        snprintf(rl_add(l, &n, "RateLimit-Reset")->value, sizeof l->value, "%ld", reset);
        break;
    case RL_DIALECT_DRAFT:
        snprintf(rl_add(l, &n, "RateLimit-Policy")->value, sizeof l->value, "\"%s\";q=%ld;w=%ld",
                 st->name, st->limit, st->window_s);
        snprintf(rl_add(l, &n, "RateLimit")->value, sizeof l->value, "\"%s\";r=%ld;t=%ld",
                 st->name, st->remaining, reset);
        break;
    case RL_DIALECT_XRATE:
        snprintf(rl_add(l, &n, "x-rate-limit-limit")->value, sizeof l->value, "%ld", st->limit);
        snprintf(rl_add(l, &n, "x-rate-limit-remaining")->value, sizeof l->value, "%ld",
                 st->remaining);
        snprintf(rl_add(l, &n, "x-rate-limit-reset")->value, sizeof l->value, "%lld", epoch);
        break;
    case RL_DIALECT_OPENAI:
    case RL_DIALECT_OPENAI_S: {
        long used = st->limit - st->remaining;
        double reset_s = d == RL_DIALECT_OPENAI_S ? floor(st->reset_s + 0.5) : st->reset_s;
        snprintf(rl_add(l, &n, "x-ratelimit-limit-requests")->value, sizeof l->value, "%ld",
                 st->limit);
        snprintf(rl_add(l, &n, "x-ratelimit-limit-tokens")->value, sizeof l->value, "%ld",
                 200 * st->limit);
        snprintf(rl_add(l, &n, "x-ratelimit-remaining-requests")->value, sizeof l->value, "%ld",
                 st->remaining);
        snprintf(rl_add(l, &n, "x-ratelimit-remaining-tokens")->value, sizeof l->value, "%ld",
                 200 * st->limit - 100 * used);
        rl_duration(rl_add(l, &n, "x-ratelimit-reset-requests")->value, sizeof l->value,
                    reset_s);
        rl_duration(rl_add(l, &n, "x-ratelimit-reset-tokens")->value, sizeof l->value, reset_s);
        break;
    }
    case RL_DIALECT_DISCORD:
        snprintf(rl_add(l, &n, "X-RateLimit-Limit")->value, sizeof l->value, "%ld", st->limit);
        snprintf(rl_add(l, &n, "X-RateLimit-Remaining")->value, sizeof l->value, "%ld",
                 st->remaining);
        snprintf(rl_add(l, &n, "X-RateLimit-Reset")->value, sizeof l->value, "%.3f",
                 ceil(exact_ms - 1e-6) / 1000.0);
        snprintf(rl_add(l, &n, "X-RateLimit-Reset-After")->value, sizeof l->value, "%.3f",
                 ceil(st->reset_s * 1000.0 - 1e-6) / 1000.0);
        snprintf(rl_add(l, &n, "X-RateLimit-Bucket")->value, sizeof l->value, "%s", st->name);
        break;
    default:
        break;
    }
    return n;
}

/*
 * The lines of a throttled answer's wait of wait_s seconds (exact) in form
 * f at wall_ms; the date form adds the answer's Date.  Returns how many
 * were written to l.
 */
static inline int rl_wait_lines(int f, double wait_s, int64_t wall_ms, rl_line *l)
{
    int n = 0;
    long long ms = (long long)ceil(wait_s * 1000.0 - 1e-6);
    if (ms < 0)
        ms = 0;
    switch (f) {
    case RL_WAIT_SECONDS: { /* a wait above 0 is at least 1 s */
        long s = rl_ceil_s(wait_s);
        snprintf(rl_add(l, &n, "Retry-After")->value, sizeof l->value, "%ld",
                 s < 1 && wait_s > 0 ? 1 : s);
        break;
    }
    case RL_WAIT_DATE: {
        int64_t at = (wall_ms + ms + 999) / 1000;
        rl_http_date(rl_add(l, &n, "Retry-After")->value, sizeof l->value, at);
        rl_http_date(rl_add(l, &n, "Date")->value, sizeof l->value, wall_ms / 1000);
        break;
    }
    case RL_WAIT_MS:
        snprintf(rl_add(l, &n, "retry-after-ms")->value, sizeof l->value, "%lld", ms);
        break;
    case RL_WAIT_MS_AZURE:
        snprintf(rl_add(l, &n, "x-ms-retry-after-ms")->value, sizeof l->value, "%lld", ms);
        break;
    default:
        break;
    }
    return n;
}

#endif
