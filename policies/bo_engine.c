/*
 * bo_engine: admission and completion for one destination and one call.
 *
 * Policies, as the engine applies them:
 *   none          never retries (the shim is pass-through);
 *   fixed..thain  admission is immediate (in-flight only counted); the delay
 *                 before a retry comes from the call's bo_schedule;
 *   responsive    the destination's gap (bo_responsive) applies before every
 *                 attempt, first ones included, and again after each answer
 *                 (002's AutoSleeper sleeps after every request);
 *   aimd          admission needs a window slot and the window's pacing time;
 *                 with BACKOFF_PACING=1 (the default) a throttled call first
 *                 waits an RTO (throttle_rto_ns), and cuts that do not stop
 *                 the throttling hold the whole destination (dest_rto_ns);
 *                 BACKOFF_PACING=0 is 000's algorithm: no wait;
 *   aws-adaptive  AWS SDKs' adaptive mode: once the destination has
 *                 throttled, every attempt waits for a token of the
 *                 client rate limiter (bo_adaptive); retries wait the
 *                 schedule's delay (full jitter, as the SDKs' standard mode).
 * A 409 to a request that carries an Idempotency-Key (BO_SIGNAL_KEY_BUSY: the
 * server is still processing that key) tells nothing about capacity, but its
 * retry must give the key's first request time: under aimd and responsive it
 * waits the throttle's RTO (doubling with the call's throttles and busy keys),
 * under the delay policies their schedule.
 * For every policy: Retry-After is the least wait of the call that got it
 * (for responsive it holds the whole destination back; for aimd it does
 * not: a constant Retry-After from a concurrency cap would stall every call,
 * and the window learns a metered rate from evidence instead); one past the
 * cap or the call's deadline is not waited for: the answer stands.  A wait
 * the program did not ask for is bounded so (bo_call_wait_limit): a quota's
 * reset past it holds nothing back, an instant of the destination's state
 * past the cap neither.  max_attempts and max_time_ms bound the
 * call.  After a loss signal (no answer) the aimd window is at its floor of
 * one and the destination is probed: the next admission waits
 * base * 2^(k-1) after the k-th failed probe in a row, capped at
 * min(cap, 1 s), so that one probe at a time keeps the load of a dead
 * server near zero while the first answer after an outage is at most about
 * a second late.
 */
#include "bo_engine.h"
#include "bo_time.h"

#include <float.h>
#include <string.h>

#define BO_PROBE_CAP_NS (1000 * BO_NS_PER_MS)

/* How long a caller blocked on a full window waits before asking again if no completion wakes it.
 */
#define BO_SLOT_RECHECK_NS (1000 * BO_NS_PER_MS)

void bo_dest_init(bo_dest *d, const bo_config *cfg, int64_t now_ns)
{
    memset(d, 0, sizeof(*d));
    bo_window_init(&d->window, cfg);
    bo_responsive_init(&d->pacing);
    bo_quota_init(&d->quota);
    bo_budget_init(&d->budget, now_ns);
    bo_adaptive_init(&d->adaptive, now_ns);
    d->next_send_ns = now_ns;
}

static int64_t cap_ns(const bo_config *cfg);

/* x in [lo, hi]; false for NaN. */
static bool within(double x, double lo, double hi)
{
    return x >= lo && x <= hi;
}

bool bo_dest_sane(const bo_dest *d, const bo_config *cfg, int64_t now_ns)
{
    int64_t cap = cap_ns(cfg);
    const bo_adaptive *a = &d->adaptive;

    if (!bo_window_sane(&d->window, now_ns, cfg->policy == BO_POLICY_AIMD))
        return false;
    if (cap > 0 && (d->next_send_ns > now_ns + cap || d->pacing.interval_ns > cap))
        return false;
    return d->pacing.interval_ns >= 0 && within(a->tokens, 0, DBL_MAX) &&
           within(a->max_tokens, 0, DBL_MAX) && within(a->fill_rate, 0, DBL_MAX) &&
           (!a->enabled || a->fill_rate > 0);
}

