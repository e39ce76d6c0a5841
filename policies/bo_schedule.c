/*
 * bo_schedule: the articles' per-call delay formulas (see bo_schedule.h).
 *
 * One growth factor for every exponential schedule: 001 writes full and
 * equal jitter with 2^n, but exponential, full-jitter, equal-jitter,
 * gaussian-jitter and thain all use cfg->factor (BACKOFF_FACTOR, default 2),
 * so that one variable tunes them all and the defaults give 001's formulas.
 *
 * Everything is computed in double nanoseconds and clamped to [0, cap] (or
 * to [0, INT64_MAX] for gaussian jitter) before converting to int64_t, so a
 * huge retry count saturates at the cap instead of overflowing.
 */
#include "bo_schedule.h"
#include "bo_math.h"
#include "bo_time.h"

#include <limits.h>
#include <math.h>

/* Largest double below 2^63: converting it to int64_t is defined. */
#define I64_MAX_AS_DOUBLE 9223372036854774784.0

void bo_schedule_init(bo_schedule *s)
{
    s->retries = 0;
    s->prev_ns = 0;
}

/* Clamp x to [0, hi] (NaN gives hi) and convert. */
static int64_t clamp_ns(double x, double hi)
{
    if (hi > I64_MAX_AS_DOUBLE)
        hi = I64_MAX_AS_DOUBLE;
    if (!(x < hi))
        x = hi;
    if (!(x > 0))
        return 0;
    return (int64_t)x;
}

/* min(cap, base * factor^n), saturating (factor^n may be inf). */
static double grown(double base, double factor, unsigned n, double cap)
{
    double t = base * bo_math_powu(factor, n);
    return (t < cap) ? t : cap; /* also maps inf and NaN to cap */
}

int64_t bo_schedule_next_ns(bo_schedule *s, const bo_config *cfg, bo_rng *rng)
{
    double base = (double)cfg->base_ms * BO_NS_PER_MS;
    double cap = (double)cfg->cap_ms * BO_NS_PER_MS;
    unsigned n = s->retries;
    double t;
    int64_t out = 0;

    if (base < 0)
        base = 0;
    if (cap < 0)
        cap = 0;

    switch (cfg->policy) {
    case BO_POLICY_FIXED:
        out = clamp_ns(base, cap);
        break;
    case BO_POLICY_LINEAR:
        out = clamp_ns(base * ((double)n + 1.0), cap);
        break;
    case BO_POLICY_EXPONENTIAL:
        out = clamp_ns(grown(base, cfg->factor, n, cap), cap);
        break;
    case BO_POLICY_FULL_JITTER:
    case BO_POLICY_AWS_ADAPTIVE: /* the SDKs' standard delay: rand x min(base x 2^n, cap) */
        t = grown(base, cfg->factor, n, cap);
        out = clamp_ns(bo_rng_between(rng, 0, t), cap);
        break;
    case BO_POLICY_EQUAL_JITTER:
        t = grown(base, cfg->factor, n, cap);
        out = clamp_ns(t / 2 + bo_rng_between(rng, 0, t / 2), cap);
        break;
    case BO_POLICY_DECORRELATED_JITTER: {
        /* 001: sleep = min(cap, random_between(base, sleep * 3)), sleep starts at base. */
        double prev = n == 0 ? base : (double)s->prev_ns;
        double lo = base < cap ? base : cap;
        out = clamp_ns(bo_rng_between(rng, lo, prev * 3), cap);
        s->prev_ns = out;
        break;
    }
    case BO_POLICY_GAUSSIAN_JITTER: {
        /*
         * 003: the first delay is MinDelay, then delay = min(delay * Factor,
         * MaxDelay), plus normal noise of sd delay * Jitter; the cap holds
         * before the jitter.  prev_ns keeps the un-jittered chain, so the
         * mean delay stays on min(cap, base * factor^n) instead of drifting
         * as a random walk.
         */
        double d = n == 0 ? (base < cap ? base : cap) : (double)s->prev_ns * cfg->factor;
        if (!(d < cap))
            d = cap;
        s->prev_ns = clamp_ns(d, cap);
        if (n == 0)
            out = s->prev_ns;
        else
            out = clamp_ns(d + bo_rng_normal(rng) * d * cfg->jitter, I64_MAX_AS_DOUBLE);
        break;
    }
    case BO_POLICY_THAIN: {
        /* 004: MIN(R * T * F^N, M), R uniform in [1, 2]. */
        double r = 1.0 + bo_rng_uniform(rng);
        double g = base * bo_math_powu(cfg->factor, n);
        out = clamp_ns(r * g, cap);
        break;
    }
    case BO_POLICY_NONE:
    case BO_POLICY_RESPONSIVE:
    case BO_POLICY_AIMD:
    case BO_POLICY_COUNT:
    default:
        out = 0;
        break;
    }
    if (s->retries < UINT_MAX)
        s->retries++;
    return out;
}
