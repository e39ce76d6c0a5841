/*
 * bo_ratelimit: rate-limit header parsing and quota pacing (see the .h).
 *
 * Bad values, ignored field by field (docs/TESTING.md lists those tried):
 *   - counts: digits only (optional whitespace around), no sign, no
 *     fraction, at most BO_RL_MAX_COUNT; a field given twice with
 *     different values is dropped;
 *   - epoch resets: digits with an optional fraction ("1470173023.123",
 *     Discord), kept to the millisecond (rounded up); in the past, or more
 *     than 31 days ahead: dropped;
 *   - seconds with decimals (X-RateLimit-Reset-After): the same form, at
 *     most 31 days;
 *   - durations (OpenAI's resets): Go's form, number-unit pairs in
 *     decreasing units among h, m, s, ms, us (or µs), ns, each number with
 *     an optional fraction ("6m0s", "1m30.5s", "850ms"), or a bare number
 *     of seconds; at most 31 days;
 *   - remaining above limit: remaining is dropped (limit kept);
 *   - a structured field that does not parse (RFC 8941 lists) is dropped
 *     whole; within a valid one, an item whose r (or q) is missing,
 *     negative or out of range is dropped;
 *   - hints: retry-after-ms and x-ms-retry-after-ms digits only (saturated);
 *     Retry-After digits only (saturated) or an HTTP-date of RFC 9110
 *     section 5.6.7 exactly (IMF-fixdate, RFC 850, asctime; a real date and
 *     time; "GMT"), anything else (a sign, a fraction, a word, trailing
 *     text) is no hint from here.
 * A quota needs a remaining count and a reset time from one dialect; the
 * draft's t may be missing when the matching policy gives its window w.
 * Responses with Age > 0 (served from a cache) give no quota.
 */
#include "bo_ratelimit.h"
#include "bo_time.h"

#include <string.h>

/* Largest hint kept, in seconds: its nanoseconds still fit in an int64_t
 * (the engine bounds every wait by the cap anyway). */
#define RL_MAX_HINT_S (INT64_MAX / BO_NS_PER_S)
/* Largest count parse_count may be asked for: one more digit cannot overflow. */
#define RL_MAX_BIG ((INT64_MAX - 9) / 10)

static void date_reset(bo_rl_date *d)
{
    memset(d, 0, sizeof *d);
    d->year = -1;
}

void bo_rl_headers_reset(bo_rl_headers *h)
{
    h->untouched = true;
    h->x_limit = h->x_remaining = h->x_reset_ms = h->x_reset_after_ns = -1;
    h->x_bucket = 0;
    h->t_limit = h->t_remaining = h->t_reset_ms = -1;
    for (int i = 0; i < 2; i++)
        h->o_limit[i] = h->o_remaining[i] = h->o_reset_ns[i] = -1;
    h->limit = h->remaining = h->reset_s = -1;
    h->d_remaining = h->d_reset_s = -1;
    h->d_name = h->d_pk = 0;
    h->npol = 0;
    h->ra_ms_ns = h->ms_ra_ns = h->ra_s = -1;
    date_reset(&h->ra_date);
    h->date_len = 0;
    h->from_cache = false;
    h->seen = false;
}

static char lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* The line's name equals `name` (lower case) exactly, case-insensitively. */
static bool name_is(const char *p, size_t n, const char *name)
{
    size_t k = strlen(name);
    if (n != k)
        return false;
    for (size_t i = 0; i < k; i++)
        if (lower(p[i]) != name[i])
            return false;
    return true;
}

