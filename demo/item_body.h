/*
 * demo/item_body.h: the content contract between ratelimit-server and loadgen.
 *
 * GET /item/N answers a body derived only from N and the requested size, so a
 * client can recompute every byte it should have received.  The body is the
 * unit "item=N;" repeated and cut at the size.  POST and PUT answer one line
 * with the FNV-1a 64 digest and the length of the body the server received,
 * which the client recomputes from what it sent.  Everything here is pure and
 * header-only so both programs use the very same code.
 */
#ifndef BO_ITEM_BODY_H
#define BO_ITEM_BODY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BO_ITEM_DEFAULT_SIZE 64
#define BO_ITEM_MAX_SIZE (1ULL << 40)
#define BO_ITEM_UNIT_MAX 32
#define BO_FNV_OFFSET 0xcbf29ce484222325ULL
#define BO_FNV_PRIME 0x100000001b3ULL
#define BO_DIGEST_LINE_MAX 64

/* Writes the repeating unit of item N into unit (BO_ITEM_UNIT_MAX bytes) and
 * returns its length. */
static inline size_t bo_item_unit(uint64_t n, char *unit)
{
    int len = snprintf(unit, BO_ITEM_UNIT_MAX, "item=%llu;", (unsigned long long)n);
    return len > 0 ? (size_t)len : 0;
}

/* Fills dst with len bytes of the body of item N starting at body offset off;
 * unit and ulen come from bo_item_unit(). */
static inline void bo_item_fill(const char *unit, size_t ulen, uint64_t off, char *dst,
                                size_t len)
{
    size_t pos = (size_t)(off % ulen);
    for (size_t i = 0; i < len; i++) {
        dst[i] = unit[pos];
        if (++pos == ulen)
            pos = 0;
    }
}

/* Continues an FNV-1a 64 digest (start from BO_FNV_OFFSET) over len bytes. */
static inline uint64_t bo_fnv1a64(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= BO_FNV_PRIME;
    }
    return h;
}

/* The exact answer body of a POST or PUT that carried a body with this digest
 * and length; returns the line's length. */
static inline int bo_digest_line(uint64_t h, uint64_t length, char *buf, size_t size)
{
    return snprintf(buf, size, "fnv1a64=%016llx length=%llu\n", (unsigned long long)h,
                    (unsigned long long)length);
}

/* Returns 0 and sets *n when path (without its query) is exactly /item/N with
 * N a decimal number; -1 otherwise. */
static inline int bo_item_parse_path(const char *path, size_t len, uint64_t *n)
{
    static const char prefix[] = "/item/";
    size_t plen = sizeof prefix - 1;
    uint64_t v = 0;
    if (len <= plen || memcmp(path, prefix, plen) != 0 || len - plen > 19)
        return -1;
    for (size_t i = plen; i < len; i++) {
        if (path[i] < '0' || path[i] > '9')
            return -1;
        v = v * 10 + (uint64_t)(path[i] - '0');
    }
    *n = v;
    return 0;
}

/* Parses a ?size= value: returns 0 and sets *size for a decimal number no
 * larger than BO_ITEM_MAX_SIZE, -1 otherwise. */
static inline int bo_item_parse_size(const char *s, size_t len, uint64_t *size)
{
    uint64_t v = 0;
    if (len == 0 || len > 14)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v > BO_ITEM_MAX_SIZE)
        return -1;
    *size = v;
    return 0;
}

#endif
