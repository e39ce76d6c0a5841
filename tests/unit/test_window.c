/*
 * Unit tests for bo_window: every transition of 000's algorithm in article
 * mode (BACKOFF_PACING=0): slow start, congestion avoidance, the in-flight
 * + 1 bound, window_max, reno, tahoe, signals ignored through epochs, loss
 * to one; then the improvements (pacing and next_send, BDP sizing, the
 * app-limited rule, Retry-After rate hints); then room (a destination that
 * has not throttled: the first window, growth by proven concurrency, the
 * first cut) and held requests (attempts in flight that stop counting).
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "bo_config.h"
#include "bo_window.h"

#define MS 1000000LL
#define EPS 1e-9

static bo_config article_cfg(void)
{
    bo_config c;
    bo_config_defaults(&c);
    c.policy = BO_POLICY_AIMD;
    c.pacing = false;
    c.beta = 0.5;
    return c;
}

/* Send n attempts at time t, tickets into tk[0..n-1]. */
static void send_n(bo_window *w, int64_t t, bo_ticket *tk, int n)
{
    for (int i = 0; i < n; i++)
        bo_window_on_send(w, t, &tk[i]);
}

START_TEST(test_init_defaults)
{
    bo_config c = article_cfg();
    bo_window w;
    bo_window_init(&w, &c);
    ck_assert_double_eq_tol(w.cwnd, 20, EPS);
    ck_assert_double_eq_tol(w.ssthresh, 1024, EPS);
    ck_assert_double_eq_tol(w.beta, 0.5, EPS);
    ck_assert_uint_eq(w.inflight, 0);
    c.beta = 0; /* the policy's own */
    bo_window_init(&w, &c);
    ck_assert_double_eq_tol(w.beta, bo_window_default_beta(), EPS);
    ck_assert(w.beta > 0 && w.beta < 1);
}
END_TEST

START_TEST(test_can_send_counts_slots)
{
    bo_config c = article_cfg();
    c.window = 3;
    bo_window w;
    bo_ticket tk[4];
    bo_window_init(&w, &c);
    for (int i = 0; i < 3; i++) {
        ck_assert(bo_window_can_send(&w, 0));
        bo_window_on_send(&w, 0, &tk[i]);
    }
    ck_assert(!bo_window_can_send(&w, 0));
    ck_assert_uint_eq(w.inflight, 3);
    bo_window_on_release(&w, &tk[0]);
    ck_assert(bo_window_can_send(&w, 0));
    ck_assert_double_eq_tol(w.cwnd, 3, EPS); /* release changes nothing else */
}
END_TEST

START_TEST(test_slow_start_plus_one)
{
    bo_config c = article_cfg();
    bo_window w;
    bo_ticket tk[20];
    bo_window_init(&w, &c);
    send_n(&w, 0, tk, 20);
    /* flying = 20 before each response: min(21, cwnd + 1) grows by one each time. */
    bo_window_on_success(&w, &tk[0], 100 * MS);
    ck_assert_double_eq_tol(w.cwnd, 21, EPS);
    bo_window_on_send(&w, 100 * MS, &tk[0]);
    bo_window_on_send(&w, 100 * MS, &tk[0]); /* 21 in flight */
    bo_window_on_success(&w, &tk[1], 110 * MS);
    ck_assert_double_eq_tol(w.cwnd, 22, EPS);
    ck_assert_uint_eq(w.inflight, 20);
    ck_assert_uint_eq(w.delivered, 2);
}
END_TEST

START_TEST(test_inflight_bound)
{
    bo_config c = article_cfg();
    bo_window w;
    bo_ticket tk[3];
    bo_window_init(&w, &c);
    send_n(&w, 0, tk, 3);
    /* Only 3 in flight: min(3 + 1, 21) = 4 < cwnd 20, so no growth at all. */
    for (int i = 0; i < 3; i++)
        bo_window_on_success(&w, &tk[i], 100 * MS);
    ck_assert_double_eq_tol(w.cwnd, 20, EPS);
    /* 20 in flight: the bound is 21, growth by one. */
    bo_ticket many[20];
    send_n(&w, 200 * MS, many, 20);
    bo_window_on_success(&w, &many[0], 300 * MS);
    ck_assert_double_eq_tol(w.cwnd, 21, EPS);
}
END_TEST

START_TEST(test_avoidance_plus_one_over_cwnd)
{
    bo_config c = article_cfg();
    c.window = 10;
    c.window_max = 10; /* ssthresh starts at window_max = cwnd: avoidance */
    bo_window w;
    bo_window_init(&w, &c);
    w.max = 100; /* let it grow above the initial ssthresh */
    bo_ticket tk[10];
    send_n(&w, 0, tk, 10);
    bo_window_on_success(&w, &tk[0], 50 * MS);
    ck_assert_double_eq_tol(w.cwnd, 10.1, 1e-12);
    bo_window_on_send(&w, 50 * MS, &tk[0]);
    bo_window_on_success(&w, &tk[1], 60 * MS);
    ck_assert_double_eq_tol(w.cwnd, 10.1 + 1 / 10.1, 1e-12);
}
END_TEST

START_TEST(test_window_max)
{
    bo_config c = article_cfg();
    c.window = 5;
    c.window_max = 6;
    bo_window w;
    bo_ticket tk[40];
    bo_window_init(&w, &c);
    for (int round = 0; round < 10; round++) {
        int n = (int)w.cwnd;
        send_n(&w, round * 100 * MS, tk, n);
        for (int i = 0; i < n; i++)
            bo_window_on_success(&w, &tk[i], round * 100 * MS + 50 * MS);
        ck_assert(w.cwnd <= 6 + EPS);
    }
    ck_assert_double_eq_tol(w.cwnd, 6, EPS);
}
END_TEST

START_TEST(test_reno_decrease)
{
    bo_config c = article_cfg();
    bo_window w;
    bo_ticket tk[20];
    bo_window_init(&w, &c);
    send_n(&w, 0, tk, 20);
    ck_assert(bo_window_on_signal(&w, &tk[0], BO_SIGNAL_THROTTLE, 60 * MS));
    ck_assert_double_eq_tol(w.ssthresh, 10, EPS);
    ck_assert_double_eq_tol(w.cwnd, 10, EPS);
    ck_assert_uint_eq(w.epoch, 1);
    ck_assert_uint_eq(w.inflight, 19);
}
END_TEST

