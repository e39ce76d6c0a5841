/*
 * bo_window: 000's AIMD request window, and the improvements the simulator
 * proves (enabled by BACKOFF_PACING=1, the default).
 *
 * Article mode (BACKOFF_PACING=0) is 000's final algorithm exactly: cwnd
 * starts at BACKOFF_WINDOW, ssthresh at BACKOFF_WINDOW_MAX; on success
 * cwnd = max(cwnd, min(inflight + 1, cwnd + inc)) with inc 1 in slow start
 * and 1/cwnd in congestion avoidance (inflight counted before this response
 * left it, i.e. 000's size(flying)); on a throttle signal ssthresh =
 * cwnd * beta and cwnd = ssthresh (reno) or the initial window (tahoe);
 * signals of attempts sent before the last decrease are ignored (000's
 * "ignored" set, kept O(1) as an epoch stamped on each ticket).
 *
 * Improvements (each one is what made a simulator target reachable):
 *   - pacing: sends are spread over the round trip (min RTT / (cwnd x gain),
 *     gain 1.25 in slow start and 1 after it) instead of leaving in bursts,
 *     so the server sees the window as a steady rate;
 *   - gentler growth: x1.75 per round trip in slow start (less overshoot
 *     when the limit is found) and +1/8 per round trip in avoidance (the
 *     window sits just under the capacity and touches it rarely: every
 *     touch costs a cascade of rejections at a server like 000's);
 *   - sizing on a decrease: ssthresh = max(cwnd * beta, min(cwnd, 0.97 x
 *     delivery rate x min RTT)) (TCP BBR's bandwidth-delay product): the
 *     window falls to just under what the server was measured to sustain;
 *   - the in-flight + 1 bound stays, but a window that is pacing-limited
 *     (an admission waited while >= 75% of it was in flight) is not
 *     application-limited and may grow past it;
 *   - a metered rate, learnt from evidence: a throttle of an
 *     attempt sent with no more in flight than successes had before it
 *     means the server is not limiting concurrency; the window then also
 *     paces at beta x the successes of the last second (BBR's delivery
 *     rate, AWS adaptive retry's cut) and brackets upward between the
 *     fastest pace held without a throttle and the pace that drew the last
 *     one (see rate_step); a later cut paces below what got through since the
 *     previous cut (the last second still holds a bucket's initial burst),
 *     and a step that saw a throttle is never promoted to known good.  Retry-After is not read as a
 * rate: a constant `Retry-After: 1` from a concurrency cap says nothing about one;
 *   - a cut that did not stop the throttling (a second one with no success
 *     in between, or one before any success) clamps the window to what was
 *     in flight when the refused attempt left; after a cut the window
 *     probes 8x slower at or above the window that drew it (CUBIC's
 *     plateau);
 *   - room (see has_room): a destination that has not throttled is not held
 *     back by a window it has not needed: a first window of 4 x
 *     BACKOFF_WINDOW before any answer, then 3 x the concurrency a success
 *     proved, unpaced; the first throttle sets the window from what was
 *     measured (on_signal);
 *   - held requests (see held_bound_ns): attempts in flight are counted by
 *     send time, and those older than the destination's own round trips
 *     allow stop holding the window while it has not throttled.
 * A loss signal (no answer) sets cwnd to 1 in both modes; ssthresh drops
 * only on the first loss in a row, so a run of failed probes does not leave
 * the window stuck in congestion avoidance after the server comes back.
 */
#include "bo_window.h"
#include "bo_math.h"
#include "bo_time.h"

#include <float.h>
#include <math.h>
#include <string.h>


/* 000 publishes 0.5 and recommends 0.9 for stable limits; see bo_window_default_beta. */
#define BO_BETA_DEFAULT 0.9

/* Pacing gains: how far ahead of the measured rate the window may send. */
#define BO_GAIN_SLOW_START 1.25
#define BO_GAIN_AVOIDANCE 1.0


/* On a decrease the window keeps 97% of the measured bandwidth-delay product. */
#define BO_BDP_MARGIN 0.97

/* Fraction of the window in flight for a wait to mean "not app-limited". */
#define BO_BLOCKED_FULL 0.75

/*
 * Rate search, once evidence says the server meters a rate.  ok = the
 * highest pace held for a whole step without a throttle, bad = the pace
 * that drew the last one; each step without a throttle raises the pace
 * halfway to bad (or doubles it while no bad is known).  Once ok and bad
 * are within 5% the pace stays at ok; bad creeps up 0.2% a step so that a
 * limit that rose is found again.  A step lasts 5 sends at the pace, at
 * least 200 ms and at most BO_RATE_STEP_NS.
 */
#define BO_RATE_STEP_NS 1000000000LL
#define BO_RATE_CLOSE 1.05
#define BO_RATE_BAD_DRIFT 1.002

#define BO_RATE_STEP_SENDS 5.0
/* A step held only when its sends used at least this fraction of the pace. */
#define BO_RATE_STEP_USED 0.5
/* Steps in a row without a cut of the pace after which its upper bound is forgotten. */
#define BO_RATE_QUIET_STEPS 20
#define BO_RATE_STEP_MIN_NS 200000000LL
/*
 * Growth per step of a rate learnt from evidence while no upper bound is
 * known: +50% after the first clean step, then x2 a step: a pace just under
 * a bucket's rate is not pushed 2x past it at once (burst-1 bucket, 8
 * threads, Retry-After: 1: 1.18x -> 1.14x the optimum).  Not gentler: +25%
 * first left test_fault_server's flapping server (closed one second in
 * two) at a low pace for 50 s instead of 11 s.
 */
#define BO_RATE_GROWTH_FIRST 0.5
/* After a forgotten bound: the pace held 20 steps, so re-probe it just past (5%) first. */
#define BO_RATE_GROWTH_REPROBE 0.05
#define BO_RATE_GROWTH_MAX 1.0



