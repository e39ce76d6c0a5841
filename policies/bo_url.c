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

/* ---- destination keys ------------------------------------------------------ */

int bo_url_dest_key(const bo_config *cfg, const char *scheme, size_t scheme_len, const char *host,
                    size_t host_len, unsigned port, char *key, size_t keylen)
{
    char digits[10], *d = digits + sizeof digits;
    size_t from = 0, nl = host_len;

    if (host_len >= 2 && host[0] == '[' && host[host_len - 1] == ']') {
        from = 1;
        nl = host_len - 2;
    }
    if (cfg != NULL && cfg->n_hosts > 0) { /* BACKOFF_HOSTS: the name and port must be listed */
        char name[BO_HOST_LEN];
        if (nl >= sizeof name)
            return -1;
        for (size_t i = 0; i < nl; i++)
            name[i] = lower(host[from + i]);
        name[nl] = '\0';
        if (!bo_config_host_matches(cfg, name, (int)port))
            return -1;
    }
    do {
        *--d = (char)('0' + port % 10);
        port /= 10;
    } while (port != 0);
    size_t pl = (size_t)(digits + sizeof digits - d);
    if (scheme_len + 3 + host_len + 1 + pl + 1 > keylen)
        return -1;
    char *k = key;
    for (size_t i = 0; i < scheme_len; i++)
        *k++ = lower(scheme[i]);
    memcpy(k, "://", 3);
    k += 3;
    for (size_t i = 0; i < host_len; i++)
        *k++ = lower(host[i]);
    *k++ = ':';
    memcpy(k, d, pl);
    k[pl] = '\0';
    return 0;
}

/* A host name's or an address literal's characters in a Host field. */
static bool authority_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '.' || ch == '-' || ch == '_' || ch == '~' || ch == '%' || ch == ':';
}

int bo_url_authority_key(const bo_config *cfg, const char *scheme, unsigned default_port,
                         const char *auth, size_t len, char *key, size_t keylen)
{
    size_t hl;
    unsigned port = default_port;

    if (len == 0)
        return -1;
    if (auth[0] == '[') {
        const char *e = memchr(auth, ']', len);
        if (e == NULL || e == auth + 1)
            return -1;
        hl = (size_t)(e - auth) + 1;
        if (hl < len && auth[hl] != ':')
            return -1;
        for (size_t i = 1; i + 1 < hl; i++)
            if (!authority_char(auth[i]))
                return -1;
    } else {
        const char *colon = memchr(auth, ':', len);
        hl = colon != NULL ? (size_t)(colon - auth) : len;
        if (hl == 0)
            return -1;
        for (size_t i = 0; i < hl; i++)
            if (!authority_char(auth[i]) || auth[i] == ':')
                return -1;
    }
    if (hl < len) { /* ":port" */
        unsigned v = 0;
        if (hl + 1 == len)
            return -1;
        for (size_t i = hl + 1; i < len; i++) {
            if (!is_digit(auth[i]) || v > 65535)
                return -1;
            v = v * 10 + (unsigned)(auth[i] - '0');
        }
        if (v == 0 || v > 65535)
            return -1;
        port = v;
    }
    return bo_url_dest_key(cfg, scheme, strlen(scheme), auth, hl, port, key, keylen);
}

int bo_url_unix_key(const bo_config *cfg, const char *path, size_t len, char *key, size_t keylen)
{
    if (cfg != NULL && cfg->n_hosts > 0)
        return -1;
    bool abstract = len > 0 && path[0] == '\0';
    size_t n = strnlen(path + abstract, len - abstract); /* (a key is a C string) */
    if (5 + abstract + n + 1 > keylen)
        return -1;
    memcpy(key, "unix:", 5);
    if (abstract)
        key[5] = '@';
    memcpy(key + 5 + abstract, path + abstract, n);
    key[5 + abstract + n] = '\0';
    return 0;
}