START_TEST(test_tahoe_decrease)
{
    bo_config c = article_cfg();
    c.aimd_mode = BO_AIMD_TAHOE;
    c.beta = 0.9;
    bo_window w;
    bo_ticket tk[30];
    bo_window_init(&w, &c);
    w.cwnd = 30;
    send_n(&w, 0, tk, 30);
    ck_assert(bo_window_on_signal(&w, &tk[0], BO_SIGNAL_THROTTLE, 60 * MS));
    ck_assert_double_eq_tol(w.ssthresh, 27, EPS);
    ck_assert_double_eq_tol(w.cwnd, 20, EPS); /* the initial window */
}
END_TEST

START_TEST(test_signals_before_decrease_ignored)
{
    bo_config c = article_cfg();
    bo_window w;
    bo_ticket old[20], fresh;
    bo_window_init(&w, &c);
    send_n(&w, 0, old, 20);
    ck_assert(bo_window_on_signal(&w, &old[0], BO_SIGNAL_THROTTLE, 10 * MS));
    /* The other 19 were sent before the decrease: ignored, only released. */
    for (int i = 1; i < 20; i++)
        ck_assert(!bo_window_on_signal(&w, &old[i], BO_SIGNAL_THROTTLE, 20 * MS));
    ck_assert_double_eq_tol(w.cwnd, 10, EPS);
    ck_assert_uint_eq(w.inflight, 0);
    /* A request sent after the decrease counts again. */
    bo_window_on_send(&w, 30 * MS, &fresh);
    ck_assert_uint_eq(fresh.epoch, 1);
    ck_assert(bo_window_on_signal(&w, &fresh, BO_SIGNAL_THROTTLE, 40 * MS));
    ck_assert_double_eq_tol(w.cwnd, 5, EPS);
}
END_TEST

START_TEST(test_no_signal_is_release_only)
{
    bo_config c = article_cfg();
    bo_window w;
    bo_ticket tk;
    bo_window_init(&w, &c);
    bo_window_on_send(&w, 0, &tk);
    ck_assert(!bo_window_on_signal(&w, &tk, BO_SIGNAL_NONE, MS));
    ck_assert_double_eq_tol(w.cwnd, 20, EPS);
    ck_assert_uint_eq(w.inflight, 0);
    /* A stray completion never wraps in-flight below zero. */
    bo_window_on_release(&w, &tk);
    ck_assert_uint_eq(w.inflight, 0);
}
END_TEST

START_TEST(test_loss_to_one_probe)
{
    bo_config c = article_cfg();
    c.beta = 0.9;
    bo_window w;
    bo_ticket tk[20], probe;
    bo_window_init(&w, &c);
    send_n(&w, 0, tk, 20);
    ck_assert(bo_window_on_signal(&w, &tk[0], BO_SIGNAL_LOSS, 2000 * MS));
    ck_assert_double_eq_tol(w.cwnd, 1, EPS);
    ck_assert_double_eq_tol(w.ssthresh, 18, EPS);
    for (int i = 1; i < 20; i++)
        bo_window_on_signal(&w, &tk[i], BO_SIGNAL_LOSS, 2000 * MS);
    /* One probe at a time. */
    ck_assert(bo_window_can_send(&w, 2001 * MS));
    bo_window_on_send(&w, 2001 * MS, &probe);
    ck_assert(!bo_window_can_send(&w, 2001 * MS));
    /* The probe fails too: still one, and ssthresh keeps the first loss's value. */
    ck_assert(bo_window_on_signal(&w, &probe, BO_SIGNAL_LOSS, 4001 * MS));
    ck_assert_double_eq_tol(w.cwnd, 1, EPS);
    ck_assert_double_eq_tol(w.ssthresh, 18, EPS);
    /* An answer: slow start back up (1 -> 2). */
    bo_window_on_send(&w, 4100 * MS, &probe);
    bo_window_on_success(&w, &probe, 4200 * MS);
    ck_assert_double_eq_tol(w.cwnd, 2, EPS);
}
END_TEST

/* ---- improvements (BACKOFF_PACING=1) ---- */

static bo_config improved_cfg(void)
{
    bo_config c = article_cfg();
    c.pacing = true;
    c.beta = 0.9;
    return c;
}

/*
 * The destination throttled a moment ago (at time 0): the window is past
 * room, and these tests are about what it does then.
 */
static void throttled_at_0(bo_window *w)
{
    w->signal_ns = 0;
}

START_TEST(test_article_mode_never_paces)
{
    bo_config c = article_cfg();
    bo_window w;
    bo_ticket tk;
    bo_window_init(&w, &c);
    bo_window_on_send(&w, 0, &tk);
    bo_window_on_success(&w, &tk, 100 * MS);
    for (int i = 0; i < 10; i++) {
        ck_assert_int_eq(bo_window_next_send_ns(&w, 100 * MS), 100 * MS);
        bo_window_on_send(&w, 100 * MS, &tk);
    }
}
END_TEST

START_TEST(test_pacing_spreads_sends)
{
    bo_config c = improved_cfg();
    bo_window w;
    bo_ticket tk;
    bo_window_init(&w, &c);
    /* No answer yet: the first window leaves one send every 0.5 ms. */
    bo_window_on_send(&w, 0, &tk);
    ck_assert_int_eq(bo_window_next_send_ns(&w, 0), MS / 2);
    ck_assert(!bo_window_can_send(&w, MS / 2 - 1));
    ck_assert(bo_window_can_send(&w, MS / 2));
    throttled_at_0(&w); /* with room, nothing is paced once answers come (test_room_*) */
    bo_window_on_success(&w, &tk, 100 * MS); /* min RTT 100 ms */
    ck_assert_int_eq(w.min_rtt_ns, 100 * MS);
    /* Slow start: gap = min_rtt / (cwnd * 1.25) = 100 ms / 25 = 4 ms. */
    bo_window_on_send(&w, 100 * MS, &tk);
    ck_assert_int_eq(bo_window_next_send_ns(&w, 100 * MS), 104 * MS);
    ck_assert(!bo_window_can_send(&w, 103 * MS));
    ck_assert(bo_window_can_send(&w, 104 * MS));
    /* Sends at the pacing time chain on from it. */
    bo_window_on_send(&w, 104 * MS, &tk);
    ck_assert_int_eq(bo_window_next_send_ns(&w, 104 * MS), 108 * MS);
}
END_TEST

