/*
 * bo_idem: fresh Idempotency-Key values (UUID v4 from the caller's
 * generator) and the reading of header lines that may carry one.
 */
#include "bo_idem.h"
#include "bo_hash.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

void bo_idem_key_new(bo_rng *rng, char out[BO_IDEM_VALUE_SIZE])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char b[16];
    uint64_t hi = bo_rng_next(rng);
    uint64_t lo = bo_rng_next(rng);
    size_t o = 0;

    for (int i = 0; i < 8; i++) {
        b[i] = (unsigned char)(hi >> (56 - 8 * i));
        b[8 + i] = (unsigned char)(lo >> (56 - 8 * i));
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 (RFC 9562, 5.4) */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* variant 10 */
    out[o++] = '"';
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[o++] = '-';
        out[o++] = hex[b[i] >> 4];
        out[o++] = hex[b[i] & 15];
    }
    out[o++] = '"';
    out[o] = '\0';
}

size_t bo_idem_header_line(const char *value, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s: %s", BO_IDEM_NAME, value);
    return n < 0 ? 0 : (size_t)n;
}

static bool blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

bo_idem_line bo_idem_value_kind(const char *value, size_t len)
{
    size_t i = 0;
    while (i < len && value[i] != '\0' && blank(value[i]))
        i++;
    return i >= len || value[i] == '\0' ? BO_IDEM_LINE_EMPTY : BO_IDEM_LINE_KEY;
}

bo_idem_line bo_idem_header_kind(const char *line, size_t len)
{
    if (line == NULL || len <= BO_IDEM_NAME_LEN ||
        strncasecmp(line, BO_IDEM_NAME, BO_IDEM_NAME_LEN) != 0)
        return BO_IDEM_LINE_OTHER; /* (a NUL in line's first bytes differs from the name) */
    char sep = line[BO_IDEM_NAME_LEN];
    if (sep != ':' && sep != ';')
        return BO_IDEM_LINE_OTHER;
    bo_idem_line k = bo_idem_value_kind(line + BO_IDEM_NAME_LEN + 1, len - BO_IDEM_NAME_LEN - 1);
    if (sep == ';') /* libcurl sends "Name;" empty, and nothing else of that form */
        return k == BO_IDEM_LINE_EMPTY ? BO_IDEM_LINE_EMPTY : BO_IDEM_LINE_OTHER;
    return k;
}

uint64_t bo_idem_body_fp(const void *data, size_t len)
{
    uint64_t h = bo_fnv1a(BO_FNV_INIT, data, len);

    for (int i = 0; i < 8; i++)
        h = bo_fnv1a_step(h, (uint64_t)len >> (8 * i) & 0xff);
    return h != 0 ? h : 1;
}

bool bo_idem_key_reusable(const char *stored, uint64_t stored_body, uint64_t body)
{
    if (stored == NULL || stored[0] == '\0')
        return false;
    return stored_body == 0 || body == 0 || stored_body == body;
}

bool bo_idem_wants_key(const char *method, bo_idem_line own)
{
    return own == BO_IDEM_LINE_OTHER && method != NULL &&
           (strcmp(method, "POST") == 0 || strcmp(method, "PATCH") == 0);
}

void bo_idem_key_for(const char *prev, uint64_t prev_body, uint64_t body, bo_rng *rng,
                     char out[BO_IDEM_VALUE_SIZE])
{
    if (bo_idem_key_reusable(prev, prev_body, body))
        memcpy(out, prev, BO_IDEM_VALUE_SIZE);
    else
        bo_idem_key_new(rng, out);
}
