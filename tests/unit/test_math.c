/*
 * Unit tests for bo_math, held against libm (this suite links it): sqrt,
 * floor, ceil and the powers of two exact; log, cbrt and the cosine below
 * one ulp of a long double reference over the ranges the policies use and
 * far beyond; the special values as libm gives them.
 */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bo_math.h"
#include "bo_rng.h"

/* Under valgrind (make check-valgrind) the x87's 80-bit arithmetic is done
 * in 64 bits (valgrind's manual, "Limitations"): a long double reference,
 * and bo_math's own long double steps, lose the precision these suites
 * measure.  There the exact cases run, the ulp bounds do not. */
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define UNDER_VALGRIND() RUNNING_ON_VALGRIND
#endif
#endif
#ifndef UNDER_VALGRIND
#define UNDER_VALGRIND() 0
#endif

#define N 200000

static uint64_t bits(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

/* Identical doubles, sign of zero and NaN included. */
static int same(double a, double b)
{
    return (isnan(a) && isnan(b)) || bits(a) == bits(b);
}

/* How far got is from the reference, in ulps of the reference rounded to double. */
static double ulps(double got, long double ref)
{
    double r = (double)ref;
    if (isinf(r))
        return got == r ? 0 : INFINITY;
    double ulp = nextafter(fabs(r), INFINITY) - fabs(r);
    return (double)(fabsl((long double)got - ref) / ulp);
}

/* A double of any magnitude and sign, from raw bits (no NaN or inf). */
static double any_double(bo_rng *r)
{
    for (;;) {
        uint64_t u = bo_rng_next(r);
        double x;
        memcpy(&x, &u, sizeof x);
        if (isfinite(x))
            return x;
    }
}

START_TEST(test_sqrt_exact)
{
    bo_rng r;
    bo_rng_seed(&r, 1);
    for (int i = 0; i < N; i++) {
        double x = fabs(any_double(&r));
        ck_assert(same(bo_math_sqrt(x), sqrt(x)));
    }
    ck_assert(same(bo_math_sqrt(0.0), 0.0));
    ck_assert(same(bo_math_sqrt(-0.0), -0.0));
    ck_assert(isnan(bo_math_sqrt(-1.0)));
    ck_assert(bo_math_sqrt(INFINITY) == INFINITY);
    ck_assert(bo_math_sqrt(40 * 120 * 0.9) == sqrt(40 * 120 * 0.9));
}
END_TEST

START_TEST(test_floor_ceil_exact)
{
    static const double special[] = {0.0,     -0.0,    0.3,     -0.3,       1.0,
                                     -1.0,    1.5,     -1.5,    0x1p52,     -0x1p52,
                                     0x1p52 + 1, 0x1p51 + 0.5, -0x1p51 - 0.5, 1e300,
                                     -1e300,  4.9e-324, -4.9e-324, INFINITY, -INFINITY, NAN};
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) {
        ck_assert_msg(same(bo_math_floor(special[i]), floor(special[i])), "floor(%a)",
                      special[i]);
        ck_assert_msg(same(bo_math_ceil(special[i]), ceil(special[i])), "ceil(%a)", special[i]);
    }
    bo_rng r;
    bo_rng_seed(&r, 2);
    for (int i = 0; i < N; i++) {
        double x = any_double(&r);
        /* and numbers with a fraction, where the work is */
        double y = (bo_rng_uniform(&r) - 0.5) * ldexp(1, (int)(bo_rng_next(&r) % 60));
        ck_assert_msg(same(bo_math_floor(x), floor(x)), "floor(%a)", x);
        ck_assert_msg(same(bo_math_ceil(x), ceil(x)), "ceil(%a)", x);
        ck_assert_msg(same(bo_math_floor(y), floor(y)), "floor(%a)", y);
        ck_assert_msg(same(bo_math_ceil(y), ceil(y)), "ceil(%a)", y);
    }
}
END_TEST

START_TEST(test_log_below_one_ulp)
{
    bo_rng r;
    bo_rng_seed(&r, 3);
    double worst = 0;
    for (int i = 0; i < N; i++) {
        /* (0, 1] as bo_rng's normal and exponential variates take it, and anything positive */
        double u = 1.0 - bo_rng_uniform(&r);
        double x = fabs(any_double(&r));
        if (x == 0)
            continue;
        double e1 = ulps(bo_math_log(u), logl((long double)u));
        double e2 = ulps(bo_math_log(x), logl((long double)x));
        ck_assert_msg(e1 < 1 && e2 < 1, "log(%a) %g ulp, log(%a) %g ulp", u, e1, x, e2);
        worst = fmax(worst, fmax(e1, e2));
    }
    ck_assert(worst > 0); /* the reference is finer than a double: the check can fail */
    ck_assert(bo_math_log(1.0) == 0);
    ck_assert(bo_math_log(0.0) == -INFINITY);
    ck_assert(bo_math_log(-0.0) == -INFINITY);
    ck_assert(isnan(bo_math_log(-1.0)));
    ck_assert(isnan(bo_math_log(NAN)));
    ck_assert(bo_math_log(INFINITY) == INFINITY);
    ck_assert(ulps(bo_math_log(4.9e-324), logl((long double)4.9e-324)) < 1);
    ck_assert(ulps(bo_math_log(DBL_MAX), logl((long double)DBL_MAX)) < 1);
}
END_TEST