START_TEST(test_app_limited_unless_blocked)
{
    bo_config c = improved_cfg();
    bo_window w;
    bo_ticket tk[20];
    bo_window_init(&w, &c);
    throttled_at_0(&w);
    send_n(&w, 0, tk, 2);
    bo_window_on_success(&w, &tk[0], 100 * MS);
    ck_assert_double_eq_tol(w.cwnd, 20, EPS); /* 2 in flight: app-limited */
    /* A wait while the window was nearly full means demand: growth resumes. */
    send_n(&w, 100 * MS, tk, 18); /* 19 in flight */
    bo_window_on_blocked(&w, 101 * MS);
    bo_window_on_success(&w, &tk[0], 200 * MS);
    ck_assert_double_eq_tol(w.cwnd, 20.75, EPS);
    /* A wait with most of the window idle does not count. */
    bo_window w2;
    bo_ticket t2[2];
    bo_window_init(&w2, &c);
    throttled_at_0(&w2);
    send_n(&w2, 0, t2, 2);
    bo_window_on_blocked(&w2, MS);
    bo_window_on_success(&w2, &t2[0], 100 * MS);
    ck_assert_double_eq_tol(w2.cwnd, 20, EPS);
}
END_TEST

START_TEST(test_bdp_sizing_on_decrease)
{
    bo_config c = improved_cfg();
    c.beta = 0.5;
    bo_window w;
    bo_window_init(&w, &c);
    throttled_at_0(&w);
    w.cwnd = 80;
    w.min_rtt_ns = 600 * MS;
    w.delivery_rate = 100.0 / 1e9; /* 100 per second */
    w.delivered = 1; /* before any success a cut clamps to what was in flight */
    bo_ticket tk;
    bo_window_on_send(&w, 0, &tk);
    ck_assert(bo_window_on_signal(&w, &tk, BO_SIGNAL_THROTTLE, 700 * MS));
    /* max(80 * 0.5, min(100/s * 0.6 s * 0.97, 80)) = 58.2 */
    ck_assert_double_eq_tol(w.cwnd, 58.2, 1e-6);
    ck_assert_double_eq_tol(w.ssthresh, 58.2, 1e-6);
    /* Never above the window it decreases from. */
    w.delivery_rate = 1000.0 / 1e9;
    w.cuts_in_row = 0; /* as after a success: a second cut in a row clamps */
    bo_window_on_send(&w, 800 * MS, &tk);
    ck_assert(bo_window_on_signal(&w, &tk, BO_SIGNAL_THROTTLE, 900 * MS));
    ck_assert_double_eq_tol(w.cwnd, 58.2, 1e-6);
}
END_TEST

START_TEST(test_delivery_rate_sample)
{
    bo_config c = improved_cfg();
    bo_window w;
    bo_ticket tk[10];
    bo_window_init(&w, &c);
    send_n(&w, 0, tk, 10);
    for (int i = 0; i < 10; i++)
        bo_window_on_success(&w, &tk[i], 500 * MS);
    /* The last one saw 10 deliveries in 0.5 s: 20 per second. */
    ck_assert_double_eq_tol(w.delivery_rate * 1e9, 20, 1e-9);
}
END_TEST

/*
 * Sequential attempts at the window's pace from t, each answered 1 ms after
 * it left, until one probing step of the rate search has ended; returns the
 * time of the last answer.
 */
static int64_t hold_one_step(bo_window *w, int64_t t)
{
    int64_t step = w->rate_step_ns;
    bo_ticket tk;
    for (int i = 0; i < 1000 && w->rate_step_ns == step; i++) {
        t = bo_window_next_send_ns(w, t);
        bo_window_on_send(w, t, &tk);
        t += 1 * MS;
        bo_window_on_success(w, &tk, t);
    }
    ck_assert_int_ne(w->rate_step_ns, step);
    return t;
}

/*
 * Sequential attempts (nothing else in flight) throttled after
 * successes: the server meters a rate, so the window paces at beta x the
 * successes measured (over the time since the first send, at least 100 ms,
 * at most a second).
 */
START_TEST(test_rate_evidence_paces)
{
    bo_config c = improved_cfg();
    bo_window w;
    bo_ticket tk;
    bo_window_init(&w, &c);
    for (int i = 0; i < 10; i++) { /* 10 successes in 0.1 s */
        bo_window_on_send(&w, i * 10 * MS, &tk);
        bo_window_on_success(&w, &tk, i * 10 * MS + 5 * MS);
    }
    ck_assert_double_eq_tol(bo_window_measured_rate(&w, 200 * MS), 10 / 0.2, 1e-9);
    bo_window_on_send(&w, 200 * MS, &tk);
    ck_assert(bo_window_on_signal(&w, &tk, BO_SIGNAL_THROTTLE, 200 * MS));
    ck_assert_double_eq_tol(w.rate_limit_hz, 0.9 * 10 / 0.2, 1e-9);
    ck_assert_int_ge(bo_window_next_send_ns(&w, 200 * MS), 200 * MS + (int64_t)(1e9 / 45) - 1);
    /*
     * No upper bound known yet: each step held without a throttle raises
     * the pace, +50% first, then doubling.
     */
    double r0 = w.rate_limit_hz;
    int64_t t = hold_one_step(&w, 200 * MS);
    ck_assert_double_eq_tol(w.rate_limit_hz, 1.5 * r0, 1e-9);
    ck_assert_double_eq_tol(w.rate_ok_hz, r0, 1e-9);
    t = hold_one_step(&w, t);
    double r2 = 1.5 * 2 * r0;
    ck_assert_double_eq_tol(w.rate_limit_hz, r2, 1e-9);
    /* Throttled at r2: bad = r2; the next pace is below it and not below ok. */
    bo_window_on_send(&w, t, &tk);
    ck_assert(bo_window_on_signal(&w, &tk, BO_SIGNAL_THROTTLE, t + MS));
    ck_assert_double_eq_tol(w.rate_bad_hz, r2, 1e-9);
    ck_assert(w.rate_limit_hz < r2 && w.rate_limit_hz >= 1.5 * r0 - 1e-9);
}
END_TEST

