/*
 * Unit tests for bo_responsive (002's AutoSleeper): the up, down and zero
 * transitions, the success streak, and the randomization bounds.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bo_config.h"
#include "bo_responsive.h"

#define MS 1000000LL

static bo_config make_cfg(double jitter, unsigned down_after)
{
    bo_config c;
    bo_config_defaults(&c);
    c.policy = BO_POLICY_RESPONSIVE;
    c.base_ms = 100;
    c.cap_ms = 20000;
    c.up = 1.5;
    c.down = 0.9;
    c.down_after = down_after;
    c.jitter = jitter;
    return c;
}

START_TEST(test_starts_without_pacing)
{
    bo_config c = make_cfg(0.1, 3);
    bo_responsive r;
    bo_rng g;
    bo_rng_seed(&g, 1);
    bo_responsive_init(&r);
    ck_assert_int_eq(bo_responsive_interval_ns(&r), 0);
    /* Successes while not pacing change nothing, not even the streak. */
    for (int i = 0; i < 10; i++)
        bo_responsive_on_success(&r, &c, &g);
    ck_assert_int_eq(bo_responsive_interval_ns(&r), 0);
    ck_assert_uint_eq(r.successes, 0);
}
END_TEST

START_TEST(test_up_sequence_exact_without_jitter)
{
    static const int64_t want_ms[] = {100, 150, 225, 337, 506};
    bo_config c = make_cfg(0, 3);
    bo_responsive r;
    bo_rng g;
    bo_rng_seed(&g, 1);
    bo_responsive_init(&r);
    for (size_t i = 0; i < sizeof want_ms / sizeof want_ms[0]; i++) {
        bo_responsive_on_failure(&r, &c, &g);
        ck_assert_int_eq(bo_responsive_interval_ns(&r) / MS, want_ms[i]);
    }
    ck_assert_int_eq(bo_responsive_interval_ns(&r), 506250000);
}
END_TEST

START_TEST(test_up_stops_at_cap)
{
    bo_config c = make_cfg(0.1, 3);
    bo_responsive r;
    bo_rng g;
    bo_rng_seed(&g, 9);
    bo_responsive_init(&r);
    for (int i = 0; i < 100; i++) {
        bo_responsive_on_failure(&r, &c, &g);
        ck_assert_int_le(bo_responsive_interval_ns(&r), 20000 * MS);
    }
    ck_assert_int_eq(bo_responsive_interval_ns(&r), 20000 * MS);
}
END_TEST

START_TEST(test_down_after_streak)
{
    bo_config c = make_cfg(0, 3);
    bo_responsive r;
    bo_rng g;
    bo_rng_seed(&g, 1);
    bo_responsive_init(&r);
    r.interval_ns = 1000 * MS;
    bo_responsive_on_success(&r, &c, &g);
    bo_responsive_on_success(&r, &c, &g);
    ck_assert_int_eq(bo_responsive_interval_ns(&r), 1000 * MS);
    ck_assert_uint_eq(r.successes, 2);
    bo_responsive_on_success(&r, &c, &g);
    ck_assert_int_eq(bo_responsive_interval_ns(&r), 900 * MS);
    ck_assert_uint_eq(r.successes, 0);
    /* The next decrease needs a full new streak. */
    bo_responsive_on_success(&r, &c, &g);
    bo_responsive_on_success(&r, &c, &g);
    ck_assert_int_eq(bo_responsive_interval_ns(&r), 900 * MS);
    bo_responsive_on_success(&r, &c, &g);
    ck_assert_int_eq(bo_responsive_interval_ns(&r), 810 * MS);
}
END_TEST

START_TEST(test_failure_resets_streak)
{
    bo_config c = make_cfg(0, 3);
    bo_responsive r;
    bo_rng g;
    bo_rng_seed(&g, 1);
    bo_responsive_init(&r);
    r.interval_ns = 1000 * MS;
    bo_responsive_on_success(&r, &c, &g);
    bo_responsive_on_success(&r, &c, &g);
    bo_responsive_on_failure(&r, &c, &g);
    ck_assert_int_eq(bo_responsive_interval_ns(&r), 1500 * MS);
    ck_assert_uint_eq(r.successes, 0);
    bo_responsive_on_success(&r, &c, &g);
    bo_responsive_on_success(&r, &c, &g);
    ck_assert_int_eq(bo_responsive_interval_ns(&r), 1500 * MS);
    bo_responsive_on_success(&r, &c, &g);
    ck_assert_int_eq(bo_responsive_interval_ns(&r), 1350 * MS);
}
END_TEST

START_TEST(test_drops_to_zero_below_base)
{
    bo_config c = make_cfg(0, 1);
    bo_responsive r;
    bo_rng g;
    bo_rng_seed(&g, 1);
    bo_responsive_init(&r);
    bo_responsive_on_failure(&r, &c, &g); /* 100 ms */
    bo_responsive_on_failure(&r, &c, &g); /* 150 ms */
    bo_responsive_on_success(&r, &c, &g); /* 135 ms */
    ck_assert_int_eq(bo_responsive_interval_ns(&r), 135 * MS);
    bo_responsive_on_success(&r, &c, &g); /* 121.5 ms */
    bo_responsive_on_success(&r, &c, &g); /* 109.35 ms */
    bo_responsive_on_success(&r, &c, &g); /* 98.4 < base: off */
    ck_assert_int_eq(bo_responsive_interval_ns(&r), 0);
    /* And the next failure starts again from base. */
    bo_responsive_on_failure(&r, &c, &g);
    ck_assert_int_eq(bo_responsive_interval_ns(&r), 100 * MS);
}
END_TEST