/*
 * The policy's own beta: 0.9.  000 publishes 0.5 and recommends 0.9 when
 * the allowed rate is fairly stable, which is what a rate limit or a
 * concurrency limit usually is.  With BDP sizing the window does not fall
 * below the measured capacity anyway, so beta only matters when the
 * estimate is missing or stale, and a deep cut then costs a long climb back
 * at +1/8 per round trip (the simulator's burst scenario is fastest from
 * 0.9 up, with more rejections above it).  BACKOFF_BETA overrides it.
 */
double bo_window_default_beta(void)
{
    return BO_BETA_DEFAULT;
}

void bo_window_init(bo_window *w, const bo_config *cfg)
{
    double initial = cfg->window > 0 ? (double)cfg->window : 1.0;
    double max = cfg->window_max > 0 ? (double)cfg->window_max : initial;

    if (max < initial)
        max = initial;
    w->cwnd = initial;
    w->ssthresh = max;
    w->initial = initial;
    w->max = max;
    w->beta = cfg->beta > 0 && cfg->beta < 1 ? cfg->beta : bo_window_default_beta();
    w->mode = cfg->aimd_mode;
    w->inflight = 0;
    w->epoch = 0;
    w->delivered = 0;
    w->min_rtt_ns = 0;
    w->delivery_rate = 0;
    w->next_send_ns = 0;
    w->improved = cfg->pacing;
    w->rate_limit_hz = 0;
    w->rate_ok_hz = 0;
    w->rate_bad_hz = 0;
    w->rate_bad_margin = 0;
    w->rate_growth = 0;
    w->rate_step_ns = 0;
    w->blocked_ns = -1;
    memset(w->bins, 0, sizeof(w->bins));
    w->bin_ns = -1;
    w->first_send_ns = -1;
    w->ok_inflight = 0;
    w->cuts_in_row = 0;
    w->rate_cut_ns = -1;
    w->rate_cut_delivered = 0;
    w->rate_throttle_ns = -1;
    w->rate_quiet = 0;
    w->rate_step_sends = 0;
    w->burst_est = 0;
    w->run_ns = -1;
    w->run_delivered = 0;
    w->run_pace_hz = -1;
    w->ceiling_ns = 0;
    w->ceiling = 0;
    w->cut_ns = -1;
    w->probe_ns = -1;
    w->probe_every_ns = 0;
    w->probe_from = 0;
    w->hint_ns = 0;
    w->signal_ns = -1;
    w->srtt_ns = 0;
    memset(w->held_n, 0, sizeof(w->held_n));
    memset(w->held_bin, 0, sizeof(w->held_bin));
    w->held_young = 0;
    w->held_aged = 0;
    w->answered_sent_ns = INT64_MIN;
    w->room_cap = 0;
}

/*
 * Room (see has_room): forgotten throttles, the window's multiple of the
 * concurrency a success proved, the first window before any answer (as
 * multiples of BACKOFF_WINDOW: 4 x 20 = 80, one send every BO_FIRST_GAP_NS).
 * Why these: a first window of 80 wastes 3.3% of article 000's burst at 50
 * slots (target: 4%; 100 wasted 4.6%, 200 9.0%), while 200 threads never
 * throttled lose one round trip for the 120 calls past it (1.11x their own
 * pace; 1.05x takes a first window of 200).  Tripling a round trip, not
 * doubling, takes 000's burst at 1,000 slots from 1.23x to 1.00x of the
 * fastest policy, and its overshoot at 100 and 200 slots is what the cut of
 * on_signal (to what was measured) pays for.
 */
#define BO_ROOM_FORGET_NS (60 * BO_NS_PER_S)
#define BO_ROOM_GAIN 3.0
#define BO_BLIND_WINDOWS 4.0
/* After the first cut that ended room: the probe for the rest starts one round trip on. */
#define BO_ROOM_PROBE_RTTS 1
/*
 * A probe that found no room doubles the wait before the next one up to
 * this (the fleet's window keeps BO_PROBE_MAX_NS): 8 s left a concurrency cap
 * that doubled 3.4 s from 90% use, 2 s takes 2.2 s (capacity scenario).
 */
#define BO_WINDOW_PROBE_MAX_NS (2000 * BO_NS_PER_MS)

/* Held requests (see held_bound_ns, held_long_ns, held_may_age). */
#define BO_HELD_RTTS 8
#define BO_HELD_MIN_NS (250 * BO_NS_PER_MS)
#define BO_HELD_BLIND_NS (1000 * BO_NS_PER_MS)
#define BO_HELD_MAX_NS ((BO_HELD_BINS - 2) * BO_HELD_BIN_NS)
#define BO_HELD_LONG 4
#define BO_HELD_LONG_MIN_NS (1000 * BO_NS_PER_MS)
#define BO_HELD_QUIET_NS (2000 * BO_NS_PER_MS)

/*
 * Room: a destination that has not throttled (no throttle nor loss signal,
 * or none for BO_ROOM_FORGET_NS) is not held back by a window it has not
 * needed.  Its window opens by evidence: each success of an attempt sent
 * with n others in flight proves the server took n + 1 at once, and the
 * window may hold BO_ROOM_GAIN times that.
 */
static bool has_room(const bo_window *w, int64_t now_ns)
{
    return w->improved && (w->signal_ns < 0 || now_ns - w->signal_ns >= BO_ROOM_FORGET_NS);
}

/* Before any answer, on a destination with room: nothing is known yet. */
static bool blind(const bo_window *w)
{
    return w->improved && w->delivered == 0 && w->signal_ns < 0 && w->min_rtt_ns == 0;
}

/*
 * Held requests are not throttling.  An attempt the server is still
 * working on (a long poll, a slow answer, a stream), or one the program
 * abandoned without the library noticing, stops holding the window once it
 * is older than a bound from the destination's own round trips:
 * BO_HELD_RTTS smoothed round trips, at least BO_HELD_MIN_NS (before any
 * answer BO_HELD_BLIND_NS), at most what the bins span.  Only while the
 * destination has not throttled for BO_HELD_QUIET_NS and two bounds: once
 * it throttles, everything in flight counts again.
 */
static int64_t held_bound_ns(const bo_window *w)
{
    int64_t b = w->srtt_ns > 0 ? BO_HELD_RTTS * w->srtt_ns : BO_HELD_BLIND_NS;
    if (b < BO_HELD_MIN_NS)
        b = BO_HELD_MIN_NS;
    return b < BO_HELD_MAX_NS ? b : BO_HELD_MAX_NS;
}