/*
 * A bucket's burst read as a rate: 20 successes in 10 ms, then throttles.
 * The first pace rests on that burst; a throttle of an attempt sent
 * before the cut does not cut again (one cut a round trip), the steps are
 * not promoted to known good, and the next cuts use what got through
 * since the last one (20/s here), not the last second that still holds
 * the burst.
 */
START_TEST(test_rate_cut_forgets_the_burst)
{
    bo_config c = improved_cfg();
    bo_window w;
    bo_ticket tk, old;
    bo_window_init(&w, &c);
    for (int i = 0; i < 20; i++) {
        bo_window_on_send(&w, i * MS / 2, &tk);
        bo_window_on_success(&w, &tk, i * MS / 2 + MS / 10);
    }
    int64_t t = 20 * MS;
    bo_window_on_send(&w, t, &tk);
    bo_window_on_send(&w, t + MS / 4, &old);
    ck_assert(bo_window_on_signal(&w, &tk, BO_SIGNAL_THROTTLE, t + MS / 2));
    double first = w.rate_limit_hz;
    ck_assert_double_gt(first, 100); /* 20 in 0.1 s (the span floor) x 0.9 */
    /* sent before the cut, refused after it: the same round trip, no second cut */
    bo_window_on_signal(&w, &old, BO_SIGNAL_THROTTLE, t + MS);
    ck_assert_double_eq_tol(w.rate_limit_hz, first, EPS);
    /* 20/s gets through: one success every 50 ms, a throttle in between. */
    int64_t cut_ns = t;
    for (int i = 1; i <= 8; i++) {
        t = cut_ns + i * 50 * MS;
        bo_window_on_send(&w, t, &tk);
        bo_window_on_success(&w, &tk, t + MS);
        bo_window_on_send(&w, t + 2 * MS, &tk);
        bo_window_on_signal(&w, &tk, BO_SIGNAL_THROTTLE, t + 2 * MS);
    }
    ck_assert_double_eq_tol(w.rate_ok_hz, 0, EPS); /* never promoted */
    ck_assert_double_le(w.rate_limit_hz, 0.9 * 20 * 1.01);
    ck_assert_double_ge(w.rate_limit_hz, 0.9 * 20 * 0.8);
}
END_TEST

/* One sequential attempt at t, answered at t + 10 ms: success (true) or throttle. */
static void seq_one(bo_window *w, int64_t t, bool ok)
{
    bo_ticket tk;
    bo_window_on_send(w, t, &tk);
    if (ok)
        bo_window_on_success(w, &tk, t + 10 * MS);
    else
        bo_window_on_signal(w, &tk, BO_SIGNAL_THROTTLE, t + 10 * MS);
}

/* Ten sequential successes 10 ms apart, then a refusal: the first pace, read
 * from them (cut at 110 ms: 10 in 0.11 s x 0.9). */
static double paced_after_ten(bo_window *w)
{
    for (int i = 0; i < 10; i++)
        seq_one(w, i * 10 * MS, true);
    seq_one(w, 100 * MS, false);
    double first = w->rate_limit_hz;
    ck_assert_double_gt(first, 50);
    return first;
}

/*
 * A sequential client against a token bucket of 10/s holding 3, whose
 * refusals say `Retry-After: 1`: three go, the fourth is refused, the
 * refused call waits its second, and the bucket's burst goes through again
 * before the next refusal.  The first pace rests on the burst (27/s); the
 * second second, in which nothing was sent, proves nothing about it, and
 * the run after the wait, beyond the burst, measures the refill: the pace
 * then stays beta under about 10/s instead of going back up to the burst's.
 */
START_TEST(test_rate_learns_the_bucket_beyond_its_burst)
{
    bo_config c = improved_cfg();
    bo_window w;
    bo_window_init(&w, &c);
    for (int i = 0; i < 3; i++)
        seq_one(&w, i * 10 * MS, true);
    seq_one(&w, 30 * MS, false);
    ck_assert_double_eq_tol(w.rate_limit_hz, 0.9 * 3 / 0.1, 1e-9); /* the burst, read as a rate */
    ck_assert_double_eq_tol(w.burst_est, 3, EPS);
    /* the refused call waits its second; then the burst again at the pace, and a refusal */
    int64_t t = 1040 * MS;
    for (int i = 0; i < 4; i++) {
        t = bo_window_next_send_ns(&w, t);
        seq_one(&w, t, true);
        t += 10 * MS;
    }
    ck_assert_double_eq_tol(w.rate_ok_hz, 0, EPS); /* the idle second held no send: no proof */
    t = bo_window_next_send_ns(&w, t);
    int64_t run = 1040 * MS;
    seq_one(&w, t, false);
    double beyond = (4 - 3 + 0.5) * 1e9 / (double)(t - run);
    ck_assert_double_gt(beyond, 9);
    ck_assert_double_lt(beyond, 11);
    ck_assert_double_eq_tol(w.rate_bad_hz, beyond, 1e-6);
    ck_assert_double_eq_tol(w.rate_limit_hz, 0.9 * beyond, 1e-6);
    /* the search stays beta under the measured rate, step after step */
    t += 1010 * MS;
    for (int i = 0; i < 60; i++) {
        t = bo_window_next_send_ns(&w, t);
        seq_one(&w, t, true);
        t += 10 * MS;
        ck_assert_double_le(w.rate_limit_hz, 0.9 * beyond + 1e-6);
    }
    ck_assert_double_ge(w.rate_limit_hz, 0.9 * beyond - 1e-6);
    /*
     * A cut ends the quiet steps at once: the step after it, spent waiting
     * out the Retry-After, does not count, and the bound must not be
     * forgotten sooner for it (a burst-1 bucket: 1.38x -> 1.54x).
     */
    ck_assert_uint_gt(w.rate_quiet, 0);
    seq_one(&w, bo_window_next_send_ns(&w, t), false);
    ck_assert_uint_eq(w.rate_quiet, 0);
}
END_TEST

