/*
 * Unit tests for bo_adaptive (AWS SDKs' adaptive retry mode): off until the
 * first throttle, the rate clocker's half-second buckets and smoothing, the
 * cut to 0.7 of the rate in use, the CUBIC curve back to it, the bucket's
 * floor of 0.5 per second and its cap at twice the measured rate; and the
 * engine's admission and retry delay under the policy.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bo_adaptive.h"
#include "bo_engine.h"

#define MS 1000000LL
#define S 1000000000LL

/* n answers spread evenly over [from, to), none a throttle. */
static void answers(bo_adaptive *a, int n, int64_t from, int64_t to)
{
    for (int i = 0; i < n; i++)
        bo_adaptive_on_answer(a, false, from + (to - from) * i / n);
}

START_TEST(test_off_until_the_first_throttle)
{
    bo_adaptive a;
    bo_adaptive_init(&a, 0);
    answers(&a, 1000, 0, 10 * S);
    for (int64_t t = 0; t < S; t += MS) {
        ck_assert_int_eq(bo_adaptive_next_send_ns(&a, t), t);
        bo_adaptive_on_send(&a, t);
    }
    ck_assert(!a.enabled);
}
END_TEST

/* botocore's RateClocker: buckets counted from the whole second the clock
 * started in, the answer that opens a new bucket counted in the old one. */
START_TEST(test_rate_clocker_buckets)
{
    bo_adaptive a;
    bo_adaptive_init(&a, 300 * MS);
    answers(&a, 10, 300 * MS, 500 * MS);
    ck_assert(a.measured == 0);
    bo_adaptive_on_answer(&a, false, 500 * MS);
    /* 11 answers over the 0.5 s since 0: 22/s, smoothed in at 0.8 */
    ck_assert(fabs(a.measured - 17.6) < 1e-9);
    answers(&a, 4, 600 * MS, 1000 * MS);
    bo_adaptive_on_answer(&a, false, 1000 * MS);
    ck_assert(fabs(a.measured - (10 * 0.8 + 17.6 * 0.2)) < 1e-9);
}
END_TEST

START_TEST(test_throttle_cuts_to_beta_of_the_rate_in_use)
{
    bo_adaptive a;
    bo_adaptive_init(&a, 0);
    answers(&a, 50, 0, 500 * MS);
    bo_adaptive_on_answer(&a, false, 500 * MS); /* 102/s, 81.6 smoothed */
    double m = a.measured;
    bo_adaptive_on_answer(&a, true, 510 * MS);
    ck_assert(a.enabled);
    ck_assert(fabs(a.top - m) < 1e-9);
    ck_assert(fabs(a.fill_rate - m * BO_ADAPTIVE_BETA) < 1e-9);
    ck_assert(fabs(a.k - cbrt(m * 0.3 / 0.4)) < 1e-9);
    /* a second throttle at once: the rate in use is now the bucket's, lower */
    bo_adaptive_on_answer(&a, true, 520 * MS);
    ck_assert(fabs(a.top - m * BO_ADAPTIVE_BETA) < 1e-9);
    ck_assert(fabs(a.fill_rate - m * BO_ADAPTIVE_BETA * BO_ADAPTIVE_BETA) < 1e-9);
}
END_TEST

/* Once on, every attempt waits for a token at the bucket's rate. */
START_TEST(test_bucket_paces_once_on)
{
    bo_adaptive a;
    bo_adaptive_init(&a, 0);
    answers(&a, 50, 0, 500 * MS);
    bo_adaptive_on_answer(&a, false, 500 * MS);
    bo_adaptive_on_answer(&a, true, 500 * MS);
    double rate = a.fill_rate;
    int64_t t = 500 * MS;
    int sent = 0;
    while (t < 2500 * MS) {
        int64_t next = bo_adaptive_next_send_ns(&a, t);
        ck_assert_int_ge(next, t);
        t = next;
        bo_adaptive_on_send(&a, t);
        sent++;
    }
    /* 2 s at `rate`, plus the tokens the bucket held (at most max(rate, 1)) */
    ck_assert_int_le(sent, (int)(2 * rate + rate + 2));
    ck_assert_int_ge(sent, (int)(2 * rate) - 1);
}
END_TEST