static bool held_may_age(const bo_window *w, int64_t now_ns)
{
    if (!w->improved)
        return false;
    if (w->signal_ns < 0)
        return true;
    int64_t quiet = 2 * held_bound_ns(w);
    if (quiet < BO_HELD_QUIET_NS)
        quiet = BO_HELD_QUIET_NS;
    return now_ns - w->signal_ns >= quiet;
}

/* The bin of send time t, and its place in the ring (times before the clock's origin too). */
static int64_t held_bin_of(int64_t t)
{
    if (__builtin_expect(t >= 0, 1))
        return t / BO_HELD_BIN_NS;
    int64_t b = t / BO_HELD_BIN_NS;
    return t % BO_HELD_BIN_NS != 0 ? b - 1 : b;
}

_Static_assert((BO_HELD_BINS & (BO_HELD_BINS - 1)) == 0, "a power of two: a slot is a mask");
static int held_slot(int64_t bin)
{
    return (int)((uint64_t)bin & (BO_HELD_BINS - 1)); /* bin mod BO_HELD_BINS, negative too */
}

/*
 * The bound alone would also age the attempts of a server that stopped
 * answering altogether (SIGSTOP, a hung backend), and let a new window into
 * it every bound.  So an attempt ages at the bound only once an attempt sent
 * after it was answered (the server is alive and serving newer requests:
 * the old one is held, not stuck); otherwise at BO_HELD_LONG bounds, at least
 * BO_HELD_LONG_MIN_NS (a window full of abandoned attempts, with nothing
 * else to send, must free itself all the same).
 */
static int64_t held_long_ns(const bo_window *w)
{
    int64_t b = BO_HELD_LONG * held_bound_ns(w);
    return b > BO_HELD_LONG_MIN_NS ? b : BO_HELD_LONG_MIN_NS;
}

/* Bins before this one are old enough to stop counting. */
static int64_t held_upto(const bo_window *w, int64_t now_ns)
{
    int64_t at = now_ns - held_bound_ns(w);
    if (w->answered_sent_ns < at)
        at = w->answered_sent_ns;
    int64_t upto = held_bin_of(at);
    int64_t late = held_bin_of(now_ns - held_long_ns(w));
    return late > upto ? late : upto;
}

/* Bins older than the bound stop counting, each once. */
static void held_age(bo_window *w, int64_t now_ns)
{
    int64_t upto = held_upto(w, now_ns);
    if (upto <= w->held_aged)
        return;
    if (upto - w->held_aged > BO_HELD_BINS)
        w->held_aged = upto - BO_HELD_BINS; /* older ones were moved when their slot was reused */
    for (int64_t b = w->held_aged; b < upto; b++) {
        int i = held_slot(b);
        if (w->held_bin[i] == b) {
            w->held_young -= w->held_n[i];
            w->held_n[i] = 0;
        }
    }
    w->held_aged = upto;
}

/* An attempt leaves: counted in its send time's bin. */
static void held_on_send(bo_window *w, int64_t now_ns)
{
    int64_t b = held_bin_of(now_ns);
    int i = held_slot(b);

    if (w->inflight == 1 && w->held_young != 0) {
        /* nothing else in flight: whatever the bins still say is stale (a lease the shim
         * gave back for a dead process; the bins sum to held_young) */
        memset(w->held_n, 0, sizeof(w->held_n));
        w->held_young = 0;
    }
    if (w->held_bin[i] != b) {
        w->held_young -= w->held_n[i]; /* a bin the ring has gone round: its attempts are old */
        w->held_bin[i] = b;
        w->held_n[i] = 0;
    }
    w->held_n[i]++;
    w->held_young++;
    if (w->held_aged > b)
        w->held_aged = b; /* the clock went back (another process's): age from here */
}

/* An attempt sent at sent_ns ended. */
static void held_on_end(bo_window *w, int64_t sent_ns)
{
    int64_t b = held_bin_of(sent_ns);
    int i = held_slot(b);

    if (w->held_bin[i] == b && w->held_n[i] > 0) {
        w->held_n[i]--;
        w->held_young--;
    }
}

unsigned bo_window_counted(bo_window *w, int64_t now_ns)
{
    if (w->inflight == 0 || !held_may_age(w, now_ns))
        return w->inflight;
    held_age(w, now_ns);
    /* what the bins do not hold is old: aged, or counted in flight by the shim without a
     * send here (leases summed anew after a crash or a fresh start) */
    return w->held_young < w->inflight ? w->held_young : w->inflight;
}

int64_t bo_window_next_room_ns(const bo_window *w, int64_t now_ns)
{
    if (!w->improved || w->inflight == 0)
        return INT64_MAX;
    int64_t bound = held_bound_ns(w);
    int64_t quiet_end = now_ns;
    if (w->signal_ns >= 0) {
        int64_t quiet = 2 * bound > BO_HELD_QUIET_NS ? 2 * bound : BO_HELD_QUIET_NS;
        if (w->signal_ns + quiet > quiet_end)
            quiet_end = w->signal_ns + quiet;
    }
    /* the oldest bin still counted: it ages when its end is `bound` old, if an attempt
     * sent after it was answered, else when it is the long bound old */
    int64_t oldest = INT64_MAX;
    for (int i = 0; i < BO_HELD_BINS; i++)
        if (w->held_n[i] > 0 && w->held_bin[i] >= w->held_aged && w->held_bin[i] < oldest)
            oldest = w->held_bin[i];
    if (oldest == INT64_MAX)
        return w->held_young < w->inflight ? quiet_end : INT64_MAX;
    int64_t end = (oldest + 1) * BO_HELD_BIN_NS;
    int64_t at = end + (w->answered_sent_ns >= end ? bound : held_long_ns(w));
    return at > quiet_end ? at : quiet_end;
}

#define BO_BIN_NS 100000000LL
/* The first estimate spans at least this: a burst of successes says little about a rate. */
#define BO_RATE_SPAN_MIN_NS 100000000.0
#define BO_NBINS ((int)(sizeof(((bo_window *)0)->bins) / sizeof(((bo_window *)0)->bins[0])))