/*
 * One cut of the pace a round trip: an attempt sent after the cut and
 * refused says the new pace is too fast as well, however soon it comes
 * (a loop of fresh processes whose second refusal came 120 ms after the
 * first kept the burst's pace); one sent before it does not.
 */
START_TEST(test_rate_cuts_again_at_the_new_pace)
{
    bo_config c = improved_cfg();
    bo_window w;
    bo_window_init(&w, &c);
    double first = paced_after_ten(&w);
    int64_t t = bo_window_next_send_ns(&w, 110 * MS);
    seq_one(&w, t, true);
    t = bo_window_next_send_ns(&w, t + 10 * MS);
    seq_one(&w, t, true);
    t = bo_window_next_send_ns(&w, t + 10 * MS);
    ck_assert_int_lt(t + 10 * MS - 110 * MS, 200 * MS); /* within what used to be one step */
    seq_one(&w, t, false);
    ck_assert_double_lt(w.rate_limit_hz, first / 2); /* 2 in ~70 ms since the cut */
}
END_TEST

/*
 * A program slower than the pace never used it: its steps prove nothing
 * about the pace, which is not raised (it would let the program's next
 * burst through at a rate nothing had shown the server takes).
 */
START_TEST(test_rate_unused_pace_is_no_proof)
{
    bo_config c = improved_cfg();
    bo_window w;
    bo_window_init(&w, &c);
    double first = paced_after_ten(&w);
    for (int64_t t = 120 * MS; t < 3000 * MS; t += 120 * MS) /* 8/s, under a tenth of it */
        seq_one(&w, bo_window_next_send_ns(&w, t), true);
    ck_assert_double_eq_tol(w.rate_ok_hz, 0, EPS);
    ck_assert_double_eq_tol(w.rate_limit_hz, first, EPS);
}
END_TEST

/*
 * A concurrency cap that falls (50 -> 10) refuses at 10 in flight what it
 * served at 40 before the cut: not a rate.  Only successes sent since the
 * last cut count.
 */
START_TEST(test_cap_drop_is_not_a_rate)
{
    bo_config c = improved_cfg();
    bo_window w;
    bo_ticket tk[41];
    bo_window_init(&w, &c);
    w.cwnd = 41;
    send_n(&w, 0, tk, 41); /* in flight before each: 0..40 */
    for (int i = 0; i < 40; i++)
        bo_window_on_success(&w, &tk[i], 100 * MS);
    ck_assert(bo_window_on_signal(&w, &tk[40], BO_SIGNAL_THROTTLE, 100 * MS)); /* first cut */
    send_n(&w, 101 * MS, tk, 11);
    bo_window_on_success(&w, &tk[0], 200 * MS); /* 0 in flight before it */
    /* refused with 10 in flight; the only success since the cut had 0 */
    ck_assert(bo_window_on_signal(&w, &tk[10], BO_SIGNAL_THROTTLE, 201 * MS));
    ck_assert_double_eq_tol(w.rate_limit_hz, 0, EPS);
}
END_TEST

/*
 * A limit that fell and rose again: after a deep cut the window probes
 * upward again within a few round trips (+25%, +50%, +75% a round trip),
 * while after a shallow first cut (a limit found by slow start) it waits
 * BO_PROBE_LATE (2 s) before it touches the limit again.
 */
/* Round trips of 100 ms with the window full and callers waiting, from..until. */
static double run_ca(bo_window *w, int64_t from, int64_t until)
{
    bo_ticket tk[256];
    for (int64_t t = from; t < until; t += 100 * MS) {
        int n = w->cwnd < 256 ? (int)w->cwnd : 256;
        send_n(w, t, tk, n);
        bo_window_on_blocked(w, t);
        for (int i = 0; i < n; i++)
            bo_window_on_success(w, &tk[i], t + 100 * MS);
    }
    return w->cwnd;
}

START_TEST(test_probe_after_deep_cut)
{
    bo_config c = improved_cfg();
    bo_window w;
    bo_ticket tk[64];
    bo_window_init(&w, &c);
    throttled_at_0(&w);
    w.cwnd = 50;
    w.ssthresh = 50;
    send_n(&w, 0, tk, 50);
    for (int i = 0; i < 10; i++)
        bo_window_on_success(&w, &tk[i], 100 * MS);
    /* refused with 10 in flight, twice in a row: clamped to 10, a deep cut */
    ck_assert(bo_window_on_signal(&w, &tk[10], BO_SIGNAL_THROTTLE, 100 * MS));
    for (int i = 11; i < 50; i++)
        bo_window_on_release(&w, &tk[i]);
    send_n(&w, 100 * MS, tk + 50, 11);
    ck_assert(bo_window_on_signal(&w, &tk[60], BO_SIGNAL_THROTTLE, 101 * MS));
    for (int i = 50; i < 60; i++)
        bo_window_on_release(&w, &tk[i]);
    ck_assert_double_le(w.cwnd, 10 + EPS);
    ck_assert_int_eq(w.inflight, 0);
    /* 10 a round trip for 0.3 s: +1/8 a round trip, then the probe */
    double before = run_ca(&w, 200 * MS, 500 * MS);
    ck_assert_double_le(before, 10.5);
    double after = run_ca(&w, 500 * MS, 900 * MS);
    ck_assert_double_ge(after, 20);
}
END_TEST

/*
 * A throttle with a Retry-After of 1 s costs the call it hits a second:
 * congestion avoidance grows one step per Retry-After, not per round trip
 * (100 ms here: 10x slower), and as before once throttles carry no hint.
 */
