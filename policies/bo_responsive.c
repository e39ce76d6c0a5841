/*
 * bo_responsive: 002's AutoSleeper (goUp/goDown/getNextRandomInterval) as a
 * pacing gap per destination.  InitialInterval is base, MaxInterval is cap,
 * RandomizationFactor is jitter, and MaxRandomization (which the article sets
 * separately) is cap as well.  Unlike the article, a failure also resets the
 * success streak, so DOWN_AFTER counts successes *in a row*.
 */
#include "bo_responsive.h"
#include "bo_time.h"


void bo_responsive_init(bo_responsive *r)
{
    r->interval_ns = 0;
    r->successes = 0;
    r->raised_ns = 0;
    r->raised = false;
}

/*
 * 002's getNextRandomInterval: uniform in [x - delta, x + delta) with
 * delta = min(factor * x, max_rand).  No draw at all when factor is 0, so a
 * jitter-free run consumes no randomness.
 */
static double randomized(double x, double factor, double max_rand, bo_rng *rng)
{
    if (factor == 0)
        return x;
    double delta = factor * x;
    if (delta > max_rand)
        delta = max_rand;
    return (x - delta) + 2 * delta * bo_rng_uniform(rng);
}

/* Convert to whole nanoseconds within [0, hi]. */
static int64_t to_ns(double x, double hi)
{
    if (!(x < hi))
        x = hi;
    if (!(x > 0))
        return 0;
    return (int64_t)x;
}

/*
 * goUp: from no pacing to base; otherwise interval * up, randomized, and
 * never above cap.
 */
void bo_responsive_on_failure(bo_responsive *r, const bo_config *cfg, bo_rng *rng)
{
    double base = (double)cfg->base_ms * BO_NS_PER_MS;
    double cap = (double)cfg->cap_ms * BO_NS_PER_MS;

    r->successes = 0;
    if (r->interval_ns == 0) {
        r->interval_ns = to_ns(base, cap);
        return;
    }
    r->interval_ns =
        to_ns(randomized((double)r->interval_ns * cfg->up, cfg->jitter, cap, rng), cap);
}

/*
 * Count a success; at down_after in a row, goDown: interval * down,
 * randomized, and no pacing at all once that falls below base.  Nothing
 * happens while there is no pacing.
 */
void bo_responsive_on_success(bo_responsive *r, const bo_config *cfg, bo_rng *rng)
{
    double base = (double)cfg->base_ms * BO_NS_PER_MS;
    double cap = (double)cfg->cap_ms * BO_NS_PER_MS;

    if (r->interval_ns == 0)
        return;
    r->successes++;
    if (r->successes < cfg->down_after)
        return;
    r->successes = 0;
    double next = randomized((double)r->interval_ns * cfg->down, cfg->jitter, cap, rng);
    if (next < base)
        r->interval_ns = 0;
    else
        r->interval_ns = to_ns(next, cap);
}

int64_t bo_responsive_interval_ns(const bo_responsive *r)
{
    return r->interval_ns;
}

bool bo_responsive_on_failure_sent(bo_responsive *r, const bo_config *cfg, bo_rng *rng,
                                   int64_t sent_ns, int64_t now_ns)
{
    if (r->raised && sent_ns < r->raised_ns) {
        r->successes = 0; /* still a failure: the success streak is broken */
        return false;
    }
    bo_responsive_on_failure(r, cfg, rng);
    r->raised_ns = now_ns;
    r->raised = true;
    return true;
}