/* Move the bins forward to now_ns (bins older than a second drop out). */
static void bins_advance(bo_window *w, int64_t now_ns)
{
    if (w->bin_ns < 0) {
        w->bin_ns = now_ns;
        return;
    }
    int64_t steps = (now_ns - w->bin_ns) / BO_BIN_NS;
    if (steps <= 0)
        return;
    if (steps >= BO_NBINS) {
        memset(w->bins, 0, sizeof(w->bins));
    } else {
        memmove(w->bins + steps, w->bins, (size_t)(BO_NBINS - steps) * sizeof(w->bins[0]));
        memset(w->bins, 0, (size_t)steps * sizeof(w->bins[0]));
    }
    w->bin_ns += steps * BO_BIN_NS;
}

double bo_window_measured_rate(const bo_window *w, int64_t now_ns)
{
    if (w->first_send_ns < 0 || w->bin_ns < 0)
        return 0;
    int64_t steps = (now_ns - w->bin_ns) / BO_BIN_NS;
    uint64_t sum = 0;
    for (int i = 0; i + steps < BO_NBINS && i < BO_NBINS; i++)
        if (steps >= 0)
            sum += w->bins[i];
    double span = (double)(now_ns - w->first_send_ns);
    if (span > BO_NS_PER_S)
        span = BO_NS_PER_S;
    if (span < BO_RATE_SPAN_MIN_NS)
        span = BO_RATE_SPAN_MIN_NS;
    return (double)sum * BO_NS_PER_S / span;
}

/*
 * Before the first answer nothing is known: the first window leaves one
 * send every BO_FIRST_GAP_NS instead of all at once, so that a server that
 * refuses at once (a token bucket with a burst of one) is heard before
 * the whole window has gone (200 threads: 19 of the first 20 refused).
 */
#define BO_FIRST_GAP_NS 500000.0

/* Gap between two sends under pacing, in ns; 0 when pacing is off or unknown. */
static double pacing_gap_ns(const bo_window *w, int64_t now_ns)
{
    double gap = 0;

    if (!w->improved)
        return 0;
    if (w->min_rtt_ns > 0 && w->cwnd > 0) {
        double gain = w->cwnd < w->ssthresh ? BO_GAIN_SLOW_START : BO_GAIN_AVOIDANCE;
        /* room: the program's own bursts go as they come (pacing smeared 200 threads'
         * rounds by 100 ms each) */
        gap = has_room(w, now_ns) ? 0 : (double)w->min_rtt_ns / (w->cwnd * gain);
    } else if (w->delivered == 0) {
        gap = BO_FIRST_GAP_NS;
    }
    if (w->rate_limit_hz > 0) {
        double r = BO_NS_PER_S / w->rate_limit_hz;
        if (r > gap)
            gap = r;
    }
    return gap;
}

/*
 * The first window, before any answer on a destination with room:
 * BO_BLIND_WINDOWS x BACKOFF_WINDOW, one send every BO_FIRST_GAP_NS.  A
 * destination with room keeps it after the first answers too: what its
 * answers proved opens the window beyond it (on_success), but a program
 * that used it one request at a time (proving 1 in flight, 3 allowed) and
 * then sends a burst is not held back more than on a fresh destination
 * (25 keep-alive requests after 200 sequential ones waited for a slot up
 * to a second where a fresh destination let them all through); the sends
 * past the window itself go at the first window's pace (on_send).
 */
static double room_floor(const bo_window *w)
{
    double f = w->initial * BO_BLIND_WINDOWS;
    return f < w->max ? f : w->max; /* never past BACKOFF_WINDOW_MAX, the user's bound */
}

static double window_limit(const bo_window *w, int64_t now_ns)
{
    double limit = w->cwnd < 1 ? 1 : w->cwnd;
    if (limit < room_floor(w) && (blind(w) || has_room(w, now_ns)))
        limit = room_floor(w);
    return limit;
}

bool bo_window_can_send(bo_window *w, int64_t now_ns)
{
    /* A window below one still lets one attempt out (a probe). */
    double limit = window_limit(w, now_ns);

    if ((double)bo_window_counted(w, now_ns) + 1 > limit + 1e-9)
        return false;
    return !w->improved || now_ns >= w->next_send_ns;
}

int64_t bo_window_next_send_ns(const bo_window *w, int64_t now_ns)
{
    return w->improved && w->next_send_ns > now_ns ? w->next_send_ns : now_ns;
}

void bo_window_bound_pace(bo_window *w, int64_t limit_ns, int64_t now_ns)
{
    if (w->next_send_ns > limit_ns)
        w->next_send_ns = now_ns;
}

/*
 * A pacing gap as nanoseconds, from a double that a tiny or degenerate rate
 * can make huge (or NaN): at most a minute, so that the conversion and
 * now + gap never overflow (the engine does not wait past the cap:
 * bo_window_bound_pace).
 */
#define BO_PACE_GAP_MAX_NS (60 * BO_NS_PER_S)
static int64_t gap_ns(double gap)
{
    if (!(gap > 0))
        return 0;
    return gap < (double)BO_PACE_GAP_MAX_NS ? (int64_t)gap : BO_PACE_GAP_MAX_NS;
}

/* x in [lo, hi]; false for NaN. */
static bool within(double x, double lo, double hi)
{
    return x >= lo && x <= hi;
}

bool bo_window_sane(const bo_window *w, int64_t now_ns, bool paced)
{
    return within(w->cwnd, 1, DBL_MAX) && within(w->ssthresh, 1, DBL_MAX) &&
           within(w->initial, 1, DBL_MAX) && within(w->max, 1, DBL_MAX) && w->beta > 0 &&
           w->beta < 1 && within(w->rate_limit_hz, 0, DBL_MAX) &&
           (!paced || w->next_send_ns <= now_ns + BO_PACE_GAP_MAX_NS);
}

