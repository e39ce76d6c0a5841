/*
 * Unit tests for bo_rng: repeatability for a seed, and the distributions
 * the schedules rely on.  Seeds are fixed, so the statistical checks are
 * deterministic; their tolerances are loose anyway.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "bo_rng.h"

START_TEST(test_same_seed_same_sequence)
{
    bo_rng a, b;
    bo_rng_seed(&a, 12345);
    bo_rng_seed(&b, 12345);
    for (int i = 0; i < 1000; i++)
        ck_assert_uint_eq(bo_rng_next(&a), bo_rng_next(&b));
}
END_TEST

START_TEST(test_different_seeds_differ)
{
    bo_rng a, b;
    int same = 0;
    bo_rng_seed(&a, 1);
    bo_rng_seed(&b, 2);
    for (int i = 0; i < 1000; i++)
        same += bo_rng_next(&a) == bo_rng_next(&b);
    ck_assert_int_eq(same, 0);
}
END_TEST

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Every bit of the seed matters: 1000 nearby seeds start 1000 different streams. */
START_TEST(test_many_seeds_distinct)
{
    static uint64_t first[1000];
    for (uint64_t i = 0; i < 500; i++) {
        bo_rng a;
        bo_rng_seed(&a, i + 1);         /* low bits */
        first[2 * i] = bo_rng_next(&a);
        bo_rng_seed(&a, (i + 1) << 40); /* high bits */
        first[2 * i + 1] = bo_rng_next(&a);
    }
    qsort(first, 1000, sizeof first[0], cmp_u64);
    for (int i = 1; i < 1000; i++)
        ck_assert(first[i] != first[i - 1]);
}
END_TEST

START_TEST(test_seed_zero_is_valid)
{
    bo_rng a;
    bo_rng_seed(&a, 0);
    ck_assert(a.s[0] | a.s[1] | a.s[2] | a.s[3]);
    uint64_t first = bo_rng_next(&a);
    int repeats = 0;
    for (int i = 0; i < 100; i++)
        repeats += bo_rng_next(&a) == first;
    ck_assert_int_eq(repeats, 0);
}
END_TEST

START_TEST(test_copy_replays)
{
    bo_rng a, b;
    bo_rng_seed(&a, 99);
    for (int i = 0; i < 10; i++)
        (void)bo_rng_normal(&a);
    b = a;
    for (int i = 0; i < 100; i++)
        ck_assert(bo_rng_normal(&a) == bo_rng_normal(&b));
}
END_TEST

START_TEST(test_uniform_range_and_mean)
{
    bo_rng r;
    double sum = 0, lo = 1, hi = 0;
    int below_half = 0;
    const int n = 1000000;
    bo_rng_seed(&r, 42);
    for (int i = 0; i < n; i++) {
        double u = bo_rng_uniform(&r);
        ck_assert(u >= 0.0 && u < 1.0);
        sum += u;
        lo = u < lo ? u : lo;
        hi = u > hi ? u : hi;
        below_half += u < 0.5;
    }
    ck_assert_double_eq_tol(sum / n, 0.5, 0.02);
    ck_assert(lo < 0.001);
    ck_assert(hi > 0.999);
    ck_assert_double_eq_tol((double)below_half / n, 0.5, 0.02);
}
END_TEST

START_TEST(test_between)
{
    bo_rng r;
    bo_rng_seed(&r, 7);
    for (int i = 0; i < 100000; i++) {
        double v = bo_rng_between(&r, 3.0, 5.0);
        ck_assert(v >= 3.0 && v < 5.0);
    }
    ck_assert(bo_rng_between(&r, 5.0, 5.0) == 5.0);
    ck_assert(bo_rng_between(&r, 5.0, 1.0) == 5.0);
}
END_TEST

START_TEST(test_normal_moments)
{
    bo_rng r;
    double sum = 0, sq = 0;
    int within_1sd = 0;
    const int n = 100000;
    bo_rng_seed(&r, 2024);
    for (int i = 0; i < n; i++) {
        double x = bo_rng_normal(&r);
        ck_assert(isfinite(x));
        sum += x;
        sq += x * x;
        within_1sd += fabs(x) < 1.0;
    }
    double mean = sum / n;
    double sd = sqrt(sq / n - mean * mean);
    ck_assert_double_eq_tol(mean, 0.0, 0.02);
    ck_assert_double_eq_tol(sd, 1.0, 0.02);
    /* 68.27 % of a normal lies within one standard deviation. */
    ck_assert_double_eq_tol((double)within_1sd / n, 0.6827, 0.02);
}
END_TEST

START_TEST(test_exponential_mean)
{
    bo_rng r;
    double sum = 0;
    const int n = 100000;
    bo_rng_seed(&r, 5);
    for (int i = 0; i < n; i++) {
        double x = bo_rng_exponential(&r, 10.0);
        ck_assert(x >= 0.0 && isfinite(x));
        sum += x;
    }
    ck_assert_double_eq_tol(sum / n, 10.0, 0.2);
    ck_assert(bo_rng_exponential(&r, 0.0) == 0.0);
    ck_assert(bo_rng_exponential(&r, -1.0) == 0.0);
}
END_TEST

static Suite *rng_suite(void)
{
    Suite *s = suite_create("rng");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_same_seed_same_sequence);
    tcase_add_test(tc, test_different_seeds_differ);
    tcase_add_test(tc, test_many_seeds_distinct);
    tcase_add_test(tc, test_seed_zero_is_valid);
    tcase_add_test(tc, test_copy_replays);
    tcase_add_test(tc, test_uniform_range_and_mean);
    tcase_add_test(tc, test_between);
    tcase_add_test(tc, test_normal_moments);
    tcase_add_test(tc, test_exponential_mean);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(rng_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