START_TEST(test_avoidance_slower_under_retry_after)
{
    bo_config c = improved_cfg();
    bo_window a, b;
    bo_window_init(&a, &c);
    throttled_at_0(&a);
    a.cwnd = a.ssthresh = 40;
    a.min_rtt_ns = 100 * MS;
    b = a;
    bo_window_on_hint(&b, 1000 * MS);
    double grew_plain = run_ca(&a, 0, 1000 * MS) - 40;
    double grew_hint = run_ca(&b, 0, 1000 * MS) - 40;
    ck_assert_double_gt(grew_plain, 1.0);
    ck_assert_double_eq_tol(grew_hint, grew_plain / 10, grew_plain / 100);
    bo_window_on_hint(&b, 0); /* the next throttle carried none */
    double from = b.cwnd;
    ck_assert_double_eq_tol(run_ca(&b, 1000 * MS, 2000 * MS) - from, grew_plain, grew_plain / 10);
}
END_TEST

START_TEST(test_no_probe_soon_after_shallow_cut)
{
    bo_config c = improved_cfg();
    bo_window w;
    bo_ticket tk[64];
    bo_window_init(&w, &c);
    throttled_at_0(&w);
    w.cwnd = 50;
    w.ssthresh = 1024;
    send_n(&w, 0, tk, 50);
    for (int i = 0; i < 49; i++)
        bo_window_on_success(&w, &tk[i], 100 * MS);
    ck_assert(bo_window_on_signal(&w, &tk[49], BO_SIGNAL_THROTTLE, 100 * MS));
    double ss = w.cwnd;
    ck_assert_double_ge(ss, 40);
    double later = run_ca(&w, 200 * MS, 1900 * MS);
    ck_assert_double_le(later, ss * 1.1); /* +1/8 a round trip, no probe */
}
END_TEST

/*
 * A server closed for a while refuses every attempt whatever the pace:
 * with nothing through since the last cut, a throttle does not cut the
 * pace again (it went to 0 and was divided by).
 */
START_TEST(test_closed_server_keeps_pace)
{
    bo_config c = improved_cfg();
    bo_window w;
    bo_ticket tk;
    bo_window_init(&w, &c);
    for (int i = 0; i < 10; i++) {
        bo_window_on_send(&w, i * 10 * MS, &tk);
        bo_window_on_success(&w, &tk, i * 10 * MS + 5 * MS);
    }
    bo_window_on_send(&w, 200 * MS, &tk);
    ck_assert(bo_window_on_signal(&w, &tk, BO_SIGNAL_THROTTLE, 200 * MS));
    double pace = w.rate_limit_hz;
    ck_assert_double_gt(pace, 0);
    for (int64_t t = 300 * MS; t < 2000 * MS; t += 100 * MS) {
        bo_window_on_send(&w, t, &tk);
        bo_window_on_signal(&w, &tk, BO_SIGNAL_THROTTLE, t);
    }
    ck_assert_double_eq_tol(w.rate_limit_hz, pace, EPS);
    ck_assert_int_lt(bo_window_next_send_ns(&w, 2000 * MS), 3000 * MS);
}
END_TEST

/*
 * A concurrency cap refuses only the attempt sent with more in flight than
 * any success had: that is no evidence of a rate, and a constant
 * Retry-After does not make it one (the engine no longer reads it).
 */
START_TEST(test_concurrency_throttle_is_not_a_rate)
{
    bo_config c = improved_cfg();
    bo_window w;
    bo_ticket tk[6];
    bo_window_init(&w, &c);
    send_n(&w, 0, tk, 5); /* in flight before each: 0..4 */
    for (int i = 0; i < 4; i++)
        bo_window_on_success(&w, &tk[i], 100 * MS);
    ck_assert(bo_window_on_signal(&w, &tk[4], BO_SIGNAL_THROTTLE, 100 * MS));
    ck_assert_double_eq_tol(w.rate_limit_hz, 0, EPS);
    /* A second cut in a row clamps the window to what was in flight. */
    send_n(&w, 110 * MS, tk, 4);
    bo_ticket extra;
    bo_window_on_send(&w, 110 * MS, &extra); /* 4 in flight before it */
    ck_assert(bo_window_on_signal(&w, &extra, BO_SIGNAL_THROTTLE, 111 * MS));
    ck_assert_double_le(w.cwnd, 4 + EPS);
}
END_TEST


/* ---- room: a destination that has not throttled ---- */

/*
 * Before any answer the first window is 4 x BACKOFF_WINDOW, one send every
 * 0.5 ms; a throttle then sets the window to what was in flight when the
 * refused attempt left (the server's concurrency), and slow start goes on to
 * beta x the first window.
 */
START_TEST(test_room_first_window)
{
    bo_config c = improved_cfg();
    bo_window w;
    bo_ticket tk[80];
    bo_window_init(&w, &c);
    int64_t t = 0;
    for (int i = 0; i < 80; i++) {
        ck_assert(bo_window_can_send(&w, t));
        bo_window_on_send(&w, t, &tk[i]);
        ck_assert_int_eq(bo_window_next_send_ns(&w, t), t + MS / 2);
        t += MS / 2;
    }
    ck_assert(!bo_window_can_send(&w, t));
    ck_assert(bo_window_on_signal(&w, &tk[60], BO_SIGNAL_THROTTLE, 50 * MS));
    ck_assert_double_eq_tol(w.cwnd, 60, EPS);
    ck_assert_double_eq_tol(w.ssthresh, 80 * 0.9, EPS);
}
END_TEST

/* A success of an attempt sent with n in flight opens the window to 3 (n + 1); no pacing. */
START_TEST(test_room_grows_by_proven_concurrency)
{
    bo_config c = improved_cfg();
    bo_window w;
    bo_ticket tk[10], t1;
    bo_window_init(&w, &c);
    send_n(&w, 0, tk, 10);
    bo_window_on_success(&w, &tk[9], 100 * MS);
    ck_assert_double_eq_tol(w.cwnd, 30, EPS);
    bo_window_on_success(&w, &tk[0], 100 * MS);
    ck_assert_double_eq_tol(w.cwnd, 30, EPS); /* 3 x 1 proves less: nothing lost */
    bo_window_on_send(&w, 100 * MS, &t1);
    ck_assert_int_eq(bo_window_next_send_ns(&w, 100 * MS), 100 * MS);
}
END_TEST

