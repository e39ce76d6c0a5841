/*
 * bo_math: the few functions of libm that policies/ needs, written here so
 * that libbackoff.so does not link libm.  The library is loaded into every
 * process of a command's tree, most of which (a shell, curl, make) never
 * load libm themselves; mapping it cost each of them more than the rest of
 * the library's start-up (docs/RESULTS.md, "What it changes in a program
 * that never meets a throttle").
 *
 * sqrt, floor and ceil are exact; log, cbrt and the cosine are fdlibm's
 * algorithms (below 1 ulp from the true value, as glibc's are; the two may
 * differ in the last bit); bo_math_powu multiplies.  tests/unit/test_math.c
 * holds each against libm.
 */
#ifndef BO_MATH_H
#define BO_MATH_H

/* Square root (the processor's own instruction where there is one: exact). */
double bo_math_sqrt(double x);

/* The largest integer not above x, and the smallest not below it (exact). */
double bo_math_floor(double x);
double bo_math_ceil(double x);

/* Natural logarithm: -inf at 0, NaN below. */
double bo_math_log(double x);

/* Cube root. */
double bo_math_cbrt(double x);

/* cos(2 pi t): the cosine of t turns (t's whole turns are dropped exactly
 * before the angle is formed, so any t is as accurate as t in [0, 1)). */
double bo_math_cos_turns(double t);

/* x to the power n (x^0 = 1), by squaring in long double: within an ulp,
 * exact whenever each product is (powers of two, 3^n up to 3^33). */
double bo_math_powu(double x, unsigned n);

/* 2 to the power k for an integral k (exact; 0 below 2^-1074, inf above
 * 2^1023, NaN for NaN). */
double bo_math_exp2i(double k);

#endif