void bo_call_begin(bo_call *c, int64_t now_ns)
{
    memset(c, 0, sizeof(*c));
    c->phase = BO_PHASE_ADMIT;
    c->until_ns = now_ns;
    c->start_ns = now_ns;
    c->deadline_ns = INT64_MAX;
    bo_schedule_init(&c->schedule);
}

bool bo_call_due(bo_call *c, int64_t now_ns)
{
    if (c->phase != BO_PHASE_WAIT || now_ns < c->until_ns)
        return false;
    c->phase = BO_PHASE_ADMIT;
    return true;
}

void bo_call_give_up(bo_call *c)
{
    c->phase = BO_PHASE_DONE;
}

bool bo_call_failed_retryable(const bo_call *c)
{
    return c->have_result && c->retryable;
}

void bo_call_set_deadline(bo_call *c, int64_t deadline_ns)
{
    c->deadline_ns = deadline_ns;
}

void bo_call_continue(bo_call *c, const bo_lineage *l)
{
    c->inherited = l->attempts;
    c->throttles = l->throttles;
    if (l->start_ns < c->start_ns)
        c->start_ns = l->start_ns;
}

void bo_call_lineage(const bo_call *c, uint64_t key, bo_lineage *out)
{
    out->key = key;
    out->start_ns = c->start_ns;
    out->failed_ns = 0;
    out->attempts = c->inherited + c->attempts;
    out->throttles = c->throttles;
    out->idem[0] = '\0'; /* the shim's to fill (bo_idem.h) */
    out->idem_body = 0;
}

static int64_t cap_ns(const bo_config *cfg)
{
    return cfg->cap_ms > 0 ? cfg->cap_ms * BO_NS_PER_MS : 0;
}

/* Deadline of the call: max_time_ms or the program's own, the sooner
 * (INT64_MAX when neither is set). */
static int64_t call_deadline(const bo_config *cfg, const bo_call *c)
{
    int64_t d = INT64_MAX;
    if (cfg->max_time_ms > 0)
        d = c->start_ns + cfg->max_time_ms * BO_NS_PER_MS;
    return c->deadline_ns < d ? c->deadline_ns : d;
}

int64_t bo_call_remaining_ns(const bo_config *cfg, const bo_call *c, int64_t now_ns)
{
    int64_t d = call_deadline(cfg, c);
    if (d == INT64_MAX)
        return INT64_MAX;
    return d > now_ns ? d - now_ns : 0;
}

int64_t bo_call_wait_limit(const bo_config *cfg, const bo_call *c, int64_t from_ns)
{
    int64_t limit = call_deadline(cfg, c);
    int64_t cap = cap_ns(cfg);
    if (cap > 0 && from_ns < limit - cap)
        limit = from_ns + cap;
    return limit;
}

/*
 * An instant of the destination's state (its hold, the adaptive token; the
 * window's pace is bounded so by bo_window_bound_pace) that delays an
 * admission from `wait` to t, unless t lies past cap_at: no hold this
 * engine makes lasts that long, but for a degenerate pace, and state other
 * processes wrote (the host-wide file) may say anything; neither is waited
 * for.
 */
static int64_t held_until(int64_t wait, int64_t t, int64_t cap_at)
{
    return t > wait && t <= cap_at ? t : wait;
}

static bool is_delay_policy(bo_policy_kind p)
{
    return p != BO_POLICY_NONE && p != BO_POLICY_RESPONSIVE && p != BO_POLICY_AIMD;
}

/* An admitted attempt starts: counted in flight, in the quota and the budget. */
static inline __attribute__((always_inline)) void start_attempt(bo_dest *d, const bo_config *cfg,
                                                            bo_call *c, int64_t now_ns)
{
    bo_window_on_send(&d->window, now_ns, &c->ticket);
    if (cfg->ratelimit_headers)
        bo_quota_on_send(&d->quota, now_ns);
    c->quota_noted = false;
    c->phase = BO_PHASE_ATTEMPT;
    bo_budget_on_attempt(&d->budget, c->attempts == 0 && c->inherited == 0, now_ns);
    c->attempts++;
    c->attempt_ns = now_ns;
    if (cfg->policy == BO_POLICY_RESPONSIVE)
        d->next_send_ns = now_ns + bo_responsive_interval_ns(&d->pacing);
    if (cfg->policy == BO_POLICY_AWS_ADAPTIVE)
        bo_adaptive_on_send(&d->adaptive, now_ns);
}