void bo_window_on_send(bo_window *w, int64_t now_ns, bo_ticket *t)
{
    w->inflight++;
    t->epoch = w->epoch;
    t->sent_ns = now_ns;
    t->delivered = w->delivered;
    t->inflight = w->inflight - 1;
    if (w->first_send_ns < 0)
        w->first_send_ns = now_ns;
    if (w->improved) {
        w->rate_step_sends++;
        if (w->run_ns < 0) {
            w->run_ns = now_ns;
            w->run_delivered = w->delivered;
            w->run_pace_hz = w->rate_limit_hz;
        }
        int64_t base = w->next_send_ns > now_ns ? w->next_send_ns : now_ns;
        double gap = pacing_gap_ns(w, now_ns);
        /* past the window, within the room's first window: that window's pace */
        if (gap < BO_FIRST_GAP_NS && (double)w->inflight > w->cwnd && has_room(w, now_ns))
            gap = BO_FIRST_GAP_NS;
        w->next_send_ns = base + gap_ns(gap);
        held_on_send(w, now_ns);
        /* the first window is the window: a cut before any answer starts from what went */
        if (blind(w) && (double)w->inflight > w->cwnd)
            w->cwnd = (double)w->inflight;
    }
}

/* In-flight -1, never below zero (a stray completion must not wrap it). */
static void release(bo_window *w, const bo_ticket *t)
{
    if (w->inflight > 0)
        w->inflight--;
    if (w->improved) {
        held_on_end(w, t->sent_ns);
        if (t->sent_ns > w->answered_sent_ns)
            w->answered_sent_ns = t->sent_ns;
    }
}

/* A probing step lasts long enough for a few sends at the pace, and at least 200 ms. */
static int64_t rate_step_ns(const bo_window *w)
{
    if (w->rate_limit_hz <= 0)
        return BO_RATE_STEP_NS;
    double step = BO_RATE_STEP_SENDS * BO_NS_PER_S / w->rate_limit_hz;
    if (step < BO_RATE_STEP_MIN_NS)
        step = BO_RATE_STEP_MIN_NS;
    if (step > BO_RATE_STEP_NS)
        step = BO_RATE_STEP_NS;
    return (int64_t)step;
}

/* A probing step of the rate search begins: its time and its sends count from now. */
static void step_begin(bo_window *w, int64_t now_ns)
{
    w->rate_step_ns = now_ns;
    w->rate_step_sends = 0;
}

/*
 * One probing step of the rate search (see rate_step_ns): the pace
 * held a whole step without a throttle, so it is known good; pick the next one.
 */
static void rate_step(bo_window *w, int64_t now_ns)
{
    double r = w->rate_limit_hz;

    /*
     * A throttle came during the step (one the one-cut-a-step rule let
     * pass): the pace is not known good.  Keep it; the next throttle cuts.
     */
    if (w->rate_throttle_ns >= w->rate_step_ns && w->rate_cut_ns < w->rate_throttle_ns) {
        step_begin(w, now_ns);
        return;
    }
    /*
     * A step proves a pace only if the sends used it: time spent waiting out
     * a Retry-After, or a program slower than the pace, says nothing about
     * it (a sequential client's pace of 27/s, "held" through the second its
     * refused call waited, was then trusted again and drew the next 429).
     */
    double used = (double)w->rate_step_sends * BO_NS_PER_S /
                  ((double)(now_ns - w->rate_step_ns) * w->rate_limit_hz);
    if (used < BO_RATE_STEP_USED) {
        step_begin(w, now_ns);
        return;
    }

    if (r > w->rate_ok_hz)
        w->rate_ok_hz = r;
    /*
     * A pace held this long without a throttle: forget the upper bound and
     * probe upward again (a limit that rose, or a dip that is over, must be
     * found in seconds, not at 0.2% a step).
     */
    if (w->rate_cut_ns < w->rate_step_ns) {
        if (++w->rate_quiet >= BO_RATE_QUIET_STEPS) {
            w->rate_bad_hz = 0;
            w->rate_quiet = 0;
            w->rate_growth = BO_RATE_GROWTH_REPROBE;
        }
    } else {
        w->rate_quiet = 0;
    }
    if (w->rate_bad_hz > 0 && w->rate_bad_hz <= w->rate_ok_hz)
        w->rate_bad_hz = 0; /* the limit rose past the old bound */
    if (w->rate_bad_hz <= 0) {
        r = w->rate_ok_hz * (1.0 + w->rate_growth);
        w->rate_growth =
            2 * w->rate_growth < BO_RATE_GROWTH_MAX ? 2 * w->rate_growth : BO_RATE_GROWTH_MAX;
    } else if (w->rate_bad_hz > w->rate_ok_hz * BO_RATE_CLOSE) {
        r = (w->rate_ok_hz + w->rate_bad_hz) / 2;
        /* a bucket's measured rate is known to a token over its span: stay that far under */
        double top = w->rate_bad_margin * w->rate_bad_hz;
        if (w->rate_bad_margin > 0 && r > top)
            r = top > w->rate_ok_hz ? top : w->rate_ok_hz;
    } else {
        r = w->rate_ok_hz;
        w->rate_bad_hz *= BO_RATE_BAD_DRIFT;
    }
    if (r != w->rate_limit_hz)
        w->run_pace_hz = -1; /* the run no longer went at one pace */
    w->rate_limit_hz = r;
    step_begin(w, now_ns);
}

/* A wait of at least `rtts` round trips. */
static int64_t at_least_rtts(const bo_window *w, int64_t ns, int rtts)
{
    return ns < rtts * w->min_rtt_ns ? rtts * w->min_rtt_ns : ns;
}

