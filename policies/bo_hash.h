/*
 * bo_hash: FNV-1a 64, the one byte hash of the library (a request target,
 * a Host, a body's fingerprint, a file's path, a configuration), beside
 * bo_key_add (bo_budget.h), which folds whole strings into a logical
 * request's key.  Pure and inline: bo_http feeds it one byte at a time.
 */
#ifndef BO_HASH_H
#define BO_HASH_H

#include <stddef.h>
#include <stdint.h>

#define BO_FNV_INIT 0xcbf29ce484222325ULL
#define BO_FNV_PRIME 0x100000001b3ULL

/* One step: v (a byte, or a whole value) folded into h. */
static inline uint64_t bo_fnv1a_step(uint64_t h, uint64_t v)
{
    return (h ^ v) * BO_FNV_PRIME;
}

/* n bytes at p folded into h (BO_FNV_INIT to start). */
static inline uint64_t bo_fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = bo_fnv1a_step(h, b[i]);
    return h;
}

#endif