/* The cubic: 0.7 x top right after the throttle, top again K seconds later. */
START_TEST(test_cubic_returns_to_the_top)
{
    bo_adaptive a;
    bo_adaptive_init(&a, 0);
    for (int64_t t = 0; t < 5 * S; t += 10 * MS) /* 100 answers a second */
        bo_adaptive_on_answer(&a, false, t);
    bo_adaptive_on_answer(&a, true, 5 * S);
    double top = a.top, k = a.k;
    ck_assert(top > 90 && top < 110);
    int64_t at_k = 5 * S + (int64_t)(k * S);
    for (int64_t t = 5 * S + 10 * MS; t < at_k; t += 10 * MS)
        bo_adaptive_on_answer(&a, false, t);
    bo_adaptive_on_answer(&a, false, at_k);
    ck_assert(fabs(a.fill_rate - top) < 0.5); /* the curve's plateau at top */
    /* and it never runs past twice the measured rate */
    for (int64_t t = at_k; t < at_k + 60 * S; t += 10 * MS)
        bo_adaptive_on_answer(&a, false, t);
    ck_assert(a.fill_rate <= 2 * a.measured + 1e-9);
}
END_TEST

START_TEST(test_rate_floor)
{
    bo_adaptive a;
    bo_adaptive_init(&a, 0);
    bo_adaptive_on_answer(&a, true, 100 * MS); /* nothing measured yet */
    ck_assert(a.enabled);
    ck_assert(fabs(a.fill_rate - BO_ADAPTIVE_MIN_RATE) < 1e-12);
    /* the bucket earned 0.1 token before the throttle: the next waits 1.8 s */
    ck_assert_int_eq(bo_adaptive_next_send_ns(&a, 100 * MS), 1900 * MS);
}
END_TEST

static bo_config adaptive_cfg(void)
{
    bo_config c;
    bo_config_defaults(&c);
    c.policy = BO_POLICY_AWS_ADAPTIVE;
    c.max_attempts = 0;
    c.retry_budget = 0;
    return c;
}

/* The engine: a throttle turns the bucket on, and the next admission waits for a token;
 * the retry's own delay is full jitter, rand x min(base x 2^n, cap). */
START_TEST(test_engine_waits_for_tokens)
{
    bo_config c = adaptive_cfg();
    bo_dest d;
    bo_call call;
    bo_rng rng;
    int64_t until;
    bo_rng_seed(&rng, 3);
    bo_dest_init(&d, &c, 0);
    bo_outcome ok = {.verdict = BO_VERDICT_SUCCESS, .signal = BO_SIGNAL_NONE};
    bo_outcome throttle = {.verdict = BO_VERDICT_RETRY, .signal = BO_SIGNAL_THROTTLE};
    int64_t t = 0;
    for (int i = 0; i < 100; i++, t += 10 * MS) {
        bo_call_begin(&call, t);
        ck_assert_int_eq(bo_dest_admit(&d, &c, &call, t, &until), BO_ADMIT_GO);
        ck_assert_int_eq(bo_dest_complete(&d, &c, &call, ok, -1, t + 5 * MS, &rng, &until),
                         BO_NEXT_DONE);
    }
    bo_call_begin(&call, t);
    ck_assert_int_eq(bo_dest_admit(&d, &c, &call, t, &until), BO_ADMIT_GO);
    ck_assert_int_eq(bo_dest_complete(&d, &c, &call, throttle, -1, t + 5 * MS, &rng, &until),
                     BO_NEXT_RETRY);
    ck_assert_int_le(until - (t + 5 * MS), c.base_ms * MS);
    ck_assert(d.adaptive.enabled);
    /* the tokens held at the cut go, then one per 1/rate */
    int64_t now = t + 5 * MS;
    int go = 0;
    int64_t first_wait = -1;
    for (int i = 0; i < 200 && first_wait < 0; i++) {
        bo_call b;
        bo_call_begin(&b, now);
        if (bo_dest_admit(&d, &c, &b, now, &until) == BO_ADMIT_GO)
            go++;
        else
            first_wait = until - now;
    }
    ck_assert_int_le(go, (int)d.adaptive.max_tokens);
    ck_assert_int_gt(first_wait, 0);
    ck_assert_int_le(first_wait, (int64_t)(S / d.adaptive.fill_rate) + 1);
}
END_TEST

static Suite *adaptive_suite(void)
{
    Suite *s = suite_create("adaptive");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_off_until_the_first_throttle);
    tcase_add_test(tc, test_rate_clocker_buckets);
    tcase_add_test(tc, test_throttle_cuts_to_beta_of_the_rate_in_use);
    tcase_add_test(tc, test_bucket_paces_once_on);
    tcase_add_test(tc, test_cubic_returns_to_the_top);
    tcase_add_test(tc, test_rate_floor);
    tcase_add_test(tc, test_engine_waits_for_tokens);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(adaptive_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