void bo_window_on_success(bo_window *w, const bo_ticket *t, int64_t now_ns)
{
    /* 000's size(flying) is taken before the response leaves the set. */
    double flying = (double)w->inflight;
    double inc = w->cwnd < w->ssthresh ? 1.0 : 1.0 / w->cwnd;
    if (w->improved) {
        inc = w->cwnd < w->ssthresh ? BO_SS_INC : BO_CA_INC / w->cwnd;
        /*
         * A throttle costs the call it hits its Retry-After: grow in
         * avoidance no faster than one step per Retry-After instead of
         * one per round trip, so that the limit is touched that much less
         * often (a cap of 50 answering `Retry-After: 1`: each touch held
         * the calls it refused a second).
         */
        if (w->cwnd >= w->ssthresh && w->min_rtt_ns > 0 && w->hint_ns > w->min_rtt_ns)
            inc *= (double)w->min_rtt_ns / (double)w->hint_ns;
        /* Near the window a throttle came at, probe 8x slower for 2 s (CUBIC's plateau). */
        if (w->ceiling > 0 && w->cwnd + 1 >= (double)w->ceiling &&
            now_ns - w->ceiling_ns < BO_PLATEAU_NS)
            inc /= BO_PLATEAU_SLOW;
    }
    if (w->improved && w->cwnd >= w->ssthresh && w->cut_ns >= 0 && w->min_rtt_ns > 0) {
        /* a late wait set before any round trip was known counts its round trips now */
        if (w->probe_every_ns == BO_PROBE_LATE_NS)
            w->probe_every_ns = at_least_rtts(w, BO_PROBE_LATE_NS, BO_PROBE_LATE_RTTS);
        if (w->probe_ns < 0 && now_ns - w->cut_ns >= w->probe_every_ns) {
            w->probe_ns = now_ns;
            w->probe_from = w->cwnd;
        }
        if (w->probe_ns >= 0) {
            double gain = BO_PROBE_GAIN_FIRST;
            for (int64_t k = (now_ns - w->probe_ns) / w->min_rtt_ns; k > 0 && gain < BO_SS_INC; k--)
                gain *= 2;
            if (gain > BO_SS_INC)
                gain = BO_SS_INC;
            if (gain > inc)
                inc = gain;
        }
    }
    double grown = w->cwnd + inc;
    double bound = flying + 1 < grown ? flying + 1 : grown;

    /* Pacing-limited, not application-limited: the in-flight bound does not apply. */
    if (w->improved && w->blocked_ns >= t->sent_ns)
        bound = grown;
    /* Room: the server took t->inflight + 1 at once; the window may hold BO_ROOM_GAIN x that. */
    if (has_room(w, now_ns) && BO_ROOM_GAIN * ((double)t->inflight + 1) > bound)
        bound = BO_ROOM_GAIN * ((double)t->inflight + 1);
    /*
     * After the cut that ended room, the answers of what was sent before it go on
     * coming: each success proves the server took t->inflight + 1 at once, up to
     * beta x where the first refusal came.
     */
    if (w->room_cap > 0 && t->epoch != w->epoch) {
        double proven = (double)t->inflight + 1;
        if (proven > w->room_cap)
            proven = w->room_cap;
        if (proven > bound)
            bound = proven;
    }

    release(w, t);
    w->delivered++;
    bins_advance(w, now_ns);
    w->bins[0]++;
    w->cuts_in_row = 0;
    if (t->epoch == w->epoch && t->inflight > w->ok_inflight)
        w->ok_inflight = t->inflight;
    if (bound > w->cwnd)
        w->cwnd = bound;
    if (w->cwnd > w->max)
        w->cwnd = w->max;

    int64_t rtt = now_ns - t->sent_ns;
    if (rtt > 0 && (w->min_rtt_ns == 0 || rtt < w->min_rtt_ns))
        w->min_rtt_ns = rtt;
    if (rtt > 0) {
        /* TCP's smoothed round trip (gain 1/8), a sample at most twice it: one long poll
         * answered must not make every request look held */
        int64_t sample = w->srtt_ns > 0 && rtt > 2 * w->srtt_ns ? 2 * w->srtt_ns : rtt;
        w->srtt_ns = w->srtt_ns > 0 ? w->srtt_ns + (sample - w->srtt_ns) / 8 : sample;
    }
    if (rtt > 0) {
        /* BBR's delivery-rate sample: successes delivered while this one flew. */
        double rate = (double)(w->delivered - t->delivered) / (double)rtt;
        if (rate > w->delivery_rate)
            w->delivery_rate = rate;
    }
    if (w->improved && w->rate_limit_hz > 0) {
        if (now_ns - w->rate_step_ns >= rate_step_ns(w))
            rate_step(w, now_ns);
        /* Once the window, not the rate, is what limits, drop the rate. */
        if (w->min_rtt_ns > 0 &&
            w->rate_limit_hz > 2.0 * w->cwnd * BO_NS_PER_S / (double)w->min_rtt_ns)
            w->rate_limit_hz = 0;
    }
}

/* Start a new epoch: signals of attempts already in flight are ignored. */
static void decrease(bo_window *w, double cwnd, double ssthresh)
{
    if (ssthresh < 1)
        ssthresh = 1;
    w->ssthresh = ssthresh;
    w->cwnd = cwnd < 1 ? 1 : cwnd;
    w->epoch++;
    w->ok_inflight = 0;
}

/*
 * A throttle that cut the window: does the server meter a rate?  It does
 * when the refused attempt left with at most half as many in flight as a
 * success sent since the last cut had (sequential attempts: none in
 * flight): a concurrency cap refuses only at about the concurrency it
 * serves now.  Since the last cut, not ever: a cap that fell from 50 to 10
 * refuses at 10 in flight what it served at 49 a moment before, and read
 * as a rate it held the pace at the low cap's rate after the cap rose.  Half, not equal: the
 * client's in-flight counts answers on the wire, which a server's count
 * does not (on loopback a cap of 64 was refused at 65 to 90 in flight while
 * successes had had up to 90).  Then pace the destination at beta x the
 * successes of the last second (BBR's delivery rate, AWS adaptive retry's
 * cut), below the pace that drew the throttle; rate_step() probes upward
 * again, bracketing with that pace.
 */
