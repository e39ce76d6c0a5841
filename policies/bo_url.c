/* bo_url: see bo_url.h. */
#include "bo_url.h"

#include <string.h>

static char lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/*
 * Byte classes, one table lookup a byte (this reads every URL a program
 * sets to a new origin): printable ASCII without the space (what libcurl
 * keeps as written), the bytes that end the authority, a host name's
 * characters, and among them those of libcurl's IPv4 forms (digits, hex
 * digits and 'x': "numberish").
 */
enum {
    U_PRINT = 1,    /* 0x21-0x7e */
    U_END = 2,      /* '\0', '/', '?', '#': the authority ends */
    U_COLON = 4,    /* ':' */
    U_HOST = 8,     /* letters, digits, '-', '_' */
    U_NUMBERISH = 16,
    U_DOT = 32
};
#define U_LETTER (U_PRINT | U_HOST)
#define U_HEXLETTER (U_PRINT | U_HOST | U_NUMBERISH)
static const unsigned char url_class[256] = {
    [0] = U_END,
    [0x21 ... 0x22] = U_PRINT,  ['#'] = U_PRINT | U_END,      [0x24 ... 0x2c] = U_PRINT,
    ['-'] = U_PRINT | U_HOST,   ['.'] = U_PRINT | U_DOT,      ['/'] = U_PRINT | U_END,
    ['0' ... '9'] = U_HEXLETTER, [':'] = U_PRINT | U_COLON,   [0x3b ... 0x3e] = U_PRINT,
    ['?'] = U_PRINT | U_END,    ['@'] = U_PRINT,              ['A' ... 'F'] = U_HEXLETTER,
    ['G' ... 'W'] = U_LETTER,   ['X'] = U_HEXLETTER,          ['Y' ... 'Z'] = U_LETTER,
    [0x5b ... 0x5e] = U_PRINT,  ['_'] = U_PRINT | U_HOST,     ['`'] = U_PRINT,
    ['a' ... 'f'] = U_HEXLETTER, ['g' ... 'w'] = U_LETTER,    ['x'] = U_HEXLETTER,
    ['y' ... 'z'] = U_LETTER,   [0x7b ... 0x7e] = U_PRINT,
};

static unsigned cls(char c)
{
    return url_class[(unsigned char)c];
}

/* Exactly a.b.c.d, each 0-255 with no leading zero (the host's labels are all numberish). */
static bool dotted_quad(const char *h, size_t n)
{
    unsigned parts = 0;
    size_t i = 0;
    while (i < n) {
        unsigned v = 0;
        size_t start = i;
        while (i < n && is_digit(h[i]) && i - start < 3) {
            v = v * 10 + (unsigned)(h[i] - '0');
            i++;
        }
        if (i == start || v > 255 || (h[start] == '0' && i - start > 1))
            return false;
        parts++;
        if (i == n)
            break;
        if (h[i] != '.' || i + 1 == n)
            return false;
        i++;
    }
    return parts == 4;
}

bool bo_url_plain_origin(const char *url, bo_url_origin *o)
{
    size_t sl;

    if (url == NULL)
        return false;
    if (lower(url[0]) == 'h' && lower(url[1]) == 't' && lower(url[2]) == 't' &&
        lower(url[3]) == 'p') {
        sl = lower(url[4]) == 's' ? 5 : 4;
    } else {
        return false;
    }
    if (url[sl] != ':' || url[sl + 1] != '/' || url[sl + 2] != '/')
        return false;
    /*
     * One pass: the authority ends at '/', '?', '#' or the end, the host at
     * its first ':'; every byte of the URL must be printable ASCII (libcurl
     * refuses spaces and control characters, and may rewrite other bytes).
     * The host, up to the authority's first ':', as libcurl keeps it: a name
     * is kept as written; a host that libcurl may read as an IPv4 address
     * ("127.1", "0x7f.0.0.1", "017.0.0.1") is rewritten by it to the dotted
     * quad.  Only a dotted quad already in that form is taken here; any
     * other host whose every label is numberish is left to libcurl.  Read
     * in the same pass: labels of host characters, no empty one inside.
     */
    const char *a = url + sl + 3;
    size_t an = 0;
    unsigned k;
    bool label_numberish = true, all_numberish = true, dot = true; /* dot: a label begins */
    for (;; an++) {
        k = cls(a[an]);
        if (k & U_DOT) {
            if (dot)
                return false; /* a leading dot, or two in a row */
            all_numberish = all_numberish && label_numberish;
            label_numberish = true;
            dot = true;
        } else if (k & U_HOST) {
            label_numberish = label_numberish && (k & U_NUMBERISH);
            dot = false;
        } else {
            break; /* the host ends: ':' or the authority's end; anything else fails below */
        }
    }
    size_t hn = an;
    if (hn == 0 || hn > BO_URL_HOST_MAX || !((k & U_COLON) || (k & U_END)))
        return false;
    if (!dot)
        all_numberish = all_numberish && label_numberish;
    if (all_numberish && !dotted_quad(a, hn))
        return false;
    while (!((k = cls(a[an])) & U_END)) { /* the port, checked below */
        if (!(k & U_PRINT))
            return false;
        an++;
    }
    for (const char *c = a + an; *c != '\0'; c++)
        if (!(cls(*c) & U_PRINT))
            return false;
    unsigned port = sl == 5 ? 443 : 80;
    if (hn < an) { /* ":port": 1 to 65535, digits, no leading zero */
        size_t pn = an - hn - 1;
        const char *p = a + hn + 1;
        if (pn == 0 || pn > 5 || p[0] == '0')
            return false;
        port = 0;
        for (size_t i = 0; i < pn; i++) {
            if (!is_digit(p[i]))
                return false;
            port = port * 10 + (unsigned)(p[i] - '0');
        }
        if (port > 65535)
            return false;
    }
    memcpy(o->scheme, sl == 5 ? "https" : "http", sl + 1);
    memcpy(o->host, a, hn);
    o->host[hn] = '\0';
    o->host_len = (unsigned)hn;
    o->prefix_len = (unsigned)(sl + 3 + an);
    o->port = port;
    return true;
}