static int64_t probe_gap_ns(const bo_config *cfg, unsigned k);

/*
 * A retry otherwise free to go, that draws on the destination's retry
 * budget: now when the budget allows it, or as the destination's one probe
 * (nothing in flight, the last probe's gap passed: spaced as the window's
 * probes, up to a second); otherwise the time the budget will allow one,
 * or the next probe's when nothing is in flight (a completion, which may
 * add credit or empty the destination, wakes the caller sooner).
 */
static int64_t budget_wait(bo_dest *d, const bo_config *cfg, bo_call *c, int64_t now_ns)
{
    if (bo_budget_allows_retry(&d->budget, cfg->retry_budget, now_ns))
        return now_ns;
    bool idle = d->window.inflight == 0;
    if (idle && bo_budget_may_probe(&d->budget, now_ns)) {
        bo_budget_on_probe(&d->budget, now_ns, probe_gap_ns(cfg, d->budget.probes + 1));
        return now_ns;
    }
    int64_t t = bo_budget_next_retry_ns(&d->budget, cfg->retry_budget, now_ns);
    if (idle && d->budget.probe_ns < t)
        t = d->budget.probe_ns;
    c->budget_waiting = true;
    c->budget_delayed = true;
    return t > now_ns ? t : now_ns + 1;
}

/*
 * Admission promises: the first attempt of a call is never refused for
 * time; a retry past max_time_ms gets BO_ADMIT_GIVE_UP; a WAIT's deadline
 * never lies beyond the call's own deadline, so the caller gets to give up
 * on time.  A retry asked before its own time (phase WAIT) waits for it; a
 * call that is DONE gets no attempt.
 */
bo_admit bo_dest_admit(bo_dest *d, const bo_config *cfg, bo_call *c,
                       int64_t now_ns, int64_t *until_ns)
{
    int64_t deadline = call_deadline(cfg, c);
    int64_t wait = now_ns;
    int64_t cap = cap_ns(cfg);
    int64_t cap_at = cap > 0 && now_ns < INT64_MAX - cap ? now_ns + cap : INT64_MAX;
    /* max_time_ms never refuses a first attempt; the program's deadline does */
    bool bounded = c->attempts > 0 || c->deadline_ns != INT64_MAX;
    int64_t quota_hold = 0;

    if (c->phase == BO_PHASE_DONE)
        return BO_ADMIT_GIVE_UP;
    if (c->phase == BO_PHASE_WAIT && now_ns < c->until_ns) {
        *until_ns = c->until_ns; /* the retry's own time has not come */
        return BO_ADMIT_WAIT;
    }
    if ((c->attempts > 0 && now_ns >= deadline) || now_ns >= c->deadline_ns) {
        c->phase = BO_PHASE_DONE;
        return BO_ADMIT_GIVE_UP;
    }
    if (cfg->policy == BO_POLICY_RESPONSIVE || cfg->policy == BO_POLICY_AIMD)
        wait = held_until(wait, d->next_send_ns, cap_at);
    if (cfg->policy == BO_POLICY_AIMD) {
        bo_window_bound_pace(&d->window, cap_at, now_ns); /* bo_window_can_send reads it too */
        int64_t pace = bo_window_next_send_ns(&d->window, now_ns);
        if (pace > wait)
            wait = pace;
        if (wait <= now_ns && !bo_window_can_send(&d->window, now_ns)) {
            wait = now_ns + BO_SLOT_RECHECK_NS; /* a completion wakes us sooner */
            int64_t aged = bo_window_next_room_ns(&d->window, now_ns);
            if (aged > now_ns && aged < wait)
                wait = aged; /* ...or a held attempt that stops counting */
        }
        if (wait > now_ns && d->next_send_ns <= now_ns)
            bo_window_on_blocked(&d->window, now_ns);
    }
    if (cfg->policy == BO_POLICY_AWS_ADAPTIVE)
        wait = held_until(wait, bo_adaptive_next_send_ns(&d->adaptive, now_ns), cap_at);
    if (cfg->ratelimit_headers && cfg->policy != BO_POLICY_NONE) { /* the server's quota */
        int64_t quota =
            bo_quota_next_send(&d->quota, now_ns, bo_call_wait_limit(cfg, c, now_ns));
        if (quota == BO_QUOTA_BEYOND && c->attempts > 0) {
            c->phase = BO_PHASE_DONE; /* a retry the quota holds past the bounds: not worth it */
            return BO_ADMIT_GIVE_UP;
        }
        if (quota != BO_QUOTA_BEYOND && quota > wait)
            wait = quota; /* else a prediction past the bounds: the program's attempt goes */
        if (quota != BO_QUOTA_BEYOND && quota > now_ns)
            quota_hold = quota;
    }
    c->quota_hold_ns = quota_hold;
    c->budget_waiting = false;
    if (wait <= now_ns && c->attempts > 0 && c->budget_retry)
        wait = budget_wait(d, cfg, c, now_ns);
    if (wait > now_ns) {
        if (bounded && wait > deadline)
            wait = c->attempts > 0 ? deadline : c->deadline_ns;
        *until_ns = wait;
        c->phase = BO_PHASE_ADMIT;
        c->until_ns = wait;
        return BO_ADMIT_WAIT;
    }
    start_attempt(d, cfg, c, now_ns);
    *until_ns = now_ns;
    return BO_ADMIT_GO;
}

