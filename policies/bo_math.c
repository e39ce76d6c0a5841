/*
 * bo_math.c: libm's functions as policies/ uses them (bo_math.h says why).
 *
 * The logarithm, the cube root and the sine and cosine kernels are fdlibm's
 * (FreeBSD msun, as musl carries them), whose notice asks to be kept:
 *
 *   Copyright (C) 1993 by Sun Microsystems, Inc. All rights reserved.
 *   Developed at SunPro, a Sun Microsystems, Inc. business.
 *   Permission to use, copy, modify, and distribute this
 *   software is freely granted, provided that this notice
 *   is preserved.
 *
 * (the cube root's polynomial: Copyright (c) 2009-2011 Bruce D. Evans,
 * Steven G. Kargl, under the same terms.)
 *
 * Built with -fno-math-errno (the Makefile), so that sqrt is the
 * processor's instruction and never a call into libm for a negative x.
 */
#include "bo_math.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static uint64_t bits_of(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static double double_of(uint64_t u)
{
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

double bo_math_sqrt(double x)
{
    return __builtin_sqrt(x);
}

/* |x| below 2^52: x is converted to an integer and back exactly; above, x is
 * integral already (or inf, or NaN). The sign of a zero result is x's. */
double bo_math_floor(double x)
{
    if (!(__builtin_fabs(x) < 0x1p52))
        return x;
    double t = (double)(int64_t)x; /* toward zero */
    if (t > x)
        t -= 1;
    return t == 0 ? __builtin_copysign(0.0, x) : t;
}

double bo_math_ceil(double x)
{
    if (!(__builtin_fabs(x) < 0x1p52))
        return x;
    double t = (double)(int64_t)x;
    if (t < x)
        t += 1;
    return t == 0 ? __builtin_copysign(0.0, x) : t;
}

/*
 * fdlibm's e_log.c: x = 2^k (1 + f) with 1 + f in [sqrt(2)/2, sqrt(2)),
 * log(1 + f) = f - f^2/2 + s (f^2/2 + R(s^2)) with s = f / (2 + f) and R a
 * minimax polynomial; below 1 ulp.
 */
double bo_math_log(double x)
{
    const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10,
                 lg1 = 6.666666666666735130e-01, lg2 = 3.999999999940941908e-01,
                 lg3 = 2.857142874366239149e-01, lg4 = 2.222219843214978396e-01,
                 lg5 = 1.818357216161805012e-01, lg6 = 1.531383769920937332e-01,
                 lg7 = 1.479819860511658591e-01;
    uint64_t u = bits_of(x);
    uint32_t hx = (uint32_t)(u >> 32);
    int k = 0;

    if (hx < 0x00100000 || hx >> 31) {
        if (u << 1 == 0)
            return -1 / (x * x); /* log(+-0) = -inf */
        if (hx >> 31)
            return (x - x) / 0.0; /* log(-x) = NaN */
        k -= 54; /* subnormal: scale up */
        x *= 0x1p54;
        u = bits_of(x);
        hx = (uint32_t)(u >> 32);
    } else if (hx >= 0x7ff00000) {
        return x; /* inf or NaN */
    } else if (hx == 0x3ff00000 && u << 32 == 0) {
        return 0;
    }
    /* reduce x into [sqrt(2)/2, sqrt(2)) */
    hx += 0x3ff00000 - 0x3fe6a09e;
    k += (int)(hx >> 20) - 0x3ff;
    hx = (hx & 0x000fffff) + 0x3fe6a09e;
    x = double_of((uint64_t)hx << 32 | (u & 0xffffffff));

    double f = x - 1.0;
    double hfsq = 0.5 * f * f;
    double s = f / (2.0 + f);
    double z = s * s;
    double w = z * z;
    double t1 = w * (lg2 + w * (lg4 + w * lg6));
    double t2 = z * (lg1 + w * (lg3 + w * (lg5 + w * lg7)));
    double r = t2 + t1;
    double dk = k;
    return s * (hfsq + r) + dk * ln2_lo - hfsq + f + dk * ln2_hi;
}

/*
 * fdlibm's s_cbrt.c: an estimate from the exponent's bits, a polynomial to
 * 23 bits, rounded to 22 bits, then one Newton step; below 0.667 ulp.
 */
double bo_math_cbrt(double x)
{
    const uint32_t b1 = 715094163, /* (1023 - 1023/3 - 0.03306235651) * 2^20 */
        b2 = 696219795;            /* (1023 - 1023/3 - 54/3 - 0.03306235651) * 2^20 */
    const double p0 = 1.87595182427177009643, p1 = -1.88497979543377169875,
                 p2 = 1.621429720105354466140, p3 = -0.758397934778766047437,
                 p4 = 0.145996192886612446982;
    uint64_t u = bits_of(x);
    uint32_t hx = (uint32_t)(u >> 32) & 0x7fffffff;

    if (hx >= 0x7ff00000)
        return x + x; /* inf or NaN */
    if (hx < 0x00100000) { /* zero or subnormal */
        u = bits_of(x * 0x1p54);
        hx = (uint32_t)(u >> 32) & 0x7fffffff;
        if (hx == 0)
            return x;
        hx = hx / 3 + b2;
    } else {
        hx = hx / 3 + b1;
    }
    u &= 1ULL << 63;
    u |= (uint64_t)hx << 32;
    double t = double_of(u);

    double r = (t * t) * (t / x);
    t = t * ((p0 + r * (p1 + r * p2)) + ((r * r) * r) * (p3 + r * p4));
    t = double_of((bits_of(t) + 0x80000000) & 0xffffffffc0000000ULL);

    double s = t * t;
    r = x / s;
    double w = t + t;
    r = (r - t) / (w + r);
    return t + t * r;
}

/* fdlibm's kernels (k_cos.c, k_sin.c) on [-pi/4, pi/4]: the angle is x + y,
 * y the bits of it that x could not hold. */
static double cos_kernel(double x, double y)
{
    const double c1 = 4.16666666666666019037e-02, c2 = -1.38888888888741095749e-03,
                 c3 = 2.48015872894767294178e-05, c4 = -2.75573143513906633035e-07,
                 c5 = 2.08757232129817482790e-09, c6 = -1.13596475577881948265e-11;
    double z = x * x;
    double w = z * z;
    double r = z * (c1 + z * (c2 + z * c3)) + w * w * (c4 + z * (c5 + z * c6));
    double hz = 0.5 * z;
    w = 1.0 - hz;
    return w + (((1.0 - w) - hz) + (z * r - x * y));
}

static double sin_kernel(double x, double y)
{
    const double s1 = -1.66666666666666324348e-01, s2 = 8.33333333332248946124e-03,
                 s3 = -1.98412698298579493134e-04, s4 = 2.75573137070700676789e-06,
                 s5 = -2.50507602534068634195e-08, s6 = 1.58969099521155010221e-10;
    double z = x * x;
    double w = z * z;
    double r = s2 + z * (s3 + z * s4) + z * w * (s5 + z * s6);
    double v = z * x;
    return x - ((z * (0.5 * y - v * r) - y) - v * s1);
}

/*
 * The angle is reduced in turns, where it is exact: the fraction of a turn,
 * its octant o, and the part f of an eighth within it (from the octant's
 * far end when o is odd), so that the kernels see |2 pi f| <= pi/4.  The
 * angle 2 pi f is formed in long double (64 bits on x86-64) and handed to
 * the kernels as a double and the bits it could not hold: below 1 ulp.
 */
double bo_math_cos_turns(double t)
{
    const long double two_pi = 6.283185307179586476925286766559L;

    if (t - t != 0)
        return t - t; /* inf or NaN */
    if (!(__builtin_fabs(t) < 0x1p52))
        return 1; /* whole turns */
    double r = t - bo_math_floor(t); /* [0, 1), exact but for a tiny negative t */
    if (r >= 1)
        r = 0; /* -1e-300 + 1 rounds to 1: a whole turn */
    int o = (int)(r * 8);
    double f = r - o * 0.125; /* [0, 1/8), exact */
    if (o & 1)
        f = 0.125 - f; /* exact: f is a multiple of r's ulp */
    long double a = two_pi * f;
    double x = (double)a;
    double y = (double)(a - x);
    switch (o) {
    case 0:
    case 7:
        return cos_kernel(x, y);
    case 1:
    case 6:
        return sin_kernel(x, y);
    case 2:
    case 5:
        return -sin_kernel(x, y);
    default: /* 3, 4 */
        return -cos_kernel(x, y);
    }
}

/* By squaring in long double, so that the products' roundings stay below
 * the double's last bit. */
double bo_math_powu(double x, unsigned n)
{
    long double r = 1, b = x;
    while (n != 0) {
        if (n & 1)
            r *= b;
        n >>= 1;
        if (n != 0)
            b *= b;
    }
    return (double)r;
}

double bo_math_exp2i(double k)
{
    if (k != k)
        return k;
    if (k >= 1024)
        return HUGE_VAL;
    if (k < -1074)
        return 0;
    int e = (int)k;
    if (e >= -1022)
        return double_of((uint64_t)(e + 1023) << 52);
    return double_of(1ULL << (e + 1074)); /* subnormal */
}
