/*
 * bo_rng: xoshiro256** (Blackman and Vigna), seeded through splitmix64 so
 * that any 64-bit seed, 0 included, gives a well-mixed, non-zero state.
 */
#include "bo_rng.h"
#include "bo_math.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

void bo_rng_seed(bo_rng *rng, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        rng->s[i] = splitmix64(&x);
}

uint64_t bo_rng_next(bo_rng *rng)
{
    uint64_t *s = rng->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double bo_rng_uniform(bo_rng *rng)
{
    /* 53 random bits into the mantissa: exactly representable, in [0, 1). */
    return (double)(bo_rng_next(rng) >> 11) * 0x1.0p-53;
}

double bo_rng_between(bo_rng *rng, double lo, double hi)
{
    if (!(hi > lo))
        return lo;
    double v = lo + (hi - lo) * bo_rng_uniform(rng);
    return v < hi ? v : lo; /* guard against rounding up to hi */
}

/*
 * Box-Muller, one variate per call (no cached second value, so the state is
 * only the four words and a copy of a generator replays exactly).
 */
double bo_rng_normal(bo_rng *rng)
{
    double u1 = 1.0 - bo_rng_uniform(rng); /* (0, 1]: its log is finite */
    double u2 = bo_rng_uniform(rng);
    return bo_math_sqrt(-2.0 * bo_math_log(u1)) * bo_math_cos_turns(u2);
}

double bo_rng_exponential(bo_rng *rng, double mean)
{
    if (!(mean > 0))
        return 0;
    return -mean * bo_math_log(1.0 - bo_rng_uniform(rng));
}