/*
 * The first throttle after room falls to what was measured (here the 40 in
 * flight a success had), slow start going on to halfway to beta x the
 * window; successes of attempts sent before the cut then bring the window
 * back to the concurrency they prove, up to beta x the in-flight count the
 * refused attempt left with.
 */
START_TEST(test_room_first_cut_to_measured)
{
    bo_config c = improved_cfg();
    bo_window w;
    bo_ticket a[40], b[100];
    bo_window_init(&w, &c);
    send_n(&w, 0, a, 40);
    for (int i = 0; i < 40; i++)
        bo_window_on_success(&w, &a[i], 100 * MS);
    ck_assert_double_eq_tol(w.cwnd, 120, EPS);
    send_n(&w, 100 * MS, b, 100);
    ck_assert(bo_window_on_signal(&w, &b[99], BO_SIGNAL_THROTTLE, 110 * MS));
    ck_assert_double_eq_tol(w.cwnd, 40, EPS);
    ck_assert_double_eq_tol(w.ssthresh, sqrt(40 * 120 * 0.9), 1e-6);
    bo_window_on_success(&w, &b[70], 200 * MS);
    ck_assert_double_eq_tol(w.cwnd, 71, EPS);
    bo_window_on_success(&w, &b[95], 200 * MS);
    ck_assert_double_eq_tol(w.cwnd, 0.9 * 99, EPS);
    /* room is over: sends are paced again */
    bo_ticket t1;
    bo_window_on_send(&w, 300 * MS, &t1);
    ck_assert_int_gt(bo_window_next_send_ns(&w, 300 * MS), 300 * MS);
}
END_TEST

/*
 * Held requests are not a window: a destination used one request at a time
 * (each success proves 1 in flight, 3 allowed) keeps the first window's room
 * for a burst, however many sequential requests came before: 25 at once all
 * go, those past the window itself at the first window's pace; a throttle
 * ends that room.
 */
START_TEST(test_room_burst_after_sequential_use)
{
    bo_config c = improved_cfg();
    bo_window w;
    bo_ticket t1, tk[80];
    bo_window_init(&w, &c);
    int64_t t = 0;
    for (int i = 0; i < 200; i++, t += MS) {
        bo_window_on_send(&w, t, &t1);
        bo_window_on_success(&w, &t1, t + MS / 2);
    }
    ck_assert_double_eq_tol(w.cwnd, c.window, EPS); /* nothing proved more */
    for (int i = 0; i < 25; i++) {
        ck_assert(bo_window_can_send(&w, t));
        bo_window_on_send(&w, t, &tk[i]);
        /* at once within the window, then 0.5 ms apart */
        ck_assert_int_eq(bo_window_next_send_ns(&w, t), (i + 1 <= (int)c.window ? t : t + MS / 2));
        t = bo_window_next_send_ns(&w, t);
    }
    for (int i = 25; i < 80; i++, t += MS / 2)
        bo_window_on_send(&w, t, &tk[i]);
    ck_assert(!bo_window_can_send(&w, t)); /* the first window's 80, not more */
    for (int i = 0; i < 80; i++)
        bo_window_on_release(&w, &tk[i]);
    bo_window_on_send(&w, t, &t1);
    ck_assert(bo_window_on_signal(&w, &t1, BO_SIGNAL_THROTTLE, t + MS));
    t += 2 * MS;
    double room = 0;
    for (; bo_window_can_send(&w, t) && room < 80; room++)
        bo_window_on_send(&w, t, &tk[(int)room]);
    ck_assert_double_le(room, w.cwnd + 1); /* throttled: the window is its own again */
}
END_TEST

/* A minute without a throttle or a loss, and the destination has room again. */
START_TEST(test_room_returns_after_a_quiet_minute)
{
    bo_config c = improved_cfg();
    bo_window w;
    bo_ticket tk;
    bo_window_init(&w, &c);
    throttled_at_0(&w);
    bo_window_on_send(&w, 0, &tk);
    bo_window_on_success(&w, &tk, 100 * MS);
    bo_window_on_send(&w, 59000 * MS, &tk);
    ck_assert_int_gt(bo_window_next_send_ns(&w, 59000 * MS), 59000 * MS);
    bo_window_on_success(&w, &tk, 59100 * MS);
    bo_window_on_send(&w, 60000 * MS, &tk);
    ck_assert_int_eq(bo_window_next_send_ns(&w, 60000 * MS), 60000 * MS);
}
END_TEST

/* ---- held requests ---- */

/*
 * A window of 20 whose destination throttled 3 s ago (aging applies from 2 s
 * on, room from 60 s): its round trip is 10 ms, so an attempt stops counting
 * once it is 250 ms old (8 round trips, at least 250 ms) and an attempt sent
 * after it was answered.
 */
static void held_setup(bo_window *w, const bo_config *c)
{
    bo_ticket tk;
    bo_window_init(w, c);
    throttled_at_0(w);
    bo_window_on_send(w, 3000 * MS, &tk);
    bo_window_on_success(w, &tk, 3010 * MS);
    ck_assert_int_eq(w->srtt_ns, 10 * MS);
    w->cwnd = 20;
}

