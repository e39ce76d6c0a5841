/*
 * bo_responsive: 002's AutoSleeper, as a pacing gap between consecutive
 * attempts to one destination.  The gap rises by UP (starting at base) on
 * every failure, falls by DOWN after DOWN_AFTER successes in a row, and drops
 * to zero when it would fall below base; each change is randomized by
 * +-jitter.  It applies before every request, not only retries.
 */
#ifndef BO_RESPONSIVE_H
#define BO_RESPONSIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "bo_config.h"
#include "bo_rng.h"

typedef struct bo_responsive {
    int64_t interval_ns;   /* current gap; 0 = no pacing */
    unsigned successes;    /* successes in a row since the last change */
    int64_t raised_ns;     /* when the gap last rose (bo_responsive_on_failure_sent) */
    bool raised;           /* raised_ns is set */
} bo_responsive;

void bo_responsive_init(bo_responsive *r);
void bo_responsive_on_failure(bo_responsive *r, const bo_config *cfg, bo_rng *rng);
void bo_responsive_on_success(bo_responsive *r, const bo_config *cfg, bo_rng *rng);
int64_t bo_responsive_interval_ns(const bo_responsive *r);

/*
 * A failure of an attempt sent at sent_ns, seen at now_ns, when many
 * attempts share the gap: it raises the gap only if the attempt was sent
 * after the last raise (the ones sent before it were sent under the old gap
 * and already counted, as the AIMD window ignores signals from before its
 * last decrease).  Without this, N concurrent failures would multiply the
 * gap by UP^N at once.  Returns true when it raised the gap.
 */
bool bo_responsive_on_failure_sent(bo_responsive *r, const bo_config *cfg, bo_rng *rng,
                                   int64_t sent_ns, int64_t now_ns);

#endif
