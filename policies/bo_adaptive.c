/*
 * bo_adaptive: AWS SDKs' adaptive retry mode's client rate limiter (see
 * bo_adaptive.h).  Each step follows botocore's code: the token bucket's
 * refill before any change of its rate, the rate clocker's buckets counted
 * from a whole second, the CUBIC calculator's zero point recomputed at each
 * throttle.
 */
#include "bo_adaptive.h"
#include "bo_math.h"
#include "bo_time.h"

#include <math.h>

/* floor(t / unit) x unit, for times on either side of the clock's origin. */
static int64_t floor_to(int64_t t, int64_t unit)
{
    int64_t q = t / unit;
    if (t % unit != 0 && t < 0)
        q--;
    return q * unit;
}

/* Tokens earned since the last refill at the current rate, up to what the bucket holds. */
static void refill(bo_adaptive *a, int64_t now_ns)
{
    if (a->refilled_ns < 0 || now_ns < a->refilled_ns) {
        a->refilled_ns = now_ns;
        return;
    }
    a->tokens += (double)(now_ns - a->refilled_ns) / BO_NS_PER_S * a->fill_rate;
    if (a->tokens > a->max_tokens)
        a->tokens = a->max_tokens;
    a->refilled_ns = now_ns;
}

/* A new rate for the bucket: what was earned at the old one first, then at least the floor. */
static void set_rate(bo_adaptive *a, double rate, int64_t now_ns)
{
    refill(a, now_ns);
    a->fill_rate = rate > BO_ADAPTIVE_MIN_RATE ? rate : BO_ADAPTIVE_MIN_RATE;
    a->max_tokens = rate >= 1 ? rate : 1;
    if (a->tokens > a->max_tokens)
        a->tokens = a->max_tokens;
}

static double zero_point(double top)
{
    return bo_math_cbrt(top * (1 - BO_ADAPTIVE_BETA) / BO_ADAPTIVE_SCALE);
}

void bo_adaptive_init(bo_adaptive *a, int64_t now_ns)
{
    a->enabled = false;
    a->tokens = 0;
    a->refilled_ns = -1;
    a->fill_rate = 1;
    a->max_tokens = 1;
    set_rate(a, 1, now_ns);
    a->measured = 0;
    a->bucket_ns = floor_to(now_ns, BO_NS_PER_S);
    a->counted = 0;
    a->top = 0;
    a->k = zero_point(0);
    a->throttle_ns = now_ns;
}

int64_t bo_adaptive_next_send_ns(bo_adaptive *a, int64_t now_ns)
{
    if (!a->enabled)
        return now_ns;
    refill(a, now_ns);
    if (a->tokens >= 1)
        return now_ns;
    double wait = (1 - a->tokens) / a->fill_rate * BO_NS_PER_S;
    int64_t w = wait < 60.0 * BO_NS_PER_S ? (int64_t)bo_math_ceil(wait) : 60 * BO_NS_PER_S;
    return now_ns + (w > 0 ? w : 1);
}

void bo_adaptive_on_send(bo_adaptive *a, int64_t now_ns)
{
    if (!a->enabled)
        return;
    refill(a, now_ns);
    a->tokens -= 1;
    if (a->tokens < 0)
        a->tokens = 0; /* admitted by a caller that did not wait for its token */
}

/* The rate clocker: one more answer; returns the smoothed rate. */
static double record(bo_adaptive *a, int64_t now_ns)
{
    int64_t bucket = floor_to(now_ns, BO_ADAPTIVE_BUCKET_NS);

    a->counted++;
    if (bucket > a->bucket_ns) {
        double rate = (double)a->counted * BO_NS_PER_S / (double)(bucket - a->bucket_ns);
        a->measured = rate * BO_ADAPTIVE_SMOOTHING + a->measured * (1 - BO_ADAPTIVE_SMOOTHING);
        a->counted = 0;
        a->bucket_ns = bucket;
    }
    return a->measured;
}

void bo_adaptive_on_answer(bo_adaptive *a, bool throttled, int64_t now_ns)
{
    double measured = record(a, now_ns);
    double rate;

    if (!throttled) {
        double dt = (double)(now_ns - a->throttle_ns) / BO_NS_PER_S - a->k;
        rate = BO_ADAPTIVE_SCALE * dt * dt * dt + a->top;
    } else {
        double in_use = measured;
        if (a->enabled && a->fill_rate < in_use)
            in_use = a->fill_rate;
        a->top = in_use;
        a->k = zero_point(in_use);
        a->throttle_ns = now_ns;
        rate = in_use * BO_ADAPTIVE_BETA;
        a->enabled = true;
    }
    if (rate > BO_ADAPTIVE_RATE_SCALE * measured)
        rate = BO_ADAPTIVE_RATE_SCALE * measured;
    set_rate(a, rate, now_ns);
}
