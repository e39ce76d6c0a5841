/*
 * bo_schedule: the per-call delay schedules of the articles, each as its
 * article gives it.  Time is in nanoseconds; the generator is passed in.
 *
 *   fixed                base                                  (002, 003)
 *   linear               base * (n + 1), capped                (002)
 *   exponential          min(cap, base * factor^n)             (001)
 *   full-jitter          uniform(0, min(cap, base * factor^n)) (001: factor 2)
 *   equal-jitter         t/2 + uniform(0, t/2), t as above     (001)
 *   decorrelated-jitter  min(cap, uniform(base, prev * 3))     (001)
 *   gaussian-jitter      d = min(cap, d * factor); d + normal(0, d * jitter), >= 0 (003)
 *   thain                min(R * base * factor^n, cap), R uniform in [1, 2] (004)
 *   aws-adaptive         as full-jitter: AWS SDKs' standard delay (their base is 1 s)
 *
 * n counts the retries of one call so far (0 before the first retry).
 */
#ifndef BO_SCHEDULE_H
#define BO_SCHEDULE_H

#include <stdint.h>

#include "bo_config.h"
#include "bo_rng.h"

typedef struct bo_schedule {
    unsigned retries;     /* delays handed out so far for this call */
    int64_t prev_ns;      /* last delay (decorrelated and gaussian jitter) */
} bo_schedule;

/* Start a new call's schedule. */
void bo_schedule_init(bo_schedule *s);

/*
 * The delay before the next retry of this call under cfg->policy, advancing
 * the schedule.  Always within [0, cap] except gaussian-jitter, whose cap
 * applies before the jitter (003).  Policies without a per-call schedule
 * (none, responsive, aimd) return 0.
 */
int64_t bo_schedule_next_ns(bo_schedule *s, const bo_config *cfg, bo_rng *rng);

#endif
