/*
 * Unit tests for bo_schedule: exact values for the deterministic schedules,
 * and for the randomized ones the bounds of each article's formula over
 * many seeds, the cap, and saturation at huge retry counts.
 */
#include <check.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "bo_config.h"
#include "bo_schedule.h"

#define MS 1000000LL
#define SEEDS 200
#define RETRIES 20

static bo_config make_cfg(bo_policy_kind kind, int64_t base_ms, int64_t cap_ms, double factor)
{
    bo_config c;
    bo_config_defaults(&c);
    c.policy = kind;
    c.base_ms = base_ms;
    c.cap_ms = cap_ms;
    c.factor = factor;
    return c;
}

/* min(cap, base * factor^n) in ns, computed independently of the module. */
static int64_t expect_exp(const bo_config *c, unsigned n)
{
    double t = (double)c->base_ms * MS;
    for (unsigned i = 0; i < n && t < (double)c->cap_ms * MS; i++)
        t *= c->factor;
    return t < (double)c->cap_ms * MS ? (int64_t)t : c->cap_ms * MS;
}

START_TEST(test_fixed_exact)
{
    bo_config c = make_cfg(BO_POLICY_FIXED, 250, 20000, 2);
    bo_schedule s;
    bo_rng r;
    bo_rng_seed(&r, 1);
    bo_schedule_init(&s);
    for (int n = 0; n < 50; n++)
        ck_assert_int_eq(bo_schedule_next_ns(&s, &c, &r), 250 * MS);
    ck_assert_uint_eq(s.retries, 50);
}
END_TEST

START_TEST(test_linear_exact_and_capped)
{
    bo_config c = make_cfg(BO_POLICY_LINEAR, 100, 1050, 2);
    bo_schedule s;
    bo_rng r;
    bo_rng_seed(&r, 1);
    bo_schedule_init(&s);
    for (int n = 0; n < 30; n++) {
        int64_t want = 100 * MS * (n + 1);
        if (want > 1050 * MS)
            want = 1050 * MS;
        ck_assert_int_eq(bo_schedule_next_ns(&s, &c, &r), want);
    }
}
END_TEST

START_TEST(test_exponential_exact)
{
    static const int64_t want_ms[] = {100, 200, 400, 800, 1600, 3200, 6400, 12800, 20000, 20000};
    bo_config c = make_cfg(BO_POLICY_EXPONENTIAL, 100, 20000, 2);
    bo_schedule s;
    bo_rng r;
    bo_rng_seed(&r, 1);
    bo_schedule_init(&s);
    for (size_t n = 0; n < sizeof want_ms / sizeof want_ms[0]; n++)
        ck_assert_int_eq(bo_schedule_next_ns(&s, &c, &r), want_ms[n] * MS);
}
END_TEST

START_TEST(test_exponential_uses_factor)
{
    static const int64_t want_ms[] = {10, 30, 90, 270, 810, 2430, 5000, 5000};
    bo_config c = make_cfg(BO_POLICY_EXPONENTIAL, 10, 5000, 3);
    bo_schedule s;
    bo_rng r;
    bo_rng_seed(&r, 1);
    bo_schedule_init(&s);
    for (size_t n = 0; n < sizeof want_ms / sizeof want_ms[0]; n++)
        ck_assert_int_eq(bo_schedule_next_ns(&s, &c, &r), want_ms[n] * MS);
}
END_TEST

START_TEST(test_full_jitter_bounds)
{
    bo_config c = make_cfg(BO_POLICY_FULL_JITTER, 100, 20000, 2);
    double sum[RETRIES] = {0};
    for (uint64_t seed = 0; seed < SEEDS; seed++) {
        bo_schedule s;
        bo_rng r;
        bo_rng_seed(&r, seed);
        bo_schedule_init(&s);
        for (unsigned n = 0; n < RETRIES; n++) {
            int64_t t = expect_exp(&c, n);
            int64_t d = bo_schedule_next_ns(&s, &c, &r);
            ck_assert_int_ge(d, 0);
            ck_assert_int_lt(d, t);
            sum[n] += (double)d / (double)t;
        }
    }
    /* Uniform over [0, t): the mean is t/2 (sd of the mean ~0.02 here). */
    for (unsigned n = 0; n < RETRIES; n++)
        ck_assert_double_eq_tol(sum[n] / SEEDS, 0.5, 0.1);
}
END_TEST

