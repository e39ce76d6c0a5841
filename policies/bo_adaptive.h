/*
 * bo_adaptive: the client rate limiter of AWS SDKs' "adaptive" retry mode
 * (botocore's retries/adaptive.py, throttling.py and bucket.py; the Java and
 * Go SDKs implement the same), as the policy `aws-adaptive`, so that the
 * default policy is measured beside what a user of those SDKs gets.
 *
 *   - a token bucket paces every attempt, first ones included, but only
 *     once the destination has throttled (off until the first throttle);
 *   - the send rate is measured from the answers, in 0.5 s buckets, each
 *     new bucket's rate smoothed in at 0.8;
 *   - a throttle sets the CUBIC curve's top to the rate in use (the
 *     measured rate, or the bucket's if lower) and the bucket's rate to 0.7
 *     of it; every other answer moves the rate along the curve
 *     0.4 x (t - K)^3 + top, K = cbrt(top x 0.3 / 0.4), t the seconds since
 *     the last throttle;
 *   - the bucket's rate never exceeds twice the measured rate, nor falls
 *     below 0.5 per second; it holds at most max(rate, 1) tokens.
 * Retries wait the SDKs' standard delay, rand x min(base x 2^n, cap) (the
 * engine's schedule, as full-jitter; the SDKs' base is 1 s); a server's
 * Retry-After is honoured as under every policy.  Pure: the time is passed in.
 */
#ifndef BO_ADAPTIVE_H
#define BO_ADAPTIVE_H

#include <stdbool.h>
#include <stdint.h>

/* The SDKs' constants. */
#define BO_ADAPTIVE_BETA 0.7
#define BO_ADAPTIVE_SCALE 0.4
#define BO_ADAPTIVE_SMOOTHING 0.8
#define BO_ADAPTIVE_BUCKET_NS 500000000LL
#define BO_ADAPTIVE_MIN_RATE 0.5
#define BO_ADAPTIVE_RATE_SCALE 2.0

typedef struct bo_adaptive {
    bool enabled;            /* the destination has throttled: the bucket paces */
    double fill_rate;        /* the bucket's rate, tokens per second */
    double max_tokens;       /* what it holds at most */
    double tokens;
    int64_t refilled_ns;     /* last refill; -1: never */
    double measured;         /* smoothed answers per second */
    int64_t bucket_ns;       /* start of the rate bucket being counted */
    unsigned counted;        /* answers in it */
    double top;              /* CUBIC's W_max: the rate that drew the last throttle */
    double k;                /* CUBIC's K: seconds from the throttle back to top */
    int64_t throttle_ns;     /* the last throttle (the start, before any) */
} bo_adaptive;

void bo_adaptive_init(bo_adaptive *a, int64_t now_ns);

/* Earliest time the bucket lets an attempt out (now_ns when it is off or has a token). */
int64_t bo_adaptive_next_send_ns(bo_adaptive *a, int64_t now_ns);

/* An attempt goes out now: it takes a token while the bucket is on. */
void bo_adaptive_on_send(bo_adaptive *a, int64_t now_ns);

/* An answer came: `throttled` for a throttle, false for every other outcome (the SDKs
 * move along the curve on any answer that is not a throttle). */
void bo_adaptive_on_answer(bo_adaptive *a, bool throttled, int64_t now_ns);

#endif