static bool is_ows(char c)
{
    return c == ' ' || c == '\t';
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Trim optional whitespace on both ends. */
static void trim(const char **p, size_t *n)
{
    while (*n > 0 && is_ows((*p)[*n - 1]))
        (*n)--;
    while (*n > 0 && is_ows(**p)) {
        (*p)++;
        (*n)--;
    }
}

/* Decimal digits only (whitespace trimmed), <= max; -1 when bad. */
static int64_t parse_count(const char *p, size_t n, int64_t max)
{
    int64_t v = 0;

    trim(&p, &n);
    if (n == 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (!is_digit(p[i]))
            return -1;
        v = v * 10 + (p[i] - '0');
        if (v > max)
            return -1;
    }
    return v;
}

/* Decimal digits only (whitespace trimmed), saturated at max; -1 when bad. */
static int64_t parse_saturated(const char *p, size_t n, int64_t max)
{
    int64_t v = 0;

    trim(&p, &n);
    if (n == 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (!is_digit(p[i]))
            return -1;
        if (v <= max)
            v = v * 10 + (p[i] - '0');
    }
    return v < max ? v : max;
}

/*
 * A number at p[*i]: digits, then an optional '.' and digits (at least one
 * digit on each side of the point).  *whole gets the integer part (false
 * past max_whole), *frac the fraction as nanoparts of one unit (digits past
 * the ninth round it up).  Advances *i.
 */
static bool parse_number(const char *p, size_t n, size_t *i, int64_t max_whole,
                         int64_t *whole, int64_t *frac)
{
    size_t d = 0;
    int64_t w = 0, f = 0, scale = 100000000LL;
    bool up = false;

    for (; *i < n && is_digit(p[*i]); (*i)++, d++) {
        w = w * 10 + (p[*i] - '0');
        if (w > max_whole)
            return false;
    }
    if (d == 0)
        return false;
    if (*i < n && p[*i] == '.') {
        size_t k = 0;
        for ((*i)++; *i < n && is_digit(p[*i]); (*i)++, k++) {
            if (scale > 0) {
                f += (p[*i] - '0') * scale;
                scale /= 10;
            } else if (p[*i] != '0') {
                up = true;
            }
        }
        if (k == 0)
            return false;
    }
    *whole = w;
    *frac = f + up;
    return true;
}

/*
 * Seconds with an optional fraction ("1470173023.123", "0.370"),
 * whitespace trimmed, at most max_s whole seconds: the value in units of
 * `unit_ns` nanoseconds (BO_NS_PER_MS for epochs, 1 for durations), rounded
 * up; -1 when bad.
 */
static int64_t parse_seconds(const char *p, size_t n, int64_t max_s, int64_t unit_ns)
{
    size_t i = 0;
    int64_t w, f;

    trim(&p, &n);
    if (!parse_number(p, n, &i, max_s, &w, &f) || i != n)
        return -1;
    return w * (BO_NS_PER_S / unit_ns) + (f + unit_ns - 1) / unit_ns;
}

/*
 * A duration in Go's form (OpenAI: "850ms", "1s", "6m0s", "1m30.5s"):
 * number-unit pairs in strictly decreasing units, or a bare number of
 * seconds; at most 31 days.  Nanoseconds, -1 when bad.
 */
static int64_t parse_duration(const char *p, size_t n)
{
    static const struct {
        const char *name;
        int64_t ns;
    } units[] = {{"h", 3600 * BO_NS_PER_S}, {"ms", BO_NS_PER_MS}, {"m", 60 * BO_NS_PER_S},
                 {"s", BO_NS_PER_S},        {"us", 1000},         {"\xc2\xb5s", 1000},
                 {"ns", 1}};
    const int64_t max_ns = BO_RL_MAX_RESET_S * BO_NS_PER_S;
    int64_t total = 0, last_unit = INT64_MAX;
    size_t i = 0;

    trim(&p, &n);
    if (n == 0)
        return -1;
    if (p[n - 1] == '.' || is_digit(p[n - 1])) /* no unit: seconds */
        return parse_seconds(p, n, BO_RL_MAX_RESET_S, 1);
    while (i < n) {
        int64_t w, f, unit = 0;
        if (!parse_number(p, n, &i, BO_RL_MAX_RESET_S * 1000000000LL, &w, &f))
            return -1;
        for (size_t u = 0; u < sizeof units / sizeof units[0]; u++) {
            size_t k = strlen(units[u].name);
            if (n - i >= k && memcmp(p + i, units[u].name, k) == 0) {
                unit = units[u].ns;
                i += k;
                break;
            }
        }
        if (unit == 0 || unit >= last_unit)
            return -1; /* no unit, or not in decreasing order */
        last_unit = unit;
        if (w > max_ns / unit)
            return -1;
        /* the fraction (nanoparts of one unit) in ns, rounded up; units divide the second or
         * are whole seconds */
        if (unit >= BO_NS_PER_S)
            total += w * unit + f * (unit / BO_NS_PER_S);
        else
            total += w * unit + (f + BO_NS_PER_S / unit - 1) / (BO_NS_PER_S / unit);
        if (total > max_ns)
            return -1;
    }
    return total;
}

/* A repeated field must agree with itself; a conflict drops it (-2 marks the conflict). */
static void set_field(int64_t *f, int64_t v)
{
    if (*f == -2)
        return;
    if (v < 0 || (*f >= 0 && *f != v))
        *f = -2;
    else
        *f = v;
}

/* ---- HTTP-date (RFC 9110 section 5.6.7) -------------------------------- */

static int month_of(const char *p)
{
    static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
    for (int m = 0; m < 12; m++)
        if (memcmp(p, months + 3 * m, 3) == 0)
            return m + 1;
    return 0;
}

static bool leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in(int64_t y, int m)
{
    static const int d[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && leap(y) ? 29 : d[m - 1];
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian; H. Hinnant's algorithm). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* The year of an epoch second (for placing a two-digit year). */
static int64_t year_of(int64_t epoch_s)
{
    int64_t z = (epoch_s >= 0 ? epoch_s : epoch_s - 86399) / 86400 + 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    return yoe + era * 400 + (mp >= 10);
}

/* n fixed digits at p (no sign, no space); -1 when not. */
static int fixed_digits(const char *p, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!is_digit(p[i]))
            return -1;
        v = v * 10 + (p[i] - '0');
    }
    return v;
}

/* "HH:MM:SS" at p (8 bytes). */
static bool parse_clock(const char *p, bo_rl_date *d)
{
    int h = fixed_digits(p, 2), mi = fixed_digits(p + 3, 2), s = fixed_digits(p + 6, 2);
    if (p[2] != ':' || p[5] != ':' || h < 0 || h > 23 || mi < 0 || mi > 59 || s < 0 || s > 60)
        return false;
    d->hour = (int8_t)h;
    d->min = (int8_t)mi;
    d->sec = (int8_t)s;
    return true;
}

static bool day_name(const char *p, size_t n, bool longname)
{
    static const char *const names[] = {"Monday", "Tuesday", "Wednesday", "Thursday",
                                        "Friday", "Saturday", "Sunday"};
    for (int i = 0; i < 7; i++) {
        size_t k = longname ? strlen(names[i]) : 3;
        if (n == k && memcmp(p, names[i], k) == 0)
            return true;
    }
    return false;
}

/*
 * An HTTP-date, whitespace trimmed, exactly one of
 *   IMF-fixdate  "Sun, 06 Nov 1994 08:49:37 GMT"
 *   rfc850-date  "Sunday, 06-Nov-94 08:49:37 GMT"
 *   asctime-date "Sun Nov  6 08:49:37 1994"
 * with a day that exists in its month.  False when not.
 */
static bool parse_http_date(const char *p, size_t n, bo_rl_date *d)
{
    const char *comma;
    int day, mon, year;

    trim(&p, &n);
    memset(d, 0, sizeof *d);
    comma = memchr(p, ',', n < 10 ? n : 10);
    if (comma != NULL) {
        size_t dn = (size_t)(comma - p), r = n - dn;
        const char *q = comma;
        if (dn == 3 && r == 26 && day_name(p, 3, false)) { /* IMF-fixdate */
            if (q[1] != ' ' || q[4] != ' ' || q[8] != ' ' || q[13] != ' ' || q[22] != ' ' ||
                memcmp(q + 23, "GMT", 3) != 0)
                return false;
            day = fixed_digits(q + 2, 2);
            mon = month_of(q + 5);
            year = fixed_digits(q + 9, 4);
            if (!parse_clock(q + 14, d))
                return false;
        } else if (dn >= 6 && r == 24 && day_name(p, dn, true)) { /* rfc850-date */
            if (q[1] != ' ' || q[4] != '-' || q[8] != '-' || q[11] != ' ' || q[20] != ' ' ||
                memcmp(q + 21, "GMT", 3) != 0)
                return false;
            day = fixed_digits(q + 2, 2);
            mon = month_of(q + 5);
            year = fixed_digits(q + 9, 2);
            d->two_digit = true;
            if (!parse_clock(q + 12, d))
                return false;
        } else {
            return false;
        }
    } else { /* asctime-date: "Sun Nov  6 08:49:37 1994" */
        if (n != 24 || !day_name(p, 3, false) || p[3] != ' ' || p[7] != ' ' || p[10] != ' ' ||
            p[19] != ' ')
            return false;
        mon = month_of(p + 4);
        day = p[8] == ' ' ? fixed_digits(p + 9, 1) : fixed_digits(p + 8, 2);
        year = fixed_digits(p + 20, 4);
        if (!parse_clock(p + 11, d))
            return false;
    }
    if (mon == 0 || year < 0 || day < 1 || (!d->two_digit && year < 1900))
        return false;
    if (day > days_in(d->two_digit ? 2000 + year : year, mon))
        return false; /* 29 Feb of a two-digit year is checked again when placed */
    d->year = (int16_t)year;
    d->mon = (int8_t)mon;
    d->day = (int8_t)day;
    return true;
}

/* A date field: a repeat must agree with itself; a bad value drops it (-2). */
static void set_date(bo_rl_date *f, const char *p, size_t n)
{
    bo_rl_date d;
    if (f->year == -2)
        return;
    if (!parse_http_date(p, n, &d) || (f->year != -1 && memcmp(f, &d, sizeof d) != 0)) {
        date_reset(f);
        f->year = -2;
        return;
    }
    *f = d;
}

/*
 * The date's epoch second; a two-digit year is the one in the century of
 * `ref_s` (a wall-clock epoch second) unless that lies more than 50 years
 * ahead, then a century earlier (RFC 9110 section 5.6.7).  False when
 * absent, bad, or (29 February) not a date in that year.
 */
static bool date_epoch(const bo_rl_date *d, int64_t ref_s, int64_t *out)
{
    int64_t y = d->year;
    if (y < 0)
        return false;
    if (d->two_digit) {
        int64_t now_y = year_of(ref_s);
        y += now_y - now_y % 100;
        if (y > now_y + 50)
            y -= 100;
        if (d->day > days_in(y, d->mon))
            return false;
    }
    *out = days_from_civil(y, d->mon, d->day) * 86400 + d->hour * 3600 + d->min * 60 + d->sec;
    return true;
}

/* ---- RFC 8941 lists, just what the draft needs ----------------------- */

typedef struct sf {
    const char *p;
    size_t n, i;
} sf;

static void sf_ows(sf *s)
{
    while (s->i < s->n && is_ows(s->p[s->i]))
        s->i++;
}

static bool sf_is_lcalpha(char c)
{
    return c >= 'a' && c <= 'z';
}

static bool sf_is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool sf_is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static uint64_t fnv(uint64_t h, char c)
{
    return (h ^ (uint8_t)c) * 1099511628211ULL;
}

/* Bare item kinds: what the draft's parameters need to tell apart. */
enum { SF_BAD = 0, SF_INT, SF_OTHER };

/*
 * Parse one bare item at s->i.  Integers come back in *iv; strings, tokens
 * and byte sequences as a hash in *hv (never 0).
 */
static int sf_bare(sf *s, int64_t *iv, uint64_t *hv)
{
    uint64_t h = 1469598103934665603ULL;
    char c;

    if (s->i >= s->n)
        return SF_BAD;
    c = s->p[s->i];
    if (c == '-' || sf_is_digit(c)) {
        bool neg = c == '-';
        int64_t v = 0;
        int digits = 0;
        if (neg)
            s->i++;
        while (s->i < s->n && sf_is_digit(s->p[s->i])) {
            if (++digits > 15)
                return SF_BAD;
            v = v * 10 + (s->p[s->i++] - '0');
        }
        if (digits == 0)
            return SF_BAD;
        if (s->i < s->n && s->p[s->i] == '.') { /* a decimal: valid, not an integer */
            int frac = 0;
            s->i++;
            while (s->i < s->n && sf_is_digit(s->p[s->i])) {
                s->i++;
                frac++;
            }
            if (frac == 0 || frac > 3 || digits > 12)
                return SF_BAD;
            return SF_OTHER;
        }
        *iv = neg ? -v : v;
        return SF_INT;
    }
    if (c == '"') {
        s->i++;
        while (s->i < s->n) {
            c = s->p[s->i++];
            if (c == '\\') {
                if (s->i >= s->n || (s->p[s->i] != '"' && s->p[s->i] != '\\'))
                    return SF_BAD;
                c = s->p[s->i++];
            } else if (c == '"') {
                *hv = h ? h : 1;
                return SF_OTHER;
            } else if (c < 0x20 || c > 0x7e) {
                return SF_BAD;
            }
            h = fnv(h, c);
        }
        return SF_BAD;
    }
    if (c == ':') {
        s->i++;
        while (s->i < s->n && s->p[s->i] != ':') {
            c = s->p[s->i++];
            if (!(sf_is_alpha(c) || sf_is_digit(c) || c == '+' || c == '/' || c == '='))
                return SF_BAD;
            h = fnv(h, c);
        }
        if (s->i >= s->n)
            return SF_BAD;
        s->i++;
        *hv = fnv(h, ':'); /* never equal to a string's hash by accident of emptiness */
        return SF_OTHER;
    }
    if (c == '?') {
        s->i++;
        if (s->i >= s->n || (s->p[s->i] != '0' && s->p[s->i] != '1'))
            return SF_BAD;
        s->i++;
        return SF_OTHER;
    }
    if (sf_is_alpha(c) || c == '*') {
        while (s->i < s->n) {
            c = s->p[s->i];
            if (!(sf_is_alpha(c) || sf_is_digit(c) || strchr("!#$%&'*+-.^_`|~:/", c) != NULL))
                break;
            h = fnv(h, c);
            s->i++;
        }
        *hv = h ? h : 1;
        return SF_OTHER;
    }
    return SF_BAD;
}

/* The parameters of one item that the draft defines. */
typedef struct sf_params {
    int64_t r, t, q, w;     /* -1 absent; -2 present but not a usable integer */
    uint64_t pk;
} sf_params;

static int64_t param_int(int kind, int64_t v, int64_t max)
{
    if (kind != SF_INT || v < 0 || v > max)
        return -2;
    return v;
}

/* Parameters after an item: *(";" key ["=" bare-item]).  False when malformed. */
static bool sf_params_parse(sf *s, sf_params *pp)
{
    pp->r = pp->t = pp->q = pp->w = -1;
    pp->pk = 0;
    while (s->i < s->n && s->p[s->i] == ';') {
        char key[8];
        size_t k = 0;
        int64_t iv = 0;
        uint64_t hv = 0;
        int kind = SF_OTHER; /* a bare key is the boolean true */

        s->i++;
        sf_ows(s);
        if (s->i >= s->n || !(sf_is_lcalpha(s->p[s->i]) || s->p[s->i] == '*'))
            return false;
        while (s->i < s->n) {
            char c = s->p[s->i];
            if (!(sf_is_lcalpha(c) || sf_is_digit(c) || c == '_' || c == '-' || c == '.' ||
                  c == '*'))
                break;
            if (k < sizeof key - 1)
                key[k] = c;
            k++;
            s->i++;
        }
        key[k < sizeof key ? k : sizeof key - 1] = '\0';
        if (k >= sizeof key)
            key[0] = '\0'; /* a long key is none of ours */
        if (s->i < s->n && s->p[s->i] == '=') {
            s->i++;
            kind = sf_bare(s, &iv, &hv);
            if (kind == SF_BAD)
                return false;
        }
        if (strcmp(key, "r") == 0)
            pp->r = param_int(kind, iv, BO_RL_MAX_COUNT);
        else if (strcmp(key, "q") == 0)
            pp->q = param_int(kind, iv, BO_RL_MAX_COUNT);
        else if (strcmp(key, "t") == 0)
            pp->t = param_int(kind, iv, BO_RL_MAX_RESET_S);
        else if (strcmp(key, "w") == 0)
            pp->w = param_int(kind, iv, BO_RL_MAX_RESET_S);
        else if (strcmp(key, "pk") == 0)
            pp->pk = kind == SF_OTHER ? hv : 0;
    }
    return true;
}

/*
 * Walk a list field, calling `each` for every item (name hash, params).
 * Returns false when the field is malformed: the caller then drops it all.
 */
typedef void (*sf_item_fn)(bo_rl_headers *h, uint64_t name, const sf_params *pp, void *acc);

static bool sf_list(const char *p, size_t n, bo_rl_headers *h, sf_item_fn each, void *acc)
{
    sf s = {p, n, 0};

    while (n > 0 && is_ows(p[n - 1]))
        s.n = --n;
    sf_ows(&s);
    if (s.i >= s.n)
        return false;
    for (;;) {
        int64_t iv = 0;
        uint64_t name = 0;
        sf_params pp;
        if (s.i < s.n && s.p[s.i] == '(')
            return false; /* inner lists: not the draft's */
        if (sf_bare(&s, &iv, &name) == SF_BAD || !sf_params_parse(&s, &pp))
            return false;
        each(h, name, &pp, acc);
        sf_ows(&s);
        if (s.i >= s.n)
            return true;
        if (s.p[s.i] != ',')
            return false;
        s.i++;
        sf_ows(&s);
        if (s.i >= s.n)
            return false; /* trailing comma */
    }
}

typedef struct rl_acc {
    int64_t r, t;
    uint64_t name, pk;
    double rate;          /* r / t of the chosen item; lower is stricter */
    bool any;
} rl_acc;

/* RateLimit item: keep the most restrictive (fewest requests per second left). */
static void on_ratelimit_item(bo_rl_headers *h, uint64_t name, const sf_params *pp, void *accp)
{
    rl_acc *acc = accp;
    (void)h;
    if (pp->r < 0 || pp->t == -2)
        return;
    double rate = pp->t > 0 ? (double)pp->r / (double)pp->t : (double)pp->r;
    if (pp->t < 0)
        rate = (double)pp->r; /* window unknown yet: rank by count */
    if (acc->any && rate >= acc->rate)
        return;
    acc->any = true;
    acc->rate = rate;
    acc->r = pp->r;
    acc->t = pp->t;
    acc->name = name;
    acc->pk = pp->pk;
}

static void on_policy_item(bo_rl_headers *h, uint64_t name, const sf_params *pp, void *acc)
{
    (void)acc;
    if (pp->q < 0 || pp->w == -2 || h->npol >= BO_RL_POLICIES)
        return;
    h->pol[h->npol].name = name;
    h->pol[h->npol].pk = pp->pk;
    h->pol[h->npol].quota = pp->q;
    h->pol[h->npol].window_s = pp->w;
    h->npol++;
}

bool bo_rl_first_letter(char c)
{
    c = (char)(c | 0x20); /* 'X' and 'x' alike; no other byte becomes x, r, a or d */
    return c == 'x' || c == 'r' || c == 'a' || c == 'd';
}

/* The fields read from x-... lines: x-ratelimit-*, x-rate-limit-*, x-ms-retry-after-ms. */
static bool x_line(bo_rl_headers *h, const char *name, size_t nlen, const char *v, size_t vn)
{
    static const char *const openai[] = {"x-ratelimit-limit-requests",
                                         "x-ratelimit-remaining-requests",
                                         "x-ratelimit-reset-requests",
                                         "x-ratelimit-limit-tokens",
                                         "x-ratelimit-remaining-tokens",
                                         "x-ratelimit-reset-tokens"};

    if (name_is(name, nlen, "x-ms-retry-after-ms")) {
        set_field(&h->ms_ra_ns, parse_saturated(v, vn, RL_MAX_HINT_S * 1000) * BO_NS_PER_MS);
        return true;
    }
    if (nlen > 13 && name_is(name, 13, "x-rate-limit-")) { /* X (Twitter) */
        if (name_is(name, nlen, "x-rate-limit-limit"))
            set_field(&h->t_limit, parse_count(v, vn, BO_RL_MAX_COUNT));
        else if (name_is(name, nlen, "x-rate-limit-remaining"))
            set_field(&h->t_remaining, parse_count(v, vn, BO_RL_MAX_COUNT));
        else if (name_is(name, nlen, "x-rate-limit-reset"))
            set_field(&h->t_reset_ms, parse_seconds(v, vn, 99999999999LL, BO_NS_PER_MS));
        else
            return false;
        h->seen = true;
        return true;
    }
    if (nlen < 12 || !name_is(name, 12, "x-ratelimit-"))
        return false;
    if (name_is(name, nlen, "x-ratelimit-limit")) {
        set_field(&h->x_limit, parse_count(v, vn, BO_RL_MAX_COUNT));
    } else if (name_is(name, nlen, "x-ratelimit-remaining")) {
        set_field(&h->x_remaining, parse_count(v, vn, BO_RL_MAX_COUNT));
    } else if (name_is(name, nlen, "x-ratelimit-reset")) {
        set_field(&h->x_reset_ms, parse_seconds(v, vn, 99999999999LL, BO_NS_PER_MS));
    } else if (name_is(name, nlen, "x-ratelimit-reset-after")) {
        set_field(&h->x_reset_after_ns, parse_seconds(v, vn, BO_RL_MAX_RESET_S, 1));
    } else if (name_is(name, nlen, "x-ratelimit-bucket")) {
        uint64_t hash = 1469598103934665603ULL;
        trim(&v, &vn);
        for (size_t i = 0; i < vn; i++)
            hash = (hash ^ (uint8_t)v[i]) * 1099511628211ULL;
        if (vn == 0 || (h->x_bucket != 0 && h->x_bucket != hash))
            hash = 1; /* empty or given twice differently: a key of its own, never a match */
        h->x_bucket = hash;
    } else {
        size_t i = 0;
        while (i < 6 && !name_is(name, nlen, openai[i]))
            i++;
        if (i == 6)
            return false;
        int k = i >= 3; /* tokens */
        switch (i % 3) {
        case 0:
            set_field(&h->o_limit[k], parse_count(v, vn, k ? RL_MAX_BIG : BO_RL_MAX_COUNT));
            break;
        case 1:
            set_field(&h->o_remaining[k],
                      parse_count(v, vn, k ? RL_MAX_BIG : BO_RL_MAX_COUNT));
            break;
        default:
            set_field(&h->o_reset_ns[k], parse_duration(v, vn));
            break;
        }
    }
    h->seen = true;
    return true;
}

bool bo_rl_header_line(bo_rl_headers *h, const char *line, size_t len)
{
    const char *colon;
    size_t nlen;
    char c;

    if (len < 4 || !bo_rl_first_letter(line[0]))
        return false;
    c = lower(line[0]);
    colon = memchr(line, ':', len);
    if (colon == NULL)
        return false;
    h->untouched = false; /* any field below may change */
    nlen = (size_t)(colon - line);
    const char *v = colon + 1;
    size_t vn = len - nlen - 1;
    while (vn > 0 && (v[vn - 1] == '\n' || v[vn - 1] == '\r'))
        vn--;

    if (c == 'a') {
        if (!name_is(line, nlen, "age"))
            return false;
        int64_t age = parse_count(v, vn, RL_MAX_BIG);
        if (age != 0) /* a cache answered (a bad Age counts as one: be safe) */
            h->from_cache = true;
        return true;
    }
    if (c == 'd') {
        if (!name_is(line, nlen, "date"))
            return false;
        trim(&v, &vn);
        if (h->date_len == 0 && vn > 0 && vn < BO_RL_DATE_MAX) {
            memcpy(h->date, v, vn);
            h->date_len = (uint8_t)vn;
        } else if (h->date_len == BO_RL_DATE_BAD || h->date_len != vn ||
                   memcmp(h->date, v, vn) != 0) { /* BAD is 255: a length, never compared */
            h->date_len = BO_RL_DATE_BAD;
        }
        return true;
    }
    if (c == 'x')
        return x_line(h, line, nlen, v, vn);
    if (nlen >= 11 && name_is(line, 11, "retry-after")) {
        if (nlen == 11) { /* delta-seconds or an HTTP-date */
            const char *t = v;
            size_t tn = vn;
            trim(&t, &tn);
            if (tn > 0 && is_digit(t[0])) {
                set_field(&h->ra_s, parse_saturated(t, tn, RL_MAX_HINT_S));
            } else {
                set_date(&h->ra_date, t, tn);
                if (h->ra_date.year == -2)
                    h->ra_s = -2; /* neither form: no hint from here at all */
            }
        } else if (name_is(line, nlen, "retry-after-ms")) {
            set_field(&h->ra_ms_ns, parse_saturated(v, vn, RL_MAX_HINT_S * 1000) * BO_NS_PER_MS);
        } else {
            return false;
        }
        return true;
    }
    if (nlen < 9 || !name_is(line, 9, "ratelimit"))
        return false;
    if (nlen == 9) {
        rl_acc acc = {0};
        if (sf_list(v, vn, h, on_ratelimit_item, &acc) && acc.any && h->d_remaining == -1) {
            h->d_remaining = acc.r;
            h->d_reset_s = acc.t;
            h->d_name = acc.name;
            h->d_pk = acc.pk;
        }
    } else if (name_is(line, nlen, "ratelimit-policy")) {
        unsigned before = h->npol;
        bo_rl_headers tmp = *h;
        if (!sf_list(v, vn, &tmp, on_policy_item, NULL))
            tmp.npol = before; /* malformed: the whole field goes */
        memcpy(h->pol, tmp.pol, sizeof h->pol);
        h->npol = tmp.npol;
    } else if (name_is(line, nlen, "ratelimit-limit")) {
        set_field(&h->limit, parse_count(v, vn, BO_RL_MAX_COUNT));
    } else if (name_is(line, nlen, "ratelimit-remaining")) {
        set_field(&h->remaining, parse_count(v, vn, BO_RL_MAX_COUNT));
    } else if (name_is(line, nlen, "ratelimit-reset")) {
        set_field(&h->reset_s, parse_count(v, vn, BO_RL_MAX_RESET_S));
    } else {
        return false;
    }
    h->seen = true;
    return true;
}

/* remaining and limit of one dialect, field by field. */
static bool counts(int64_t limit, int64_t remaining, bo_rl_quota *q)
{
    q->limit = limit >= 0 ? limit : -1;
    if (remaining < 0 || (limit >= 0 && remaining > limit))
        return false;
    q->remaining = remaining;
    return true;
}

/* An epoch reset (ms) as time from now: false when absent, bad, before the
 * current second or more than 31 days ahead. */
static bool epoch_reset(int64_t reset_ms, int64_t wall_ns, int64_t *reset_ns)
{
    int64_t wall_s = wall_ns / BO_NS_PER_S;
    if (reset_ms < 0 || wall_ns <= 0)
        return false;
    if (reset_ms / 1000 < wall_s || reset_ms / 1000 - wall_s > BO_RL_MAX_RESET_S)
        return false;
    *reset_ns = reset_ms * BO_NS_PER_MS - wall_ns;
    if (*reset_ns < 0)
        *reset_ns = 0;
    return true;
}

/* r1 requests left over t1 ns is a stricter quota than r2 over t2 (fewer
 * requests a second; a reset of 0 means full again now: never stricter). */
static bool stricter(int64_t r1, int64_t t1, int64_t r2, int64_t t2)
{
    if (t1 <= 0)
        return false;
    if (t2 <= 0)
        return true;
    return (double)r1 / (double)t1 < (double)r2 / (double)t2;
}

/*
 * OpenAI's two quotas, requests and tokens: the stricter is paced.  Tokens
 * are counted in requests by the tokens this client's requests spent per
 * request, when both limits and counts tell it; otherwise the tokens count
 * only when none are left.
 */
static bool openai_quota(const bo_rl_headers *h, bo_rl_quota *q)
{
    const int64_t *lim = h->o_limit, *rem = h->o_remaining, *rst = h->o_reset_ns;
    bool req = rem[0] >= 0 && rst[0] >= 0 && (lim[0] < 0 || rem[0] <= lim[0]);
    int64_t tok = -1; /* the tokens left, in requests */

    if (rem[1] >= 0 && rst[1] >= 0 && (lim[1] < 0 || rem[1] <= lim[1])) {
        if (req && lim[0] > rem[0] && lim[1] > rem[1]) {
            double per = (double)(lim[1] - rem[1]) / (double)(lim[0] - rem[0]);
            double left = (double)rem[1] / per;
            tok = left > (double)BO_RL_MAX_COUNT ? BO_RL_MAX_COUNT : (int64_t)left;
        } else if (rem[1] == 0) {
            tok = 0;
        }
    }
    if (tok >= 0 && (!req || stricter(tok, rst[1], rem[0], rst[0]))) {
        q->limit = -1;
        q->remaining = tok;
        q->reset_ns = rst[1];
        return true;
    }
    if (!req)
        return false;
    q->limit = lim[0] >= 0 ? lim[0] : -1;
    q->remaining = rem[0];
    q->reset_ns = rst[0];
    return true;
}

bool bo_rl_headers_quota(const bo_rl_headers *h, int64_t wall_ns, bo_rl_quota *q)
{
    int64_t reset;

    memset(q, 0, sizeof *q);
    q->limit = q->window_ns = -1;
    if (!h->seen || h->from_cache)
        return false;
    if (h->d_remaining >= 0) {
        int64_t w = -1, quota = -1;
        for (unsigned i = 0; i < h->npol; i++) {
            if (h->pol[i].name == h->d_name && h->pol[i].pk == h->d_pk) {
                w = h->pol[i].window_s;
                quota = h->pol[i].quota;
                break;
            }
        }
        int64_t t = h->d_reset_s >= 0 ? h->d_reset_s : w;
        if (t >= 0 && counts(quota, h->d_remaining, q)) {
            q->reset_ns = t * BO_NS_PER_S;
            q->window_ns = w > 0 ? w * BO_NS_PER_S : -1;
            q->pk = h->d_pk;
            return true;
        }
    }
    if (h->reset_s >= 0 && counts(h->limit, h->remaining, q)) {
        q->reset_ns = h->reset_s * BO_NS_PER_S;
        return true;
    }
    /* GitHub, Discord: Reset-After (exact) wins over the epoch */
    bool exact = true;
    if (h->x_reset_after_ns >= 0) {
        reset = h->x_reset_after_ns;
    } else if (epoch_reset(h->x_reset_ms, wall_ns, &reset)) {
        exact = h->x_reset_ms % 1000 != 0; /* decimals: Discord's */
    } else {
        reset = -1;
    }
    if (reset >= 0 && counts(h->x_limit, h->x_remaining, q)) {
        q->reset_ns = reset;
        q->pk = h->x_bucket;
        q->reset_exact = exact;
        return true;
    }
    if (openai_quota(h, q)) {
        /* durations to the millisecond ("850ms", "1.5s"); "2s" may be rounded */
        q->reset_exact = q->reset_ns % BO_NS_PER_S != 0;
        return true;
    }
    if (epoch_reset(h->t_reset_ms, wall_ns, &reset) && counts(h->t_limit, h->t_remaining, q)) {
        q->reset_ns = reset;
        return true;
    }
    memset(q, 0, sizeof *q);
    q->limit = q->window_ns = -1;
    return false;
}

bool bo_rl_headers_retry_date(const bo_rl_headers *h, int64_t wall_ns, int64_t *at_s,
                              int64_t *date_s)
{
    bo_rl_date date;

    if (h->ra_ms_ns >= 0 || h->ms_ra_ns >= 0 || h->ra_s >= 0 || h->ra_date.year < 0)
        return false;
    if (h->date_len == BO_RL_DATE_BAD || h->date_len == 0 || wall_ns <= 0)
        return false;
    date_reset(&date);
    set_date(&date, h->date, h->date_len);
    if (!date_epoch(&date, wall_ns / BO_NS_PER_S, date_s) ||
        !date_epoch(&h->ra_date, *date_s, at_s))
        return false;
    /* a Date in nanoseconds must fit beside the wall clock (up to 2262) */
    if (*date_s < 0 || *date_s > RL_MAX_HINT_S - 2)
        return false;
    return *at_s > *date_s;
}

int64_t bo_rl_clock_wait(bo_rl_clock *c, int64_t at_s, int64_t date_s, int64_t wall_ns)
{
    /* date_s is at most RL_MAX_HINT_S - 2 and wall_ns not negative, and the
     * bound kept stays within a second above least: nothing below overflows */
    int64_t least = date_s * BO_NS_PER_S - wall_ns;
    if (!c->known || least > c->ahead_ns || least + BO_NS_PER_S <= c->ahead_ns)
        c->ahead_ns = least;
    c->known = true;
    int64_t span = at_s - date_s;
    if (span > RL_MAX_HINT_S)
        return INT64_MAX; /* saturated, as bo_rl_headers_retry_after's span */
    return span * BO_NS_PER_S - (c->ahead_ns - least); /* span >= 1 s, the rest < 1 s */
}

int64_t bo_rl_headers_retry_after(const bo_rl_headers *h, int64_t wall_ns)
{
    int64_t ns = -1;

    if (h->ra_ms_ns >= 0)
        ns = h->ra_ms_ns;
    else if (h->ms_ra_ns >= 0)
        ns = h->ms_ra_ns;
    else if (h->ra_s >= 0)
        ns = h->ra_s * BO_NS_PER_S;
    else if (h->ra_date.year >= 0) {
        int64_t wall_s = wall_ns / BO_NS_PER_S, at, now;
        bo_rl_date date;
        date_reset(&date);
        if (h->date_len != BO_RL_DATE_BAD && h->date_len > 0)
            set_date(&date, h->date, h->date_len);
        if (date_epoch(&date, wall_s, &now)) {
            if (!date_epoch(&h->ra_date, now, &at))
                return -1;
            /* as the server's clock tells it (saturated: the year 9999) */
            if (at <= now)
                return -1;
            ns = at - now > RL_MAX_HINT_S ? INT64_MAX : (at - now) * BO_NS_PER_S;
        } else {
            if (wall_ns <= 0 || !date_epoch(&h->ra_date, wall_s, &at))
                return -1;
            ns = at > INT64_MAX / BO_NS_PER_S ? INT64_MAX : at * BO_NS_PER_S - wall_ns;
        }
    }
    return ns > 0 ? ns : -1;
}

bool bo_rl_headers_exhausted(const bo_rl_headers *h)
{
    return h->x_remaining == 0 || h->t_remaining == 0 || h->remaining == 0 ||
           h->d_remaining == 0 || h->o_remaining[0] == 0 || h->o_remaining[1] == 0;
}

/* ---- pacing ----------------------------------------------------------- */

void bo_quota_init(bo_quota *q)
{
    memset(q, 0, sizeof *q);
}

static bo_quota_slot *slot_for(bo_quota *q, uint64_t pk, int64_t now_ns)
{
    bo_quota_slot *oldest = NULL;
    for (int i = 0; i < BO_QUOTA_SLOTS; i++) {
        bo_quota_slot *s = &q->slot[i];
        if (s->used && s->pk == pk)
            return s;
        if (oldest == NULL || (oldest->used && (!s->used || s->noted_ns < oldest->noted_ns)))
            oldest = s; /* the first free slot, else the least recently noted */
    }
    memset(oldest, 0, sizeof *oldest);
    oldest->used = true;
    oldest->pk = pk;
    oldest->reset_at_ns = now_ns;
    oldest->next_ns = now_ns;
    oldest->last_remaining = -1;
    oldest->limit = -1;
    oldest->ev_remaining = -1;
    return oldest;
}

/* Spacing once the window has reset: limit per window, else the last pace. */
static int64_t after_gap(const bo_quota_slot *s)
{
    return s->after_gap_ns > 0 ? s->after_gap_ns : s->last_gap_ns;
}

/* A bucket's time per token: measured, else the limit per window. */
static int64_t refill_gap(const bo_quota_slot *s)
{
    return s->refill_gap_ns > 0 ? s->refill_gap_ns : after_gap(s);
}

/*
 * A bucket's tokens over a span: remaining's rise plus the answers that
 * spent one since the mark (a 429 spent none).  A full bucket at either end refilled less than
 * its rate (it was capped), so such a span is dropped.  Smoothed, a quarter
 * of each new span.
 *
 * `fresh`: the answer's request was sent after the mark's answer came, so
 * the server counted it after the mark's.  Only fresh answers prove that
 * tokens came back, and only by their values, not their order: answers to
 * requests under way together overtake one another, and one that waited in
 * a descheduled thread may show a remaining from long before.
 */
static void measure_refill(bo_quota_slot *s, const bo_rl_quota *rl, int64_t sent_ns,
                           bool spent, int64_t now_ns)
{
    bool full = rl->limit > 0 && rl->remaining >= rl->limit;
    if (s->mark_ns == 0 || full || now_ns < s->mark_ns) {
        s->mark_ns = full ? 0 : now_ns;
        s->mark_remaining = rl->remaining;
        s->mark_reset_at_ns = now_ns + rl->reset_ns;
        s->mark_answers = 0;
        s->mark_exact = rl->reset_exact;
        memset(s->mark_seen, 0, sizeof s->mark_seen);
        return;
    }
    bool fresh = sent_ns > s->mark_ns;
    s->mark_answers += spent;
    /* Tokens back before the window the mark saw has ended: a bucket, even
     * when it is spent exactly as fast as it refills, so that remaining
     * never rises between two answers.  In a fixed window every request
     * counted after the mark has a remaining below the mark's, each its
     * own.  The window ends at the tighter of the mark's reset and the
     * known one; a reset announced more than the headers' one-second
     * rounding later is a new window: a fixed window that has just reset. */
    int64_t end = s->mark_reset_at_ns < s->reset_at_ns ? s->mark_reset_at_ns : s->reset_at_ns;
    /* Told to the millisecond, a fixed window's end stays put, while a
     * bucket's "full at" moves one refill time later for each token spent
     * (time to full = tokens missing / rate): the refill time is known from
     * the second answer on, before any token came back. */
    int64_t shift = now_ns + rl->reset_ns - s->mark_reset_at_ns;
    if (rl->reset_exact && s->mark_exact && fresh && spent && now_ns < s->mark_reset_at_ns &&
        shift > BO_QUOTA_EXACT_SLACK_NS && s->mark_answers > 0) {
        s->refills = true;
        if (s->refill_gap_ns == 0)
            s->refill_gap_ns = shift / s->mark_answers;
    }
    if (fresh && spent && now_ns < end &&
        now_ns + rl->reset_ns <= s->mark_reset_at_ns + BO_QUOTA_ROUNDING_NS) {
        int64_t k = s->mark_remaining - rl->remaining;
        if (k <= 0) {
            s->refills = true;
        } else if (k < 256) {
            uint64_t bit = 1ULL << (k % 64);
            if (s->mark_seen[k / 64] & bit)
                s->refills = true;
            s->mark_seen[k / 64] |= bit;
        }
    }
    int64_t span = now_ns - s->mark_ns;
    if (span < BO_QUOTA_RATE_SPAN_NS)
        return;
    /* the rate counts every answer: stale ones at the start and ones still
     * under way at the end of a span about cancel out */
    int64_t tokens = rl->remaining - s->mark_remaining + s->mark_answers;
    if (tokens > 0) {
        int64_t gap = span / tokens;
        s->refill_gap_ns = s->refill_gap_ns > 0 ? (3 * s->refill_gap_ns + gap) / 4 : gap;
    }
    s->mark_ns = now_ns;
    s->mark_remaining = rl->remaining;
    s->mark_reset_at_ns = now_ns + rl->reset_ns;
    s->mark_answers = 0;
    s->mark_exact = rl->reset_exact;
    memset(s->mark_seen, 0, sizeof s->mark_seen);
}

void bo_quota_note(bo_quota *q, const bo_rl_quota *rl, unsigned inflight, int64_t now_ns,
                   bo_rng *rng)
{
    bo_quota_note_answer(q, rl, inflight, now_ns, true, now_ns, rng);
}

/* The slot spreads its quota evenly: others are known to spend it. */
static bool spreading(const bo_quota_slot *s, int64_t now_ns)
{
    return now_ns < s->shared_until_ns;
}

/* Evidence that others spend the slot's quota: spread it through the
 * current window and the next one (new evidence extends it). */
static void share(bo_quota_slot *s, int64_t now_ns)
{
    int64_t w = s->window_ns > 0 ? s->window_ns : BO_NS_PER_S;
    int64_t until = (s->reset_at_ns > now_ns ? s->reset_at_ns : now_ns) + w;
    if (until > s->shared_until_ns)
        s->shared_until_ns = until;
}

static bool is_bucket(const bo_quota_slot *s)
{
    return s->refills && !s->not_bucket && refill_gap(s) > 0;
}

/*
 * The first admission after a spent window's reset: a little jitter past
 * it, so that the processes and hosts that wait for one reset do not all
 * send at one instant: up to one send's spacing of the window (limit per
 * window), at most a fiftieth of the window (20 ms when neither is known).
 * Spreading (others share the quota), up to one spacing or 100 ms.
 */
static int64_t after_reset(bo_quota *q, const bo_quota_slot *s, bool spread)
{
    int64_t j = after_gap(s) > 0 ? after_gap(s) : BO_NS_PER_S / 10;
    if (!spread) {
        int64_t small = s->window_ns > 0 ? s->window_ns / 50 : BO_NS_PER_S / 50;
        if (j > small)
            j = small;
    }
    return s->reset_at_ns + (int64_t)((double)j * bo_rng_uniform(&q->rng));
}

/*
 * Evidence of others, from one answer: from the mark (the lowest remaining
 * of this window so far) the server counted the drop to this answer's
 * remaining; of ours it can have counted only ev_owed (in flight at the
 * mark, and sent since).  A stale answer (its remaining above the mark's:
 * counted before it) tells nothing, unless a bucket refilled (a fresh
 * answer: its request left after the last answer came).
 */
static void note_evidence(bo_quota_slot *s, const bo_rl_quota *rl, unsigned inflight,
                          bool new_window, bool fresh, int64_t now_ns)
{
    if (!new_window && s->ev_remaining >= 0 && rl->remaining <= s->ev_remaining) {
        if (s->ev_remaining - rl->remaining > s->ev_owed + BO_QUOTA_SHARED_SLACK)
            share(s, now_ns);
    } else if (!new_window && s->ev_remaining >= 0 && !fresh) {
        return;
    }
    s->ev_remaining = rl->remaining;
    s->ev_owed = inflight;
}

/*
 * Headers give the reset in whole seconds, so one response only bounds the
 * reset instant.  Responses within one window each give a bound, and the
 * earliest is kept: the pace then ends the window on time instead of up to
 * a second late.  A bound more than a second past the kept one starts a
 * new window.
 */
void bo_quota_note_answer(bo_quota *q, const bo_rl_quota *rl, unsigned inflight,
                          int64_t sent_ns, bool spent, int64_t now_ns, bo_rng *rng)
{
    bo_quota_slot *s = slot_for(q, rl->pk, now_ns);
    /* A reset in whole seconds that says 0 is a window with under a second left
     * (rounded down or to the nearest, as OpenAI's "0s"), not one that is over:
     * taken as over, its remaining count held nothing back. */
    int64_t told = rl->reset_ns == 0 && !rl->reset_exact ? BO_NS_PER_S : rl->reset_ns;
    int64_t at = now_ns + told + s->late_ns;
    /* the server counted this request after every answer noted so far */
    bool fresh = sent_ns > s->noted_ns;

    if (!q->seeded) { /* admissions draw jitter from here: bo_dest_admit has no generator */
        bo_rng_seed(&q->rng, bo_rng_next(rng));
        q->seeded = true;
    }

    /* A quota that grows back before its window ends is a token bucket:
     * its tokens return continuously, not all at the reset.  Only an answer
     * to a request sent after the last answer came counts (the server saw
     * it later); a reset announced more than the headers' one-second
     * rounding past the known one is a fixed window that has just reset. */
    if (s->last_remaining >= 0 && fresh && rl->remaining > s->last_remaining &&
        now_ns < s->reset_at_ns && at <= s->reset_at_ns + BO_QUOTA_ROUNDING_NS)
        s->refills = true;
    s->last_remaining = rl->remaining;
    measure_refill(s, rl, sent_ns, spent, now_ns);
    bool new_window =
        s->reset_at_ns <= now_ns || at > s->reset_at_ns + BO_QUOTA_ROUNDING_NS || at < now_ns;
    if (new_window || at < s->reset_at_ns)
        s->reset_at_ns = at;
    s->noted_ns = now_ns;
    if (rl->window_ns > s->window_ns)
        s->window_ns = rl->window_ns;
    if (rl->reset_ns > s->window_ns && rl->window_ns < 0)
        s->window_ns = rl->reset_ns;
    if (rl->limit >= 0)
        s->limit = rl->limit;
    /* once the window resets: limit per window, when both are known */
    if (rl->limit > 0 && s->window_ns > 0)
        s->after_gap_ns = s->window_ns / rl->limit;

    /* Several partitions answer for this destination: which one a request
     * will spend is not known before it is sent, so each is spread. */
    if (q->have_pk && q->last_pk != rl->pk) {
        for (int i = 0; i < BO_QUOTA_SLOTS; i++)
            if (q->slot[i].used)
                share(&q->slot[i], now_ns);
    }
    q->have_pk = true;
    q->last_pk = rl->pk;
    note_evidence(s, rl, inflight, new_window, fresh, now_ns);

    /* What the window still allows by our own count: the lowest remaining
     * of this window (the mark: the server's count after the latest of our
     * requests it answered), less what is in flight now (perhaps counted
     * after it).  A stale answer was counted before the mark: it only
     * leaves the in-flight count. */
    int64_t left = s->reset_at_ns - now_ns;
    int64_t budget = s->ev_remaining - (int64_t)inflight;
    bool bucket = is_bucket(s);
    if (bucket)
        budget -= BO_QUOTA_BUCKET_RESERVE;
    s->avail = budget;
    s->avail_answered = true;
    /* The one send after a spent window's known reset, answered: a fixed
     * window has its whole limit back (others' spending shows as evidence
     * above), a token bucket only what came back while we waited. */
    if (s->rolled && fresh && spent && rl->limit > 0 && rl->remaining + 1 < rl->limit &&
        !spreading(s, now_ns))
        s->refills = true;
    s->rolled = false;

    if (!spreading(s, now_ns)) {
        /* Spend, then wait: nothing held while requests are left; once
         * spent, the bucket's next token, or the window's reset. */
        s->gap_ns = 0;
        if (left <= 0 || s->avail > 0) {
            if (s->next_ns > now_ns)
                s->next_ns = now_ns;
        } else if (bucket) {
            s->last_gap_ns = refill_gap(s);
            s->next_ns = s->last_send_ns + refill_gap(s);
        } else if (s->next_ns < s->reset_at_ns) {
            s->next_ns = after_reset(q, s, false);
        }
        return;
    }
    budget = s->avail;
    if (left <= 0) {
        s->gap_ns = 0;
    } else if (budget <= 0 && bucket) {
        /* a bucket: the next token comes at the refill pace, not at the
         * reset; the reserve absorbs a send the jitter made early */
        s->gap_ns = refill_gap(s);
        s->last_gap_ns = s->gap_ns;
    } else if (budget <= 0) {
        /* spent: nothing until the reset (plus jitter, so that clients
         * do not all start at the reset instant), then the window's pace */
        int64_t t = after_reset(q, s, true);
        s->gap_ns = 0;
        if (s->next_ns < t)
            s->next_ns = t;
        return;
    } else if (bucket) {
        /* a bucket: what is left and what comes back until the reset */
        s->gap_ns = left / (budget + left / refill_gap(s));
        s->last_gap_ns = s->gap_ns;
    } else {
        s->gap_ns = left / budget;
        s->last_gap_ns = s->gap_ns;
    }
    /* a faster pace takes effect now, a slower one from the last admission */
    if (s->next_ns > now_ns + s->gap_ns)
        s->next_ns = now_ns + s->gap_ns;
}

void bo_quota_note_throttle(bo_quota *q, int64_t sent_ns, int64_t now_ns)
{
    for (int i = 0; i < BO_QUOTA_SLOTS; i++) {
        bo_quota_slot *s = &q->slot[i];
        if (!s->used)
            continue;
        /*
         * Sent once the reset the headers gave had passed, and refused: the
         * reset was early (rounded: a fixed window with 0.4 s left says "0s").
         * Wait a full rounding past it, and read every later reset so.
         */
        if (sent_ns >= s->reset_at_ns && !is_bucket(s) && s->late_ns < BO_QUOTA_ROUNDING_NS) {
            /* rounded to the nearest second first (Go's durations), down if that fails */
            int64_t more = s->late_ns == 0 ? BO_QUOTA_HALF_ROUNDING_NS
                                           : BO_QUOTA_ROUNDING_NS - s->late_ns;
            s->late_ns += more;
            s->reset_at_ns += more;
            if (s->reset_at_ns <= now_ns)
                s->reset_at_ns = now_ns + more;
            s->rolled = false;
            s->avail = 0;
            s->avail_answered = false;
            s->next_ns = after_reset(q, s, false);
            continue;
        }
        /*
         * Refused at a token a bucket's refill was to have brought back: once is
         * the jitter, twice is a fixed window read as a bucket (its reset
         * instant moved as a whole-second rounding moves it).  A window from
         * then on: nothing until its reset.
         */
        if (is_bucket(s) && s->avail < 0 && now_ns < s->reset_at_ns + BO_QUOTA_ROUNDING_NS &&
            ++s->wrong_tokens >= 2) {
            s->not_bucket = true;
            s->avail = 0;
            if (s->next_ns < s->reset_at_ns)
                s->next_ns = after_reset(q, s, false);
            continue;
        }
        /* our own count left room for the throttled request: others took it */
        if (now_ns < s->reset_at_ns && s->avail_answered && s->avail >= 0)
            share(s, now_ns);
    }
}

/* The slot still paces: its window has not reset, or it is waiting for the reset. */
static bool slot_live(const bo_quota_slot *s, int64_t now_ns)
{
    if (!s->used)
        return false;
    /* Past the reset with no fresh headers: after one more window (or a
     * second) the slot no longer holds anything back. */
    int64_t grace = s->window_ns > 0 ? s->window_ns : BO_NS_PER_S;
    return now_ns < s->reset_at_ns + grace;
}

int64_t bo_quota_next_send(const bo_quota *q, int64_t now_ns, int64_t limit_ns)
{
    int64_t t = now_ns;
    for (int i = 0; i < BO_QUOTA_SLOTS; i++) {
        const bo_quota_slot *s = &q->slot[i];
        if (slot_live(s, now_ns) && s->next_ns > t)
            t = s->next_ns;
    }
    return t > limit_ns && t > now_ns ? BO_QUOTA_BEYOND : t;
}

void bo_quota_on_send(bo_quota *q, int64_t now_ns)
{
    for (int i = 0; i < BO_QUOTA_SLOTS; i++) {
        bo_quota_slot *s = &q->slot[i];
        if (!slot_live(s, now_ns))
            continue;
        s->ev_owed++;
        s->last_send_ns = now_ns;
        if (now_ns >= s->reset_at_ns && !s->rolled && !is_bucket(s)) {
            /* the known reset passed with no answer of the new window yet:
             * one send goes, and its answer tells what the new window
             * allows (a bucket taken for a window announces as its reset
             * when it would be full had nobody sent since: assuming its
             * limit would overrun it) */
            s->rolled = true;
            s->avail_answered = false;
            s->avail = 1;
        }
        s->avail--;
        bool spread = spreading(s, now_ns);
        if (!spread && s->avail > 0)
            continue;
        if (!spread && now_ns < s->reset_at_ns && !is_bucket(s)) {
            /* spent: the window's reset */
            if (s->next_ns < s->reset_at_ns)
                s->next_ns = after_reset(q, s, false);
            continue;
        }
        int64_t gap = now_ns < s->reset_at_ns ? (spread ? s->gap_ns : refill_gap(s)) : after_gap(s);
        if (gap <= 0)
            continue;
        /* +-10% jitter, mean the gap: threads and processes do not align */
        int64_t g = (int64_t)((double)gap * bo_rng_between(&q->rng, 0.9, 1.1));
        int64_t base = s->next_ns > now_ns ? s->next_ns : now_ns;
        s->next_ns = base + g;
    }
}