bool bo_dest_admit_now(bo_dest *d, const bo_config *cfg, bo_call *c, int64_t now_ns)
{
    if (c->phase != BO_PHASE_ADMIT || c->attempts > 0)
        return false;
    start_attempt(d, cfg, c, now_ns);
    return true;
}

int64_t bo_dest_pace_ns(bo_dest *d, const bo_config *cfg, int64_t now_ns)
{
    int64_t cap = cap_ns(cfg);
    int64_t cap_at = cap > 0 && now_ns < INT64_MAX - cap ? now_ns + cap : INT64_MAX;
    int64_t wait = now_ns;

    if (cfg->policy == BO_POLICY_RESPONSIVE || cfg->policy == BO_POLICY_AIMD)
        wait = held_until(wait, d->next_send_ns, cap_at);
    if (cfg->policy == BO_POLICY_AIMD) {
        bo_window_bound_pace(&d->window, cap_at, now_ns);
        int64_t pace = bo_window_next_send_ns(&d->window, now_ns);
        if (pace > wait)
            wait = pace;
    }
    if (cfg->policy == BO_POLICY_AWS_ADAPTIVE)
        wait = held_until(wait, bo_adaptive_next_send_ns(&d->adaptive, now_ns), cap_at);
    return wait;
}

/* Push the destination's next admission to at least t. */
static void hold_dest(bo_dest *d, int64_t t)
{
    if (t > d->next_send_ns)
        d->next_send_ns = t;
}

/* Probe spacing after the k-th failed probe in a row (k >= 1). */
static int64_t probe_gap_ns(const bo_config *cfg, unsigned k)
{
    int64_t cap = cap_ns(cfg);
    int64_t gap = cfg->base_ms * BO_NS_PER_MS;

    if (cap <= 0 || cap > BO_PROBE_CAP_NS)
        cap = BO_PROBE_CAP_NS;
    for (unsigned i = 1; i < k && gap < cap; i++)
        gap *= 2;
    return gap < cap ? gap : cap;
}

/*
 * aimd: cuts of the window in a row (no success in between), or a throttle
 * before any success, hold the whole destination for an RTO that doubles
 * with each such cut: the larger of BACKOFF_BASE_MS and the smallest round
 * trip, capped by min(BACKOFF_CAP_MS, 1 s) (TCP's retransmission timer;
 * capped as probes are, so the first answer after a dip is at most about a
 * second late).
 */