static void rate_evidence(bo_window *w, const bo_ticket *t, int64_t now_ns)
{
    double measured = bo_window_measured_rate(w, now_ns);

    if (measured <= 0 || 2 * t->inflight > w->ok_inflight)
        return;
    if (w->rate_limit_hz > 0)
        w->rate_throttle_ns = now_ns;
    /*
     * One cut of the pace per round trip, as one cut of the window: the
     * attempts that went out at the old pace are answered throttled too
     * (a server closed for a second would otherwise ratchet the pace to
     * nothing; see also `since` below).  An attempt sent after the cut was
     * refused at the new pace, which is then too fast as well.
     */
    if (w->rate_limit_hz > 0 && w->rate_cut_ns >= 0 && t->sent_ns < w->rate_cut_ns)
        return;
    /*
     * What the server let through since the last cut: unlike the last
     * second, it holds no initial burst (a bucket's burst of 20 read as
     * 150/s ratcheted the pace down over a whole second of rejections).
     */
    double since = -1;
    if (w->rate_limit_hz > 0 && w->rate_cut_ns >= 0 && now_ns > w->rate_cut_ns)
        since = (double)(w->delivered - w->rate_cut_delivered) * BO_NS_PER_S /
                (double)(now_ns - w->rate_cut_ns);
    /*
     * Nothing got through since the last cut: the server is closed, not
     * metering this pace.  Cutting on that would take the pace to nothing
     * and mark it bad (a server closed one second in two left the pace at
     * 2/s, "bad" just above it, for 20 steps of a second); the window,
     * the RTO and the destination hold deal with a closed server.
     */
    if (since == 0)
        return;
    /*
     * As much got through since the cut as the pace allows: the throttle
     * did not come from the pace (sends that were not paced: a non-blocking
     * first attempt, another host); a cut would only compound on the last.
     */
    if (since >= w->rate_limit_hz)
        return;
    /*
     * A bucket's rate, measured (see below): then a pace above it is what draws
     * the next throttle, where the pace that drew this one may lie far above
     * (a first pace read from the burst): `bad` is set from it.
     */
    double bucket_hz = 0, bucket_n = 0;
    /* the whole span since the cut went at one pace, above what got through */
    bool steady = w->run_pace_hz == w->rate_limit_hz;
    if (since >= 0 && since < measured) {
        measured = since;
        /*
         * Both ends of the span were refusals (the bucket held less than a
         * token), so it refilled what got through, a token more or less,
         * unless the refused call's wait was long enough to fill it to its
         * burst, which then refilled nothing.  Kept under pressure (within
         * half a burst of refill, read at this rate) at one pace above it,
         * what got through is its rate, once it is two tokens or more (with
         * one, anything from nothing to two a span; 200 threads against a
         * 20/s bucket cut 50 ms apart, one success each, and paced at 17/s).
         */
        double idle = (double)(w->run_ns - w->rate_cut_ns) / BO_NS_PER_S;
        double n = (double)(w->delivered - w->rate_cut_delivered);
        if (steady && since < w->rate_limit_hz && w->run_ns >= w->rate_cut_ns &&
            since * idle < w->burst_est / 2 && n >= 2) {
            bucket_hz = since;
            bucket_n = n;
        }
    }
    w->rate_cut_ns = now_ns;
    w->rate_cut_delivered = w->delivered;
    w->rate_quiet = 0; /* here, not at the next step: that one may not count (rate_step) */
    /*
     * A token bucket lets its burst through after every wait long enough
     * to refill it (a sequential client's refused call waits its
     * Retry-After), then refuses: what it delivered over the last second or
     * since the last cut holds the wait, what it delivered in the run since
     * the wait holds the burst.  What the run delivered beyond the burst
     * (the successes before the destination's first throttle), over the
     * run's time, is the refill rate: half a token either way, since the
     * bucket held a fraction of one when it refused.  A run that did not
     * start from a full bucket delivered less, and the estimate only
     * falls (10/s, burst 3, `Retry-After: 1`: 3.5/s since the cut, 10.1/s
     * beyond the burst).
     */
    if (w->burst_est > 0 && w->run_ns >= 0 && t->sent_ns > w->run_ns) {
        double beyond = ((double)(w->delivered - w->run_delivered) - w->burst_est + 0.5) *
                        BO_NS_PER_S / (double)(t->sent_ns - w->run_ns);
        if (beyond > measured) {
            measured = beyond;
            /* a run at one pace above it: what the bucket, not the pace, let through */
            bucket_hz = steady && beyond < w->rate_limit_hz ? beyond : 0;
            bucket_n = (double)(w->delivered - w->run_delivered) - w->burst_est + 0.5;
        }
    }
    if (w->burst_est <= 0)
        w->burst_est = (double)w->delivered;
    if (w->rate_limit_hz <= 0) {
        /* Not paced yet: what drew the throttle is unknown; start below what got through. */
        w->rate_ok_hz = 0;
        w->rate_bad_hz = 0;
        w->rate_growth = BO_RATE_GROWTH_FIRST;
        w->rate_limit_hz = measured * w->beta;
    } else {
        double pace = w->rate_limit_hz;
        if (w->rate_ok_hz >= pace)
            w->rate_ok_hz = 0; /* throttled at the known-good pace: the limit fell */
        w->rate_bad_hz = pace;
        w->rate_bad_margin = 0;
        double r = (measured < pace ? measured : pace) * w->beta;
        if (bucket_hz > 0 && bucket_hz < pace) {
            /*
             * The bucket's rate, measured: the search stays under it (beta
             * below, then halfway up while ok and bad are apart), and a pace
             * held a step above it is no proof: a bucket filled at a slower
             * pace lets a faster one through for a while.
             */
            w->rate_bad_hz = bucket_hz;
            /* a token of the span's under it, and never closer than beta */
            w->rate_bad_margin = 1.0 - 1.0 / (bucket_n + 1.0);
            if (w->rate_bad_margin < w->beta)
                w->rate_bad_margin = w->beta;
            if (w->rate_ok_hz > r)
                w->rate_ok_hz = 0;
        }
        if (w->rate_ok_hz > 0) {
            double mid = (w->rate_ok_hz + w->rate_bad_hz) / 2;
            if (mid < r)
                r = mid;
            if (r < w->rate_ok_hz)
                r = w->rate_ok_hz;
        }
        w->rate_limit_hz = r;
    }
    double r = w->rate_limit_hz;
    step_begin(w, now_ns);
    int64_t next = now_ns + gap_ns(r > 0 ? (double)BO_NS_PER_S / r : 0);
    if (w->next_send_ns < next)
        w->next_send_ns = next;
}

