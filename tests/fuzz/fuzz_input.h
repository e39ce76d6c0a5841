/*
 * tests/fuzz/fuzz_input.h: reads typed values off a libFuzzer input, so a
 * target can turn arbitrary bytes into structured facts.  Reads past the end
 * yield zeros: every input, however short, is a valid test case.
 */
#ifndef BO_FUZZ_INPUT_H
#define BO_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct fuzz_in {
    const uint8_t *p;
    size_t n;
} fuzz_in;

static inline uint64_t fuzz_u64(fuzz_in *in, size_t bytes)
{
    uint64_t v = 0;
    for (size_t i = 0; i < bytes; i++) {
        v <<= 8;
        if (in->n > 0) {
            v |= *in->p++;
            in->n--;
        }
    }
    return v;
}

static inline uint8_t fuzz_u8(fuzz_in *in)
{
    return (uint8_t)fuzz_u64(in, 1);
}

static inline int fuzz_bool(fuzz_in *in)
{
    return fuzz_u8(in) & 1;
}

#endif