START_TEST(test_equal_jitter_bounds)
{
    bo_config c = make_cfg(BO_POLICY_EQUAL_JITTER, 100, 20000, 2);
    double sum[RETRIES] = {0};
    for (uint64_t seed = 0; seed < SEEDS; seed++) {
        bo_schedule s;
        bo_rng r;
        bo_rng_seed(&r, seed);
        bo_schedule_init(&s);
        for (unsigned n = 0; n < RETRIES; n++) {
            int64_t t = expect_exp(&c, n);
            int64_t d = bo_schedule_next_ns(&s, &c, &r);
            ck_assert_int_ge(d, t / 2);
            ck_assert_int_lt(d, t);
            sum[n] += (double)d / (double)t;
        }
    }
    for (unsigned n = 0; n < RETRIES; n++)
        ck_assert_double_eq_tol(sum[n] / SEEDS, 0.75, 0.05);
}
END_TEST

START_TEST(test_decorrelated_bounds)
{
    bo_config c = make_cfg(BO_POLICY_DECORRELATED_JITTER, 100, 20000, 2);
    int at_cap = 0;
    int64_t largest = 0;
    for (uint64_t seed = 0; seed < SEEDS; seed++) {
        bo_schedule s;
        bo_rng r;
        int64_t prev = 100 * MS;
        bo_rng_seed(&r, seed);
        bo_schedule_init(&s);
        for (unsigned n = 0; n < RETRIES; n++) {
            int64_t d = bo_schedule_next_ns(&s, &c, &r);
            int64_t hi = 3 * prev < 20000 * MS ? 3 * prev : 20000 * MS;
            ck_assert_int_ge(d, 100 * MS);
            ck_assert_int_le(d, hi);
            at_cap += d == 20000 * MS;
            largest = d > largest ? d : largest;
            prev = d;
        }
    }
    /* Over 4000 draws the walk reaches the cap, and never passes it. */
    ck_assert_int_gt(at_cap, 0);
    ck_assert_int_eq(largest, 20000 * MS);
}
END_TEST

START_TEST(test_gaussian_first_is_base_and_mean_near_d)
{
    bo_config c = make_cfg(BO_POLICY_GAUSSIAN_JITTER, 100, 20000, 2);
    double sum[RETRIES] = {0};
    c.jitter = 0.1;
    for (uint64_t seed = 0; seed < SEEDS; seed++) {
        bo_schedule s;
        bo_rng r;
        bo_rng_seed(&r, seed);
        bo_schedule_init(&s);
        for (unsigned n = 0; n < RETRIES; n++) {
            int64_t d = bo_schedule_next_ns(&s, &c, &r);
            ck_assert_int_ge(d, 0);
            if (n == 0)
                ck_assert_int_eq(d, 100 * MS);
            sum[n] += (double)d;
        }
    }
    for (unsigned n = 0; n < RETRIES; n++) {
        double d = (double)expect_exp(&c, n);
        ck_assert_double_eq_tol(sum[n] / SEEDS / d, 1.0, 0.05);
    }
}
END_TEST

START_TEST(test_gaussian_never_negative_and_jitter_after_cap)
{
    bo_config c = make_cfg(BO_POLICY_GAUSSIAN_JITTER, 100, 1000, 2);
    int above_cap = 0, zero = 0;
    c.jitter = 1.0; /* sd equal to d: about 16 % of raw draws are negative */
    for (uint64_t seed = 0; seed < SEEDS; seed++) {
        bo_schedule s;
        bo_rng r;
        bo_rng_seed(&r, seed);
        bo_schedule_init(&s);
        for (unsigned n = 0; n < RETRIES; n++) {
            int64_t d = bo_schedule_next_ns(&s, &c, &r);
            ck_assert_int_ge(d, 0);
            zero += d == 0;
            above_cap += d > 1000 * MS;
        }
    }
    ck_assert_int_gt(zero, 0);      /* the clamp at zero was exercised */
    ck_assert_int_gt(above_cap, 0); /* 003: the cap excludes the jitter */
}
END_TEST