START_TEST(test_cbrt_below_one_ulp)
{
    bo_rng r;
    bo_rng_seed(&r, 4);
    for (int i = 0; i < N; i++) {
        double x = any_double(&r);
        double y = bo_rng_uniform(&r) * 1e6; /* the window sizes aws-adaptive takes it of */
        double e1 = ulps(bo_math_cbrt(x), cbrtl((long double)x));
        double e2 = ulps(bo_math_cbrt(y), cbrtl((long double)y));
        ck_assert_msg(e1 < 1 && e2 < 1, "cbrt(%a) %g ulp, cbrt(%a) %g ulp", x, e1, y, e2);
    }
    ck_assert(same(bo_math_cbrt(0.0), 0.0));
    ck_assert(same(bo_math_cbrt(-0.0), -0.0));
    ck_assert(bo_math_cbrt(27.0) == 3.0);
    ck_assert(bo_math_cbrt(-8.0) == -2.0);
    ck_assert(bo_math_cbrt(-INFINITY) == -INFINITY);
    ck_assert(isnan(bo_math_cbrt(NAN)));
}
END_TEST

/* cos(2 pi t) to long double precision: the reference. */
static long double cos_turns_ref(double t)
{
    long double f = (long double)t - floorl((long double)t);
    return cosl(6.283185307179586476925286766559L * f);
}

START_TEST(test_cos_turns)
{
    bo_rng r;
    bo_rng_seed(&r, 5);
    for (int i = 0; i < N; i++) {
        /* [0, 1) as Box-Muller takes it; then whole turns and negative ones */
        double t = bo_rng_uniform(&r);
        double s = (bo_rng_uniform(&r) - 0.5) * 1e6;
        long double rt = cos_turns_ref(t), rs = cos_turns_ref(s);
        double gt = bo_math_cos_turns(t), gs = bo_math_cos_turns(s);
        /* within an ulp of the value, or (near a zero of the cosine) of 1/4 */
        ck_assert_msg(ulps(gt, rt) < 1 || fabsl(gt - rt) < 2.8e-17L, "cos_turns(%a) = %a",
                      t, gt);
        ck_assert_msg(ulps(gs, rs) < 1 || fabsl(gs - rs) < 2.8e-17L, "cos_turns(%a) = %a",
                      s, gs);
        /* the value the libm expression gave, within its own rounding of the angle */
        ck_assert(fabs(gt - cos(6.283185307179586 * t)) < 1e-15);
    }
    ck_assert(bo_math_cos_turns(0.0) == 1);
    ck_assert(bo_math_cos_turns(0.5) == -1);
    ck_assert(fabs(bo_math_cos_turns(0.25)) < 1e-300);
    ck_assert(bo_math_cos_turns(0.125) == (double)cosl(0.785398163397448309615660845819876L));
    ck_assert(bo_math_cos_turns(-1e-300) == 1);
    ck_assert(bo_math_cos_turns(1e17) == 1);
    ck_assert(bo_math_cos_turns(-3.0) == 1);
    ck_assert(isnan(bo_math_cos_turns(INFINITY)));
    ck_assert(isnan(bo_math_cos_turns(NAN)));
}
END_TEST

START_TEST(test_powu)
{
    for (unsigned n = 0; n < 1100; n++)
        ck_assert(bo_math_powu(2, n) == ldexp(1, (int)n)); /* inf past 1023 */
    for (unsigned n = 0; n <= 33; n++) {
        ck_assert(bo_math_powu(3, n) == pow(3, n)); /* every product exact */
        ck_assert(bo_math_powu(1.5, n) == pow(1.5, n));
    }
    ck_assert(bo_math_powu(0.0, 0) == 1);
    ck_assert(bo_math_powu(100, 200) == INFINITY);
    bo_rng r;
    bo_rng_seed(&r, 6);
    for (int i = 0; i < N; i++) {
        double x = 1 + 99 * bo_rng_uniform(&r); /* BACKOFF_FACTOR's range */
        unsigned n = (unsigned)(bo_rng_next(&r) % 160);
        long double ref = powl((long double)x, (long double)n);
        if (ref > DBL_MAX)
            continue;
        double e = ulps(bo_math_powu(x, n), ref);
        ck_assert_msg(e < 1, "powu(%a, %u): %g ulp", x, n, e);
    }
}
END_TEST

START_TEST(test_exp2i_exact)
{
    for (int k = -1100; k <= 1100; k++)
        ck_assert_msg(same(bo_math_exp2i(k), ldexp(1, k)), "2^%d", k);
    ck_assert(bo_math_exp2i(INFINITY) == INFINITY);
    ck_assert(same(bo_math_exp2i(-INFINITY), 0.0));
    ck_assert(isnan(bo_math_exp2i(NAN)));
    ck_assert(bo_math_exp2i(-0.0) == 1);
}
END_TEST

static Suite *math_suite(void)
{
    Suite *s = suite_create("math");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_sqrt_exact);
    tcase_add_test(tc, test_floor_ceil_exact);
    tcase_add_test(tc, test_exp2i_exact);
    if (UNDER_VALGRIND()) {
        fprintf(stderr, "test_math: under valgrind, whose x87 is 64-bit: the ulp bounds "
                        "of log, cbrt, cos_turns and powu are not measured\n");
    } else {
        tcase_add_test(tc, test_log_below_one_ulp);
        tcase_add_test(tc, test_cbrt_below_one_ulp);
        tcase_add_test(tc, test_cos_turns);
        tcase_add_test(tc, test_powu);
    }
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(math_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
