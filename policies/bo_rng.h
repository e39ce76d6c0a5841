/*
 * bo_rng: a small, seedable pseudo-random generator (xoshiro256** seeded
 * through splitmix64).  All randomness in policies/ comes from a bo_rng the
 * caller owns and passes in, so a seed makes every choice repeatable.
 */
#ifndef BO_RNG_H
#define BO_RNG_H

#include <stdint.h>

typedef struct bo_rng {
    uint64_t s[4];
} bo_rng;

/* Seed the generator; any seed (0 included) gives a valid state. */
void bo_rng_seed(bo_rng *rng, uint64_t seed);

/* Next raw 64-bit value. */
uint64_t bo_rng_next(bo_rng *rng);

/* Uniform double in [0, 1). */
double bo_rng_uniform(bo_rng *rng);

/* Uniform double in [lo, hi); returns lo when hi <= lo. */
double bo_rng_between(bo_rng *rng, double lo, double hi);

/* Standard normal variate (mean 0, standard deviation 1). */
double bo_rng_normal(bo_rng *rng);

/* Exponential variate with the given mean (mean <= 0 gives 0). */
double bo_rng_exponential(bo_rng *rng, double mean);

#endif
