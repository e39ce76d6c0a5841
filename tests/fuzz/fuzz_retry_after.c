/*
 * fuzz_retry_after: the engine (bo_dest_admit / bo_dest_complete) driven by
 * arbitrary outcomes, clock steps and Retry-After values (negative, zero,
 * huge, INT64_MAX) under an arbitrary policy and bounds, with up to four
 * calls sharing one destination.  Promises checked (UBSan catches any
 * signed overflow on the way):
 *   - a RETRY's wait is never negative and never exceeds the cap, however
 *     large the Retry-After (gaussian-jitter alone adds its noise after the
 *     cap, as article 003 does: its bound is cap x (1 + 9 x jitter), since
 *     bo_rng_normal's Box-Muller never exceeds 8.6 in magnitude);
 *   - it is at least the Retry-After when one was given, and a Retry-After
 *     past the cap is never retried (the answer stands: DONE);
 *   - never more attempts than max_attempts;
 *   - a WAIT deadline lies in the future, and for a retry never past the
 *     call's max_time_ms deadline;
 *   - the window's in-flight count equals the calls in flight.
 */
#include <stdlib.h>
#include <string.h>

#include "bo_time.h"
#include "bo_config.h"
#include "bo_engine.h"
#include "fuzz_input.h"

#define NCALLS 4

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const bo_outcome outcomes[] = {
    {BO_VERDICT_SUCCESS, BO_SIGNAL_NONE, false, BO_CAUSE_NONE},
    {BO_VERDICT_RETRY, BO_SIGNAL_THROTTLE, false, BO_CAUSE_503},
    {BO_VERDICT_RETRY, BO_SIGNAL_LOSS, false, BO_CAUSE_CONNECT},
    {BO_VERDICT_RETRY, BO_SIGNAL_NONE, false, BO_CAUSE_NONE},
    {BO_VERDICT_FINAL, BO_SIGNAL_NONE, false, BO_CAUSE_NONE},
    {BO_VERDICT_FINAL, BO_SIGNAL_THROTTLE, false, BO_CAUSE_503},
    {BO_VERDICT_FINAL, BO_SIGNAL_LOSS, false, BO_CAUSE_CONNECT},
    {BO_VERDICT_RETRY, BO_SIGNAL_KEY_BUSY, false, BO_CAUSE_NONE}};

/* A Retry-After in ns: mostly plausible, sometimes absurd. */
static int64_t retry_after(fuzz_in *in)
{
    uint8_t k = fuzz_u8(in);
    switch (k & 7) {
    case 0:
        return -1;
    case 1:
        return INT64_MAX;
    case 2:
        return (int64_t)fuzz_u64(in, 8); /* any bit pattern, negatives included */
    case 3:
        return (int64_t)fuzz_u64(in, 4) * 1000000000LL; /* seconds, up to 2^32 */
    default:
        return (int64_t)fuzz_u64(in, 3) * BO_NS_PER_MS;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in in = {data, size};
    bo_config cfg;
    bo_dest d;
    bo_call calls[NCALLS];
    int active[NCALLS] = {0};
    bo_rng rng;

    bo_config_defaults(&cfg);
    cfg.policy = (bo_policy_kind)(fuzz_u8(&in) % BO_POLICY_COUNT);
    cfg.base_ms = 1 + (int64_t)(fuzz_u64(&in, 3) % 3600000);
    cfg.cap_ms = cfg.base_ms + (int64_t)(fuzz_u64(&in, 4) % (86400000 - cfg.base_ms + 1));
    cfg.max_attempts = (unsigned)(fuzz_u8(&in) % 12);
    cfg.max_time_ms = (fuzz_u8(&in) & 1) ? (int64_t)(fuzz_u64(&in, 4) % 86400001) : 0;
    cfg.factor = 1.0 + (double)(fuzz_u8(&in) % 100);
    cfg.jitter = (double)(fuzz_u8(&in) % 101) / 100.0;
    cfg.window = 1 + fuzz_u8(&in) % 8;
    cfg.window_max = cfg.window + fuzz_u8(&in) % 8;
    cfg.beta = (double)(fuzz_u8(&in) % 100) / 100.0;
    cfg.aimd_mode = fuzz_bool(&in) ? BO_AIMD_TAHOE : BO_AIMD_RENO;
    cfg.pacing = fuzz_bool(&in);
    bo_rng_seed(&rng, fuzz_u64(&in, 8));

    int64_t now = (int64_t)(fuzz_u64(&in, 5)); /* up to ~18 minutes of uptime */
    int64_t cap = cfg.cap_ms * BO_NS_PER_MS;
    int64_t bound = cfg.policy == BO_POLICY_GAUSSIAN_JITTER
                        ? (int64_t)((double)cap * (1.0 + 9.0 * cfg.jitter))
                        : cap;
    bo_dest_init(&d, &cfg, now);

    for (int step = 0; step < 256 && in.n > 0; step++) {
        uint8_t op = fuzz_u8(&in);
        int i = op & (NCALLS - 1);
        now += (int64_t)fuzz_u64(&in, (op >> 2) & 3 ? 3 : 5); /* up to ~18 min a step */
        bo_call *c = &calls[i];
        if (!active[i]) {
            bo_call_begin(c, now);
            active[i] = 1;
        }
        if (c->phase != BO_PHASE_ATTEMPT) {
            int64_t until = -1;
            bo_admit r = bo_dest_admit(&d, &cfg, c, now, &until);
            if (r == BO_ADMIT_GIVE_UP) {
                if (c->attempts == 0)
                    abort(); /* the first attempt is never refused for time */
                active[i] = 0;
            } else if (r == BO_ADMIT_WAIT) {
                if (until <= now)
                    abort();
                if (c->attempts > 0 && cfg.max_time_ms > 0 &&
                    until > c->start_ns + cfg.max_time_ms * BO_NS_PER_MS)
                    abort();
            } else if (r != BO_ADMIT_GO || c->phase != BO_PHASE_ATTEMPT) {
                abort();
            }
        } else {
            bo_outcome o = outcomes[(op >> 4) & 7];
            int64_t ra = retry_after(&in);
            int64_t until = -1;
            bo_next nx = bo_dest_complete(&d, &cfg, c, o, ra, now, &rng, &until);
            if (c->phase == BO_PHASE_ATTEMPT)
                abort();
            if (cfg.max_attempts > 0 && c->attempts > cfg.max_attempts)
                abort();
            if (nx == BO_NEXT_RETRY) {
                int64_t wait = until - now;
                if (o.verdict != BO_VERDICT_RETRY || cfg.policy == BO_POLICY_NONE)
                    abort();
                if (wait < 0 || wait > bound)
                    abort();
                if (ra > cap || (ra >= 0 && wait < ra))
                    abort();
            } else if (nx == BO_NEXT_DONE) {
                active[i] = 0;
            } else {
                abort();
            }
        }
        unsigned inflight = 0;
        for (int k = 0; k < NCALLS; k++)
            inflight += active[k] && calls[k].phase == BO_PHASE_ATTEMPT;
        if (d.window.inflight != inflight)
            abort();
    }
    return 0;
}