static bool on_signal(bo_window *w, const bo_ticket *t, bo_signal sig, int64_t now_ns);

bool bo_window_on_signal(bo_window *w, const bo_ticket *t, bo_signal sig, int64_t now_ns)
{
    bool cut = on_signal(w, t, sig, now_ns);

    if (sig == BO_SIGNAL_THROTTLE)
        w->run_ns = -1; /* the bucket is empty: the next send starts a run */
    return cut;
}

static bool on_signal(bo_window *w, const bo_ticket *t, bo_signal sig, int64_t now_ns)
{
    bool from_room = has_room(w, now_ns);

    release(w, t);
    if (sig == BO_SIGNAL_THROTTLE || sig == BO_SIGNAL_LOSS)
        w->signal_ns = now_ns;
    if (sig == BO_SIGNAL_NONE || sig == BO_SIGNAL_KEY_BUSY || t->epoch != w->epoch)
        return false;
    if (sig == BO_SIGNAL_LOSS) {
        /* One probe at a time; ssthresh only falls on the first loss in a row. */
        double ss = w->cwnd > 1 ? w->cwnd * w->beta : w->ssthresh;
        decrease(w, 1, ss);
        return true;
    }
    if (w->improved) {
        rate_evidence(w, t, now_ns);
        w->cuts_in_row++;
        w->ceiling = (unsigned)w->cwnd;
        w->ceiling_ns = now_ns;
        if (w->cuts_in_row >= 2 && t->inflight + 1 < w->ceiling)
            w->ceiling = t->inflight + 1;
    }
    double ss = w->cwnd * w->beta;
    double room_ss = 0; /* the first cut of a destination with room: slow start's threshold */
    if (w->improved && w->min_rtt_ns > 0 && w->delivery_rate > 0) {
        double bdp = w->delivery_rate * (double)w->min_rtt_ns;
        bdp *= BO_BDP_MARGIN;
        if (bdp > ss)
            ss = bdp < w->cwnd ? bdp : w->cwnd;
        /*
         * The first throttle after room: the window grew by doubling what the server
         * took, not by what it delivers, and may be twice the capacity.  Fall to what
         * was measured: the delivered rate x the round trip, or the most in flight
         * that a success had, whichever is more.
         */
        double proven = (double)w->ok_inflight + 1;
        double est = bdp > proven ? bdp : proven;
        w->room_cap = 0;
        if (from_room && est < ss) {
            w->room_cap = w->beta * (double)t->inflight;
            /* slow start goes on from there up to halfway (geometrically) to the old level */
            room_ss = bo_math_sqrt(est * ss);
            ss = est;
        }
        w->delivery_rate *= BO_RATE_DECAY;
    }
    /*
     * A second cut with no success in between (or a throttle before any
     * success): the first cut did not stop the throttling.  The server
     * refused the (inflight + 1)-th attempt, so whatever it limits, the
     * window need not exceed what was in flight then (a concurrency cap is
     * at most that; a metered rate is paced anyway).
     */
    if (w->improved && from_room && w->delivered == 0) {
        /*
         * A cut of the first window, before any answer: the server refused the
         * (inflight + 1)-th attempt, which is its concurrency (the window was a guess);
         * slow start goes on to beta x where the guess stood, since the server's
         * concurrency is less than what clients keep in flight while requests travel.
         */
        room_ss = ss;
        ss = (double)(t->inflight > 0 ? t->inflight : 1);
    } else if (w->improved && (w->cuts_in_row >= 2 || w->delivered == 0) &&
               ss > (double)(t->inflight > 0 ? t->inflight : 1)) {
        ss = (double)(t->inflight > 0 ? t->inflight : 1);
    }
    if (ss > w->max)
        ss = w->max;
    if (room_ss > w->max)
        room_ss = w->max;
    if (w->improved) {
        int64_t soon = at_least_rtts(w, BO_PROBE_SOON_NS, BO_PROBE_RTTS);
        if (w->probe_ns >= 0) {
            /* A probe that found no room waits twice as long; one that did, the least. */
            int64_t twice =
                2 * w->probe_every_ns < BO_WINDOW_PROBE_MAX_NS ? 2 * w->probe_every_ns
                                                            : BO_WINDOW_PROBE_MAX_NS;
            w->probe_every_ns = ss > w->probe_from * BO_PROBE_FOUND ? soon : twice;
            w->probe_ns = -1;
        } else if (from_room && w->delivered == 0) {
            /* a cut of the first window: its in-flight count is the server's */
            w->probe_every_ns = at_least_rtts(w, BO_PROBE_LATE_NS, BO_PROBE_LATE_RTTS);
        } else if (from_room) {
            /* the first cut after room fell to what was delivered while the window still
             * grew, a floor: once slow start is done, probe on for the rest */
            w->probe_every_ns = at_least_rtts(w, BO_PROBE_SOON_NS, BO_ROOM_PROBE_RTTS);
        } else if (ss < w->cwnd * BO_PROBE_DEEP) {
            w->probe_every_ns = soon;
        } else if (w->probe_every_ns == 0) {
            w->probe_every_ns = at_least_rtts(w, BO_PROBE_LATE_NS, BO_PROBE_LATE_RTTS);
        }
        w->cut_ns = now_ns;
    }
    decrease(w, w->mode == BO_AIMD_TAHOE ? w->initial : ss, room_ss > ss ? room_ss : ss);
    return true;
}

void bo_window_on_blocked(bo_window *w, int64_t now_ns)
{
    /*
     * Only a window that is nearly full counts: an admission that waited a
     * few ms on pacing while most of the window was idle says nothing about
     * demand, and must not let the window grow (it would then let a burst
     * through when the destination stops answering).
     */
    if ((double)bo_window_counted(w, now_ns) + 1 >= BO_BLOCKED_FULL * w->cwnd)
        w->blocked_ns = now_ns;
}

void bo_window_on_hint(bo_window *w, int64_t hint_ns)
{
    w->hint_ns = hint_ns > 0 ? hint_ns : 0;
}

void bo_window_on_release(bo_window *w, const bo_ticket *t)
{
    release(w, t);
}
