/*
 * complete.c: an admitted attempt's end (call.h): the engine's next step
 * and the counts under the destination's lock, the waiting calls woken,
 * then, with no lock held, the metrics file's due time compared, the fleet
 * told, the trace row and the verbose line; a call that ends without its
 * attempt (cancel) or without another one (abandoned).
 */
#include "call/call.h"

#include <inttypes.h>

#include "bo_time.h"
#include "call/report.h"
#include "core/core.h"
#include "dest/metrics_file.h"

/* A Retry-After HTTP-date and the answer's Date, read at wall_ns. */
typedef struct retry_date {
    bool have;
    int64_t at_s, date_s, wall_ns;
} retry_date;

/*
 * What the answer's own header lines say: the server's quota from its
 * rate-limit headers, unless it came from a cache (Age > 0, or 304 Not
 * Modified: a cache revalidated, the quota is the cache's); and, for a
 * failed answer, the wait its lines ask for, which wins over libcurl's
 * whole seconds (milliseconds, a date against the answer's Date) when they
 * carry one; a date is also kept as an instant, for the destination's
 * view of the server's clock (bo_rl_clock_wait, under its lock).  One
 * wall-clock read, only when there is something to read.
 */
static bool answer_lines(const bo_config *cfg, const bo_run_result *r, bo_rl_quota *quota,
                         int64_t *retry_after, retry_date *date)
{
    bool want_quota = cfg->ratelimit_headers && r->ratelimit != NULL && r->ratelimit->seen &&
                      r->status != 304;
    bool want_hint = r->ratelimit != NULL && r->outcome.verdict != BO_VERDICT_SUCCESS;
    bool have_quota = false;

    *retry_after = r->retry_after_ns;
    date->have = false;
    if (!want_quota && !want_hint)
        return false;
    int64_t wall_ns = bo_core_wall_ns();
    if (want_quota)
        have_quota = bo_rl_headers_quota(r->ratelimit, wall_ns, quota);
    if (want_hint) {
        /* a date against a Date is waited by the server's clock, under the
         * lock; any other hint is the span the lines give */
        date->wall_ns = wall_ns;
        date->have = bo_rl_headers_retry_date(r->ratelimit, wall_ns, &date->at_s, &date->date_s);
        int64_t hint = date->have ? -1 : bo_rl_headers_retry_after(r->ratelimit, wall_ns);
        if (hint >= 0)
            *retry_after = hint;
    }
    return have_quota;
}

bool bo_run_complete(bo_block *b, bo_call *call, const bo_run_result *r, uint64_t call_id,
                     const char *what, unsigned inflight, int64_t *until_ns)
{
    const bo_config *cfg = bo_core_config();
    bo_rng *rng = bo_core_rng();
    int64_t now = bo_core_now_ns(), until = now;
    double cwnd, ssthresh;
    bo_next next;
    bo_rl_quota quota;
    int64_t retry_after;
    retry_date date;
    bool have_quota = answer_lines(cfg, r, &quota, &retry_after, &date);

    bo_dest *d = bo_block_lock(b);
    if (date.have)
        retry_after = bo_rl_clock_wait(&d->quota.server_clock, date.at_s, date.date_s,
                                       date.wall_ns);
    if (have_quota)
        bo_dest_note_quota(d, cfg, call, &quota, r->outcome, retry_after, now, rng);
    next = bo_dest_complete(d, cfg, call, r->outcome, retry_after, now, rng, &until);
    bool retry = next == BO_NEXT_RETRY;
    bool success = r->outcome.verdict == BO_VERDICT_SUCCESS;
    bool gave_up = !retry && r->outcome.verdict == BO_VERDICT_RETRY;
    bool throttle = r->outcome.signal == BO_SIGNAL_THROTTLE;
    cwnd = d->window.cwnd;
    ssthresh = d->window.ssthresh;
    if (cwnd > b->cwnd_max)
        b->cwnd_max = cwnd;
    bo_tally t = {.what = BO_TALLY_ATTEMPT | (retry ? BO_TALLY_RETRY : BO_TALLY_END),
                  .cause = r->outcome.cause};
    if (throttle)
        t.what |= BO_TALLY_THROTTLE;
    if (!retry && !success)
        t.what |= BO_TALLY_FAILED | (gave_up ? BO_TALLY_GAVE_UP : 0);
    if (!retry && call->budget_delayed)
        t.what |= BO_TALLY_BUDGET;
    bo_block_completed(b, t, success, now);
    bo_block_unlock(b);
    bo_metrics_tick(now);

    *until_ns = retry ? until : now;
    bo_block_fleet_complete(b, call, &r->outcome);

    if (cfg->trace_path[0] != '\0') {
        bo_trace_row row = {b->key, call_id, call->inherited + call->attempts,
                            retry ? "retry" : success ? "success" : gave_up ? "gave_up" : "final",
                            r->status, r->code, retry ? until - now : 0, cwnd, ssthresh,
                            inflight};
        bo_report_trace(&row);
    }
    if (cfg->verbose && retry)
        bo_core_line("backoff: %s %s: attempt %u got status %d, code %d; retrying in %" PRId64
                     " ms (cwnd %.1f)",
                     what, b->key, call->attempts, r->status, r->code,
                     (int64_t)((until - now) / BO_NS_PER_MS), cwnd);
    else if (cfg->verbose && gave_up && call->past_bounds)
        bo_core_line("backoff: %s %s: attempt %u got status %d, code %d; not retried: the "
                     "server asks for a wait past BACKOFF_CAP_MS or the call's deadline",
                     what, b->key, call->attempts, r->status, r->code);
    else if (cfg->verbose && gave_up)
        bo_core_line("backoff: %s %s: attempt %u got status %d, code %d; giving up "
                     "(attempt or time budget spent)",
                     what, b->key, call->attempts, r->status, r->code);
    return retry;
}

/* A call that ends failed without a completion of its own. */
static const bo_tally ended_failed = {.what = BO_TALLY_END | BO_TALLY_FAILED,
                                      .cause = BO_CAUSE_NONE};

void bo_run_cancel(bo_block *b, bo_call *call)
{
    int64_t now = bo_core_now_ns();
    bo_block_fleet_cancel(b, call);
    bo_block_fleet_leave(b, call);
    bo_dest *d = bo_block_lock(b);
    bo_block_release(b, d, call);
    bo_tally t = ended_failed;
    if (call->budget_delayed)
        t.what |= BO_TALLY_BUDGET;
    bo_block_count(b, t, now);
    bo_block_unlock(b);
    bo_metrics_tick(now);
}

void bo_run_abandoned(bo_block *b)
{
    int64_t now = bo_core_now_ns();
    bo_block_lock(b);
    bo_block_count(b, ended_failed, now);
    bo_block_unlock(b);
    bo_metrics_tick(now);
}