START_TEST(test_gaussian_without_jitter_is_exponential)
{
    bo_config c = make_cfg(BO_POLICY_GAUSSIAN_JITTER, 100, 20000, 2.7);
    bo_schedule s;
    bo_rng r;
    c.jitter = 0;
    bo_rng_seed(&r, 3);
    bo_schedule_init(&s);
    for (unsigned n = 0; n < RETRIES; n++) {
        int64_t d = bo_schedule_next_ns(&s, &c, &r);
        double want = (double)expect_exp(&c, n);
        ck_assert_double_eq_tol((double)d, want, 2.0); /* ns rounding only */
    }
}
END_TEST

START_TEST(test_thain_bounds)
{
    bo_config c = make_cfg(BO_POLICY_THAIN, 100, 20000, 2);
    int at_cap = 0;
    for (uint64_t seed = 0; seed < SEEDS; seed++) {
        bo_schedule s;
        bo_rng r;
        bo_rng_seed(&r, seed);
        bo_schedule_init(&s);
        for (unsigned n = 0; n < RETRIES; n++) {
            double t = 100.0 * MS * pow(2, n);
            int64_t lo = t < 20000.0 * MS ? (int64_t)t : 20000 * MS;
            int64_t hi = 2 * t < 20000.0 * MS ? (int64_t)(2 * t) : 20000 * MS;
            int64_t d = bo_schedule_next_ns(&s, &c, &r);
            ck_assert_int_ge(d, lo);
            ck_assert_int_le(d, hi);
            at_cap += d == 20000 * MS;
        }
    }
    ck_assert_int_gt(at_cap, 0);
}
END_TEST

/* Every per-call schedule stays within [0, cap] and reaches the cap. */
START_TEST(test_cap_reached_never_exceeded)
{
    static const bo_policy_kind kinds[] = {
        BO_POLICY_FIXED, BO_POLICY_LINEAR, BO_POLICY_EXPONENTIAL, BO_POLICY_FULL_JITTER,
        BO_POLICY_EQUAL_JITTER, BO_POLICY_DECORRELATED_JITTER, BO_POLICY_THAIN};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        bo_config c = make_cfg(kinds[k], 50, 3000, 2);
        int64_t largest = 0;
        if (kinds[k] == BO_POLICY_FIXED)
            c.base_ms = c.cap_ms = 3000;
        for (uint64_t seed = 0; seed < SEEDS; seed++) {
            bo_schedule s;
            bo_rng r;
            bo_rng_seed(&r, seed);
            bo_schedule_init(&s);
            for (unsigned n = 0; n < 80; n++) {
                int64_t d = bo_schedule_next_ns(&s, &c, &r);
                ck_assert_int_ge(d, 0);
                ck_assert_int_le(d, 3000 * MS);
                largest = d > largest ? d : largest;
            }
        }
        /* Full jitter draws from [0, cap): it comes within 1 % of it. */
        ck_assert_msg(largest >= 2970 * MS, "policy %s never neared the cap (largest %lld ns)",
                      bo_policy_name(kinds[k]), (long long)largest);
    }
}
END_TEST