START_TEST(test_held_stop_counting_behind_newer_answers)
{
    bo_config c = improved_cfg();
    bo_window w;
    bo_ticket held[19], q1, q2;
    held_setup(&w, &c);
    send_n(&w, 3100 * MS, held, 19); /* a long poll each: bin [3.0, 3.125) s */
    bo_window_on_send(&w, 3200 * MS, &q1);
    ck_assert(!bo_window_can_send(&w, 3200 * MS));
    bo_window_on_success(&w, &q1, 3210 * MS); /* newer, answered */
    w.cwnd = 20;
    bo_window_on_send(&w, 3210 * MS, &q2);
    ck_assert(!bo_window_can_send(&w, 3300 * MS));
    ck_assert_int_eq(bo_window_counted(&w, 3300 * MS), 20);
    ck_assert_int_eq(bo_window_next_room_ns(&w, 3300 * MS), 3375 * MS);
    ck_assert(!bo_window_can_send(&w, 3370 * MS));
    ck_assert(bo_window_can_send(&w, 3376 * MS));
    ck_assert_int_eq(bo_window_counted(&w, 3376 * MS), 1);
    ck_assert_int_eq(w.inflight, 20); /* still in flight, only not counted */
    /* one of them ends: the count of what ages goes down, never below zero */
    bo_window_on_success(&w, &held[0], 3400 * MS);
    ck_assert_int_eq(bo_window_counted(&w, 3400 * MS), 1);
    ck_assert_int_eq(w.inflight, 19);
    /* a throttle: everything in flight counts again, for at least 2 s */
    bo_window_on_signal(&w, &q2, BO_SIGNAL_THROTTLE, 3500 * MS);
    ck_assert_int_eq(bo_window_counted(&w, 3500 * MS), 18);
    ck_assert_int_eq(bo_window_counted(&w, 5400 * MS), 18);
    ck_assert_int_eq(bo_window_counted(&w, 5600 * MS), 0);
}
END_TEST

/*
 * With nothing newer answered (a server that stopped answering looks the
 * same as long polls), attempts stop counting only at 4 bounds, at least a
 * second: a window full of abandoned attempts frees itself all the same.
 */
START_TEST(test_held_without_newer_answers_age_late)
{
    bo_config c = improved_cfg();
    bo_window w;
    bo_ticket held[20];
    held_setup(&w, &c);
    send_n(&w, 3100 * MS, held, 20);
    ck_assert_int_eq(bo_window_next_room_ns(&w, 3300 * MS), 4125 * MS);
    ck_assert(!bo_window_can_send(&w, 4120 * MS));
    ck_assert(bo_window_can_send(&w, 4126 * MS));
    ck_assert_int_eq(bo_window_counted(&w, 4126 * MS), 0);
}
END_TEST

/* The shim may give back leases of a dead process: the bins never count more than is in flight,
 * and start afresh when nothing is. */
START_TEST(test_held_counts_follow_the_shim)
{
    bo_config c = improved_cfg();
    bo_window w;
    bo_ticket held[10], t1;
    held_setup(&w, &c);
    send_n(&w, 3100 * MS, held, 10);
    w.inflight = 3; /* a dead process's 7 leases reaped */
    ck_assert_int_le(bo_window_counted(&w, 3200 * MS), 3);
    ck_assert_int_eq(bo_window_counted(&w, 5200 * MS), 0);
    w.inflight = 0;
    bo_window_on_send(&w, 5300 * MS, &t1);
    ck_assert_int_eq(bo_window_counted(&w, 5300 * MS), 1);
    ck_assert_uint_eq(w.held_young, 1);
    /* leases the shim counts anew after a crash, with no send here: old, once aging
     * applies (they must not hold the window for good), all of them while it does not */
    w.inflight = 20;
    ck_assert_int_eq(bo_window_counted(&w, 5300 * MS), 1);
    bo_window_on_signal(&w, &t1, BO_SIGNAL_THROTTLE, 5400 * MS);
    ck_assert_int_eq(bo_window_counted(&w, 5400 * MS), 19);
}
END_TEST

static Suite *window_suite(void)
{
    Suite *s = suite_create("window");
    TCase *tc = tcase_create("article");
    tcase_add_test(tc, test_init_defaults);
    tcase_add_test(tc, test_can_send_counts_slots);
    tcase_add_test(tc, test_slow_start_plus_one);
    tcase_add_test(tc, test_inflight_bound);
    tcase_add_test(tc, test_avoidance_plus_one_over_cwnd);
    tcase_add_test(tc, test_window_max);
    tcase_add_test(tc, test_reno_decrease);
    tcase_add_test(tc, test_tahoe_decrease);
    tcase_add_test(tc, test_signals_before_decrease_ignored);
    tcase_add_test(tc, test_no_signal_is_release_only);
    tcase_add_test(tc, test_loss_to_one_probe);
    suite_add_tcase(s, tc);
    TCase *ti = tcase_create("improved");
    tcase_add_test(ti, test_article_mode_never_paces);
    tcase_add_test(ti, test_pacing_spreads_sends);
    tcase_add_test(ti, test_app_limited_unless_blocked);
    tcase_add_test(ti, test_bdp_sizing_on_decrease);
    tcase_add_test(ti, test_delivery_rate_sample);
    tcase_add_test(ti, test_rate_evidence_paces);
    tcase_add_test(ti, test_concurrency_throttle_is_not_a_rate);
    tcase_add_test(ti, test_rate_cut_forgets_the_burst);
    tcase_add_test(ti, test_rate_learns_the_bucket_beyond_its_burst);
    tcase_add_test(ti, test_rate_cuts_again_at_the_new_pace);
    tcase_add_test(ti, test_rate_unused_pace_is_no_proof);
    tcase_add_test(ti, test_cap_drop_is_not_a_rate);
    tcase_add_test(ti, test_probe_after_deep_cut);
    tcase_add_test(ti, test_closed_server_keeps_pace);
    tcase_add_test(ti, test_no_probe_soon_after_shallow_cut);
    tcase_add_test(ti, test_avoidance_slower_under_retry_after);
    suite_add_tcase(s, ti);
    TCase *tr = tcase_create("room");
    tcase_add_test(tr, test_room_first_window);
    tcase_add_test(tr, test_room_grows_by_proven_concurrency);
    tcase_add_test(tr, test_room_first_cut_to_measured);
    tcase_add_test(tr, test_room_returns_after_a_quiet_minute);
    tcase_add_test(tr, test_room_burst_after_sequential_use);
    tcase_add_test(tr, test_held_stop_counting_behind_newer_answers);
    tcase_add_test(tr, test_held_without_newer_answers_age_late);
    tcase_add_test(tr, test_held_counts_follow_the_shim);
    suite_add_tcase(s, tr);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(window_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