static int64_t dest_rto_ns(const bo_dest *d, const bo_config *cfg)
{
    int64_t cap = cap_ns(cfg);
    int64_t rto = cfg->base_ms * BO_NS_PER_MS;
    unsigned k = d->window.cuts_in_row;

    if (d->window.min_rtt_ns > rto)
        rto = d->window.min_rtt_ns;
    if (rto <= 0)
        rto = BO_NS_PER_MS;
    if (cap <= 0 || cap > BO_PROBE_CAP_NS)
        cap = BO_PROBE_CAP_NS; /* as probes: back within about a second of the server */
    for (unsigned i = 3; i < k && rto < cap; i++)
        rto *= 2;
    return rto < cap ? rto : cap;
}

/*
 * aimd: a throttled call waits an RTO before it seeks admission again (TCP:
 * a loss always waits at least an RTO, doubled at each loss in a row): the
 * larger of BACKOFF_BASE_MS and the smallest round trip seen, times 2^(k-1)
 * at the call's k-th throttle, times a jitter factor in [1, 1.5) so that
 * processes that were throttled together do not come back together, and
 * never more than BACKOFF_CAP_MS (the bound every policy but gaussian-jitter
 * keeps; the jitter is applied before that bound, not after it).  Without it a window of one still
 * loops at loopback speed against an instant 429 and spends its attempts in milliseconds.
 * The round trip is the refusal's own when it is shorter than the smallest
 * success's: a success's holds the service a refusal never got (article
 * 000's server: 600 ms against 150 ms), and the refused calls sat out four
 * refusals' worth while the window, cut to what the server takes, already
 * kept them from overloading it (500 slots: 5.60 s -> 4.09 s, no other
 * burst size, article or matrix cell slower).
 */
static int64_t throttle_rto_ns(const bo_dest *d, const bo_config *cfg, bo_call *c, bo_rng *rng,
                               int64_t now_ns)
{
    int64_t cap = cap_ns(cfg);
    int64_t rto = cfg->base_ms * BO_NS_PER_MS;
    int64_t rtt = d->window.min_rtt_ns;
    int64_t own = now_ns - c->attempt_ns;

    if (own > 0 && own < rtt)
        rtt = own;
    if (rtt > rto)
        rto = rtt;
    if (rto <= 0)
        rto = BO_NS_PER_MS;
    for (unsigned i = 1; i < c->throttles && (cap <= 0 || rto < cap); i++)
        rto *= 2;
    if (cap > 0 && rto > cap)
        rto = cap;
    double wait = (double)rto * (1.0 + 0.5 * bo_rng_uniform(rng));
    if (cap > 0 && wait > (double)cap)
        return cap;
    return (int64_t)wait;
}

/* A signal about the destination's capacity (a busy Idempotency-Key is not one). */
static bool capacity_signal(bo_signal s)
{
    return s == BO_SIGNAL_THROTTLE || s == BO_SIGNAL_LOSS;
}

/*
 * Completion promises: the window and counters see every attempt exactly
 * once; DONE for success, a final verdict, policy none, when the bounds
 * (max_attempts, max_time_ms, the program's deadline) leave no room for
 * another attempt, or when the server asks for a wait past them (a
 * Retry-After past the cap or the deadline, a quota whose reset lies past
 * bo_call_wait_limit: its answer stands, as curl hands a Retry-After past
 * --retry-max-time over); otherwise RETRY no sooner than *until_ns, which is
 * at least the Retry-After.
 */