START_TEST(test_no_jitter_draws_nothing)
{
    bo_config c = make_cfg(0, 1);
    bo_responsive r;
    bo_rng g, before;
    bo_rng_seed(&g, 4);
    before = g;
    bo_responsive_init(&r);
    for (int i = 0; i < 5; i++)
        bo_responsive_on_failure(&r, &c, &g);
    for (int i = 0; i < 5; i++)
        bo_responsive_on_success(&r, &c, &g);
    ck_assert(memcmp(&g, &before, sizeof g) == 0);
}
END_TEST

/* goUp with jitter j: uniform in [x - j*x, x + j*x), x = interval * up. */
START_TEST(test_up_randomization_bounds)
{
    bo_config c = make_cfg(0.1, 3);
    int64_t lo = INT64_MAX, hi = 0;
    for (uint64_t seed = 0; seed < 2000; seed++) {
        bo_responsive r;
        bo_rng g;
        bo_rng_seed(&g, seed);
        bo_responsive_init(&r);
        r.interval_ns = 1000 * MS;
        bo_responsive_on_failure(&r, &c, &g);
        int64_t v = bo_responsive_interval_ns(&r);
        ck_assert_int_ge(v, 1350 * MS);
        ck_assert_int_lt(v, 1650 * MS);
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    /* Both sides of x are used, close to the ends. */
    ck_assert_int_lt(lo, 1360 * MS);
    ck_assert_int_gt(hi, 1640 * MS);
}
END_TEST

START_TEST(test_down_randomization_bounds)
{
    bo_config c = make_cfg(0.1, 1);
    int64_t lo = INT64_MAX, hi = 0;
    for (uint64_t seed = 0; seed < 2000; seed++) {
        bo_responsive r;
        bo_rng g;
        bo_rng_seed(&g, seed);
        bo_responsive_init(&r);
        r.interval_ns = 1000 * MS;
        bo_responsive_on_success(&r, &c, &g);
        int64_t v = bo_responsive_interval_ns(&r);
        ck_assert_int_ge(v, 810 * MS);
        ck_assert_int_lt(v, 990 * MS);
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    ck_assert_int_lt(lo, 820 * MS);
    ck_assert_int_gt(hi, 980 * MS);
}
END_TEST

/*
 * MaxRandomization is cap: with jitter 1 and x = 1350 ms, cap 1000 ms, the
 * spread is +-1000 ms (not +-1350), so nothing falls below 350 ms, and the
 * result never exceeds the cap.
 */
START_TEST(test_randomization_limited_by_cap)
{
    bo_config c = make_cfg(1.0, 1);
    int below_cap = 0, at_cap = 0;
    c.cap_ms = 1000;
    for (uint64_t seed = 0; seed < 2000; seed++) {
        bo_responsive r;
        bo_rng g;
        bo_rng_seed(&g, seed);
        bo_responsive_init(&r);
        r.interval_ns = 900 * MS;
        bo_responsive_on_failure(&r, &c, &g);
        int64_t v = bo_responsive_interval_ns(&r);
        ck_assert_int_ge(v, 350 * MS);
        ck_assert_int_le(v, 1000 * MS);
        below_cap += v < 1000 * MS;
        at_cap += v == 1000 * MS;
    }
    ck_assert_int_gt(below_cap, 0);
    ck_assert_int_gt(at_cap, 0);
}
END_TEST


/*
 * Concurrent failures of attempts sent under the same gap raise it once: the
 * first failure after a raise counts only if its attempt was sent after it.
 */
START_TEST(test_concurrent_failures_raise_once)
{
    bo_config c = make_cfg(0, 10);
    bo_responsive r;
    bo_rng g;
    bo_rng_seed(&g, 1);
    bo_responsive_init(&r);
    /* 50 attempts all sent at t=0, failing at t=10..59 ms: one raise, to base. */
    ck_assert(bo_responsive_on_failure_sent(&r, &c, &g, 0, 10 * MS));
    for (int i = 1; i < 50; i++)
        ck_assert(!bo_responsive_on_failure_sent(&r, &c, &g, 0, (10 + i) * MS));
    ck_assert_int_eq(bo_responsive_interval_ns(&r), 100 * MS);
    /* An attempt sent after the raise raises it again (x1.5, no jitter). */
    ck_assert(bo_responsive_on_failure_sent(&r, &c, &g, 20 * MS, 200 * MS));
    ck_assert_int_eq(bo_responsive_interval_ns(&r), 150 * MS);
    /* An ignored failure still breaks the success streak. */
    for (int i = 0; i < 9; i++)
        bo_responsive_on_success(&r, &c, &g);
    ck_assert(!bo_responsive_on_failure_sent(&r, &c, &g, 100 * MS, 300 * MS));
    bo_responsive_on_success(&r, &c, &g);
    ck_assert_int_eq(bo_responsive_interval_ns(&r), 150 * MS);
}
END_TEST

static Suite *responsive_suite(void)
{
    Suite *s = suite_create("responsive");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_starts_without_pacing);
    tcase_add_test(tc, test_up_sequence_exact_without_jitter);
    tcase_add_test(tc, test_up_stops_at_cap);
    tcase_add_test(tc, test_down_after_streak);
    tcase_add_test(tc, test_failure_resets_streak);
    tcase_add_test(tc, test_drops_to_zero_below_base);
    tcase_add_test(tc, test_no_jitter_draws_nothing);
    tcase_add_test(tc, test_up_randomization_bounds);
    tcase_add_test(tc, test_down_randomization_bounds);
    tcase_add_test(tc, test_randomization_limited_by_cap);
    tcase_add_test(tc, test_concurrent_failures_raise_once);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(responsive_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
