/*
 * fuzz_idem: bo_idem_header_kind (policies/bo_idem.c) on arbitrary bytes,
 * read through a heap copy of exactly the input's length (ASan sees any read
 * past it), against the rule restated here: KEY when the line starts with
 * "Idempotency-Key" in any case and a ':' followed by a non-blank byte before
 * the first NUL; EMPTY when ':' or ';' is followed only by blanks; OTHER
 * otherwise.  And a key drawn from a generator seeded with the first 8 bytes
 * has the UUID v4 shape and its header line reads back as a KEY.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "bo_idem.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bo_idem_line expected(const char *p, size_t n)
{
    static const char name[] = "idempotency-key";
    size_t end = 0;
    while (end < n && p[end] != '\0')
        end++;
    if (end <= 15)
        return BO_IDEM_LINE_OTHER;
    for (size_t i = 0; i < 15; i++) {
        if (tolower((unsigned char)p[i]) != name[i])
            return BO_IDEM_LINE_OTHER;
    }
    if (p[15] != ':' && p[15] != ';')
        return BO_IDEM_LINE_OTHER;
    bool all_blank = true;
    for (size_t i = 16; i < end; i++)
        all_blank = all_blank && strchr(" \t\r\n", p[i]) != NULL;
    if (all_blank)
        return BO_IDEM_LINE_EMPTY;
    return p[15] == ':' ? BO_IDEM_LINE_KEY : BO_IDEM_LINE_OTHER;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *p = malloc(size ? size : 1);
    if (p == NULL)
        return 0;
    memcpy(p, data, size);
    if (bo_idem_header_kind(p, size) != expected(p, size))
        abort();
    free(p);

    fuzz_in in = {data, size};
    bo_rng rng;
    char v[BO_IDEM_VALUE_SIZE], line[BO_IDEM_LINE_SIZE];
    bo_rng_seed(&rng, fuzz_u64(&in, 8));
    bo_idem_key_new(&rng, v);
    if (strlen(v) != BO_IDEM_VALUE_LEN || v[0] != '"' || v[37] != '"' || v[15] != '4' ||
        strchr("89ab", v[20]) == NULL || v[9] != '-' || v[14] != '-' || v[19] != '-' ||
        v[24] != '-')
        abort();
    if (bo_idem_header_line(v, line, sizeof line) != BO_IDEM_LINE_LEN ||
        bo_idem_header_kind(line, strlen(line)) != BO_IDEM_LINE_KEY)
        abort();
    return 0;
}