static bo_next complete(bo_dest *d, const bo_config *cfg, bo_call *c, bo_outcome outcome,
                        int64_t retry_after_ns, int64_t now_ns, bo_rng *rng, int64_t *until_ns)
{
    bool aimd = cfg->policy == BO_POLICY_AIMD;
    int64_t cap = cap_ns(cfg);
    int64_t hint = -1;
    bool past_cap = cap > 0 && retry_after_ns > cap; /* the server said "not before then" */
    int64_t delay = 0;

    *until_ns = now_ns;
    if (c->phase == BO_PHASE_ATTEMPT) {
        if (outcome.verdict == BO_VERDICT_SUCCESS) {
            bo_window_on_success(&d->window, &c->ticket, now_ns);
        } else if (capacity_signal(outcome.signal)) {
            bool cut = bo_window_on_signal(&d->window, &c->ticket, outcome.signal, now_ns);
            if (outcome.signal == BO_SIGNAL_LOSS) {
                if (cut)
                    d->probe_failures++;
            } else if (cut && aimd && cfg->pacing &&
                       (d->window.cuts_in_row >= 3 || d->window.delivered == 0)) {
                hold_dest(d, now_ns + dest_rto_ns(d, cfg));
            }
        } else {
            bo_window_on_release(&d->window, &c->ticket);
        }
    }
    if (outcome.verdict == BO_VERDICT_SUCCESS) {
        bo_budget_on_success(&d->budget, now_ns);
        d->probe_failures = 0;
        if (cfg->policy == BO_POLICY_RESPONSIVE)
            bo_responsive_on_success(&d->pacing, cfg, rng);
    } else {
        if (outcome.signal == BO_SIGNAL_THROTTLE || outcome.signal == BO_SIGNAL_KEY_BUSY) {
            c->throttles++; /* a busy key's waits double as a throttle's do */
            d->probe_failures = 0; /* an answer: the server is alive */
        }
        if (cfg->policy == BO_POLICY_RESPONSIVE && capacity_signal(outcome.signal))
            bo_responsive_on_failure_sent(&d->pacing, cfg, rng, c->ticket.sent_ns, now_ns);
    }
    if (cfg->policy == BO_POLICY_RESPONSIVE)
        hold_dest(d, now_ns + bo_responsive_interval_ns(&d->pacing));
    if (cfg->policy == BO_POLICY_AWS_ADAPTIVE && c->phase == BO_PHASE_ATTEMPT)
        bo_adaptive_on_answer(&d->adaptive, outcome.signal == BO_SIGNAL_THROTTLE, now_ns);
    if (retry_after_ns >= 0)
        hint = past_cap ? cap : retry_after_ns;
    if (outcome.signal == BO_SIGNAL_THROTTLE)
        bo_window_on_hint(&d->window, hint);
    if (outcome.rate_limited && cfg->ratelimit_headers && cfg->policy != BO_POLICY_NONE &&
        c->phase == BO_PHASE_ATTEMPT && !c->quota_noted)
        bo_quota_note_throttle(&d->quota, c->attempt_ns, now_ns); /* one without quota headers */
    if (hint >= 0 && !past_cap && cfg->policy == BO_POLICY_RESPONSIVE)
        hold_dest(d, now_ns + hint); /* one past the cap is not waited for, by anyone */
    if (aimd && outcome.signal == BO_SIGNAL_LOSS && d->probe_failures > 0)
        hold_dest(d, now_ns + probe_gap_ns(cfg, d->probe_failures));

    if (outcome.verdict != BO_VERDICT_RETRY || cfg->policy == BO_POLICY_NONE)
        return BO_NEXT_DONE;
    if (cfg->max_attempts > 0 && c->inherited + c->attempts >= cfg->max_attempts)
        return BO_NEXT_DONE; /* the logical request's attempts, the program's included */
    /* a refusal past the cap, or a quota that resets past the bounds (no
     * retry could be admitted before): the server's answer stands */
    if (past_cap || (cfg->ratelimit_headers && cfg->policy != BO_POLICY_NONE &&
                     bo_quota_next_send(&d->quota, now_ns, bo_call_wait_limit(cfg, c, now_ns)) ==
                         BO_QUOTA_BEYOND)) {
        c->past_bounds = true;
        return BO_NEXT_DONE;
    }
    /* the destination's retry budget says when the retry goes (bo_dest_admit), never
     * whether, while other work on the destination will tell when it is back; a 429
     * draws none.  A lone call (no other logical request began on it within the
     * budget's window, none succeeded there, no retry there but its own, nothing
     * else in flight: a server down for this call alone, bo_budget_lone) that the
     * budget does not fund has nothing to wait for but its own retries: its
     * failure is handed back, as a
     * program that retries on its own would have it (its next try continues this
     * logical request: the layers never multiply, nor wait for each other). */
    c->budget_retry = !outcome.rate_limited;
    if (c->budget_retry && d->window.inflight == 0 &&
        bo_budget_lone(&d->budget, c->inherited + c->attempts - 1, now_ns) &&
        !bo_budget_allows_retry(&d->budget, cfg->retry_budget, now_ns)) {
        c->budget_delayed = c->budget_ended = true;
        return BO_NEXT_DONE;
    }
    if (is_delay_policy(cfg->policy))
        delay = bo_schedule_next_ns(&c->schedule, cfg, rng);
    if (aimd && cfg->pacing && outcome.signal == BO_SIGNAL_THROTTLE)
        delay = throttle_rto_ns(d, cfg, c, rng, now_ns); /* BACKOFF_PACING=0: 000's exact */
    if (!is_delay_policy(cfg->policy) && outcome.signal == BO_SIGNAL_KEY_BUSY)
        delay = throttle_rto_ns(d, cfg, c, rng, now_ns); /* the key's first request's time */
    if (hint > delay)
        delay = hint;
    int64_t deadline = call_deadline(cfg, c);
    if (now_ns >= deadline || (deadline - now_ns) <= delay)
        return BO_NEXT_DONE;
    if (c->deadline_ns != INT64_MAX) {
        /* the program's deadline: the wait and another attempt must fit */
        int64_t room = now_ns - c->attempt_ns;
        if (room < BO_MIN_ATTEMPT_MS * BO_NS_PER_MS)
            room = BO_MIN_ATTEMPT_MS * BO_NS_PER_MS;
        if (c->deadline_ns - now_ns <= delay || c->deadline_ns - now_ns - delay < room)
            return BO_NEXT_DONE;
    }
    *until_ns = now_ns + delay;
    return BO_NEXT_RETRY;
}

