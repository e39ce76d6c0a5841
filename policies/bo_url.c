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

static bool is_alnum(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* A character libcurl's IPv4 forms use: digits, hex digits and 'x'. */
static bool numberish(char c)
{
    char l = lower(c);
    return is_digit(c) || (l >= 'a' && l <= 'f') || l == 'x';
}

/*
 * The host as libcurl keeps it: a name is kept as written; a host that
 * libcurl may read as an IPv4 address ("127.1", "0x7f.0.0.1", "017.0.0.1")
 * is rewritten by it to the dotted quad.  Only a dotted quad already in
 * that form is taken here; any other host whose every label is made of
 * the characters of those forms is left to libcurl.
 */
static bool plain_host(const char *h, size_t n)
{
    if (n == 0 || n > BO_URL_HOST_MAX || h[0] == '.')
        return false;
    bool label_numberish = true, all_numberish = true;
    for (size_t i = 0; i < n; i++) {
        char c = h[i];
        if (c == '.') {
            if (i > 0 && h[i - 1] == '.')
                return false;
            all_numberish = all_numberish && label_numberish;
            label_numberish = true;
        } else if (is_alnum(c) || c == '-' || c == '_') {
            label_numberish = label_numberish && numberish(c);
        } else {
            return false;
        }
    }
    if (h[n - 1] != '.')
        all_numberish = all_numberish && label_numberish;
    if (!all_numberish)
        return true; /* a name */
    /* numbers only: exactly a.b.c.d, each 0-255 with no leading zero */
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
    /* every byte printable ASCII: libcurl refuses spaces and control
     * characters, and may rewrite other bytes */
    for (const char *c = url; *c != '\0'; c++)
        if ((unsigned char)*c <= 0x20 || (unsigned char)*c >= 0x7f)
            return false;
    const char *a = url + sl + 3;
    size_t an = strcspn(a, "/?#");
    size_t hn = 0;
    while (hn < an && a[hn] != ':')
        hn++;
    if (!plain_host(a, hn))
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
    o->port = port;
    return true;
}
