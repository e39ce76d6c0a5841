/*
 * fuzz_ratelimit: bo_ratelimit's header parser fed arbitrary header lines
 * (the input split at '\n'), then its pacing fed what the parser gave.
 * Promises checked (ASan and UBSan catch overruns and overflow on the way):
 *   - a quota, when given, has 0 <= remaining <= BO_RL_MAX_COUNT, remaining
 *     <= limit when the limit is known, 0 <= reset <= 31 days;
 *   - the wait the lines ask for (bo_rl_headers_retry_after) is -1 or above
 *     0, whatever the dates, durations and numbers; a date's wait against the
 *     server's clock (bo_rl_clock_wait) is at most that, at least a second
 *     less, and above 0;
 *   - the pacing's next admission lies between now and now + cap, or is
 *     BO_QUOTA_BEYOND (a reset past the cap, not waited for), whatever the
 *     headers said and however the clock moved.
 */
#include <stdlib.h>
#include <string.h>

#include "bo_ratelimit.h"
#include "fuzz_input.h"

#define S 1000000000LL

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in in = {data, size};
    int64_t wall = (int64_t)(fuzz_u64(&in, 5) % (4000000000ULL)) * S;
    int64_t cap = (int64_t)fuzz_u64(&in, 3) * 1000000LL; /* up to 4.6 hours, 0 = none */
    unsigned inflight = fuzz_u8(&in);
    bo_quota quota;
    bo_rng rng;
    bo_rl_headers h;
    int64_t now = 0;

    bo_quota_init(&quota);
    bo_rng_seed(&rng, 7);
    bo_rl_headers_reset(&h);
    const char *p = (const char *)in.p, *end = p + in.n;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl != NULL ? (size_t)(nl - p) + 1 : (size_t)(end - p);
        if (n > 1 && p[0] == '#') { /* "#": one response ends, the clock moves */
            bo_rl_quota q;
            int64_t hint = bo_rl_headers_retry_after(&h, wall + now);
            if (hint < -1 || hint == 0)
                abort();
            /* the date as an instant: against the server's clock, never
             * longer than the span, never a second shorter */
            int64_t at_s, date_s;
            if (bo_rl_headers_retry_date(&h, wall + now, &at_s, &date_s)) {
                int64_t wait = bo_rl_clock_wait(&quota.server_clock, at_s, date_s, wall + now);
                if (hint <= 0 || wait <= 0 || wait > hint ||
                    (hint != INT64_MAX && wait < hint - S))
                    abort();
            }
            (void)bo_rl_headers_exhausted(&h);
            /* P & 2: the answer was a throttle, judged before its headers (to a request
             * sent S x 23 ms before it, as below) */
            if (n > 4 && (p[4] & 2))
                bo_quota_note_throttle(&quota,
                                       now - (n > 3 ? (int64_t)(uint8_t)p[3] * 23 * 1000000LL : 0),
                                       now);
            if (bo_rl_headers_quota(&h, wall + now, &q)) {
                if (q.remaining < 0 || q.remaining > BO_RL_MAX_COUNT)
                    abort();
                if (q.limit >= 0 && q.remaining > q.limit)
                    abort();
                if (q.reset_ns < 0 || q.reset_ns > BO_RL_MAX_RESET_S * S)
                    abort();
                /* "#" T S P: the clock moves T x 37 ms after; the request
                 * was sent S x 23 ms before the answer (answers overtaking);
                 * P odd: the answer spent quota (even: a 429) */
                int64_t sent = now - (n > 3 ? (int64_t)(uint8_t)p[3] * 23 * 1000000LL : 0);
                bo_quota_note_answer(&quota, &q, inflight, sent, n > 4 && (p[4] & 1), now, &rng);
            }
            bo_rl_headers_reset(&h);
            now += (int64_t)(uint8_t)p[1] * 37 * 1000000LL;
            int64_t next = bo_quota_next_send(&quota, now, cap > 0 ? now + cap : INT64_MAX);
            if (next == BO_QUOTA_BEYOND && cap > 0)
                next = now; /* not waited for: the attempt goes now */
            if (next < now || (cap > 0 && next - now > cap))
                abort();
            if (n > 2 && (p[2] & 1))
                bo_quota_on_send(&quota, next > now ? next : now);
        } else {
            bo_rl_header_line(&h, p, n);
        }
        p += n;
    }
    return 0;
}