bo_next bo_dest_complete(bo_dest *d, const bo_config *cfg, bo_call *c,
                         bo_outcome outcome, int64_t retry_after_ns,
                         int64_t now_ns, bo_rng *rng, int64_t *until_ns)
{
    bo_next n = complete(d, cfg, c, outcome, retry_after_ns, now_ns, rng, until_ns);

    c->have_result = true;
    c->retryable = outcome.verdict == BO_VERDICT_RETRY;
    c->phase = n == BO_NEXT_RETRY ? BO_PHASE_WAIT : BO_PHASE_DONE;
    c->until_ns = *until_ns;
    return n;
}

void bo_dest_note_quota(bo_dest *d, const bo_config *cfg, bo_call *c,
                        const bo_rl_quota *rl, bo_outcome outcome, int64_t retry_after_ns,
                        int64_t now_ns, bo_rng *rng)
{
    if (!cfg->ratelimit_headers || cfg->policy == BO_POLICY_NONE)
        return;
    if (outcome.rate_limited && !c->quota_noted)
        bo_quota_note_throttle(&d->quota, c->attempt_ns, now_ns);
    c->quota_noted = true;
    if (retry_after_ns >= 0)
        return;
    unsigned others = d->window.inflight;
    if (c->phase == BO_PHASE_ATTEMPT && others > 0)
        others--;
    bo_quota_note_answer(&d->quota, rl, others, c->attempt_ns, !outcome.rate_limited, now_ns, rng);
}

void bo_dest_cancel(bo_dest *d, bo_call *c)
{
    if (c->phase != BO_PHASE_ATTEMPT)
        return;
    c->phase = BO_PHASE_ADMIT;
    bo_window_on_release(&d->window, &c->ticket);
    if (c->attempts > 0)
        c->attempts--;
}
