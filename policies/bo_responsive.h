/*
 * bo_responsive: 002's AutoSleeper, as a pacing gap between consecutive
 * attempts to one destination.  The gap rises by UP (starting at base) on
 * every failure, falls by DOWN after DOWN_AFTER successes in a row, and drops
 * to zero when it would fall below base; each change is randomized by
 * +-jitter.  It applies before every request, not only retries.
 */
#ifndef BO_RESPONSIVE_H
#define BO_RESPONSIVE_H

#include <stdint.h>

#include "bo_config.h"
#include "bo_rng.h"

typedef struct bo_responsive {
    int64_t interval_ns;   /* current gap; 0 = no pacing */
    unsigned successes;    /* successes in a row since the last change */
} bo_responsive;

void bo_responsive_init(bo_responsive *r);
void bo_responsive_on_failure(bo_responsive *r, const bo_config *cfg, bo_rng *rng);
void bo_responsive_on_success(bo_responsive *r, const bo_config *cfg, bo_rng *rng);
int64_t bo_responsive_interval_ns(const bo_responsive *r);

#endif