START_TEST(test_huge_n_saturates)
{
    static const bo_policy_kind kinds[] = {
        BO_POLICY_LINEAR, BO_POLICY_EXPONENTIAL, BO_POLICY_FULL_JITTER, BO_POLICY_EQUAL_JITTER,
        BO_POLICY_DECORRELATED_JITTER, BO_POLICY_GAUSSIAN_JITTER, BO_POLICY_THAIN};
    static const unsigned ns[] = {64, 1100, 100000, UINT_MAX - 1, UINT_MAX};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
            bo_config c = make_cfg(kinds[k], 100, 86400000, 100);
            bo_schedule s;
            bo_rng r;
            c.jitter = 0;
            bo_rng_seed(&r, i);
            bo_schedule_init(&s);
            s.retries = ns[i];
            s.prev_ns = 86400000 * MS;
            int64_t d = bo_schedule_next_ns(&s, &c, &r);
            ck_assert_int_ge(d, 0);
            ck_assert_int_le(d, 86400000 * MS);
            if (kinds[k] == BO_POLICY_LINEAR) {
                double want = 100.0 * MS * ((double)ns[i] + 1);
                ck_assert_int_eq(d, want < 86400000.0 * MS ? (int64_t)want : 86400000 * MS);
            }
            if (kinds[k] == BO_POLICY_EXPONENTIAL || kinds[k] == BO_POLICY_THAIN ||
                kinds[k] == BO_POLICY_GAUSSIAN_JITTER)
                ck_assert_int_eq(d, 86400000 * MS);
            if (kinds[k] == BO_POLICY_EQUAL_JITTER)
                ck_assert_int_ge(d, 43200000 * MS);
            /* The counter saturates rather than wrapping to 0. */
            ck_assert_uint_ge(s.retries, ns[i]);
        }
    }
}
END_TEST

START_TEST(test_no_schedule_policies_return_zero)
{
    static const bo_policy_kind kinds[] = {BO_POLICY_NONE, BO_POLICY_RESPONSIVE, BO_POLICY_AIMD};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        bo_config c = make_cfg(kinds[k], 100, 20000, 2);
        bo_schedule s;
        bo_rng r;
        bo_rng_seed(&r, 1);
        bo_schedule_init(&s);
        for (int n = 0; n < 10; n++)
            ck_assert_int_eq(bo_schedule_next_ns(&s, &c, &r), 0);
    }
}
END_TEST

START_TEST(test_same_seed_same_delays)
{
    bo_config c = make_cfg(BO_POLICY_DECORRELATED_JITTER, 100, 20000, 2);
    bo_schedule s1, s2;
    bo_rng r1, r2;
    int differ_from_other_seed = 0;
    bo_rng_seed(&r1, 77);
    bo_rng_seed(&r2, 77);
    bo_schedule_init(&s1);
    bo_schedule_init(&s2);
    for (int n = 0; n < RETRIES; n++)
        ck_assert_int_eq(bo_schedule_next_ns(&s1, &c, &r1), bo_schedule_next_ns(&s2, &c, &r2));
    bo_rng_seed(&r1, 77);
    bo_rng_seed(&r2, 78);
    bo_schedule_init(&s1);
    bo_schedule_init(&s2);
    for (int n = 0; n < RETRIES; n++)
        differ_from_other_seed +=
            bo_schedule_next_ns(&s1, &c, &r1) != bo_schedule_next_ns(&s2, &c, &r2);
    ck_assert_int_gt(differ_from_other_seed, RETRIES / 2);
}
END_TEST

static Suite *schedule_suite(void)
{
    Suite *s = suite_create("schedule");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_fixed_exact);
    tcase_add_test(tc, test_linear_exact_and_capped);
    tcase_add_test(tc, test_exponential_exact);
    tcase_add_test(tc, test_exponential_uses_factor);
    tcase_add_test(tc, test_full_jitter_bounds);
    tcase_add_test(tc, test_equal_jitter_bounds);
    tcase_add_test(tc, test_decorrelated_bounds);
    tcase_add_test(tc, test_gaussian_first_is_base_and_mean_near_d);
    tcase_add_test(tc, test_gaussian_never_negative_and_jitter_after_cap);
    tcase_add_test(tc, test_gaussian_without_jitter_is_exponential);
    tcase_add_test(tc, test_thain_bounds);
    tcase_add_test(tc, test_cap_reached_never_exceeded);
    tcase_add_test(tc, test_huge_n_saturates);
    tcase_add_test(tc, test_no_schedule_policies_return_zero);
    tcase_add_test(tc, test_same_seed_same_delays);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(schedule_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
