/*
 * bo_ratelimit: rate-limit header parsing and quota pacing (see the .h).
 *
 * Bad values, ignored field by field (the README lists those tried):
 *   - numbers: digits only (optional whitespace around), no sign, no
 *     fraction, at most BO_RL_MAX_COUNT (counts) or BO_RL_MAX_RESET_S
 *     (resets); a field given twice with different values is dropped;
 *   - remaining above limit: remaining is dropped (limit kept);
 *   - x-ratelimit-reset in the past, or more than 31 days ahead: dropped;
 *   - a structured field that does not parse (RFC 8941 lists) is dropped
 *     whole; within a valid one, an item whose r (or q) is missing,
 *     negative or out of range is dropped.
 * A quota needs a remaining count and a reset time from one dialect; the
 * draft's t may be missing when the matching policy gives its window w.
 * Responses with Age > 0 (served from a cache) give no quota.
 */
#include "bo_ratelimit.h"
#include "bo_time.h"

#include <string.h>


void bo_rl_headers_reset(bo_rl_headers *h)
{
    h->x_limit = h->x_remaining = h->x_reset_epoch = -1;
    h->limit = h->remaining = h->reset_s = -1;
    h->d_remaining = h->d_reset_s = -1;
    h->d_name = h->d_pk = 0;
    h->npol = 0;
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

/* Decimal digits only (whitespace trimmed), <= max; -1 when bad. */
static int64_t parse_count(const char *p, size_t n, int64_t max)
{
    int64_t v = 0;
    size_t i = 0;

    while (n > 0 && is_ows(p[n - 1]))
        n--;
    while (i < n && is_ows(p[i]))
        i++;
    if (i == n)
        return -1;
    for (; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        v = v * 10 + (p[i] - '0');
        if (v > max)
            return -1;
    }
    return v;
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

bool bo_rl_header_line(bo_rl_headers *h, const char *line, size_t len)
{
    const char *colon;
    size_t nlen;
    char c;

    if (len < 4)
        return false;
    c = lower(line[0]);
    if (c != 'x' && c != 'r' && c != 'a')
        return false;
    colon = memchr(line, ':', len);
    if (colon == NULL)
        return false;
    nlen = (size_t)(colon - line);
    const char *v = colon + 1;
    size_t vn = len - nlen - 1;
    while (vn > 0 && (v[vn - 1] == '\n' || v[vn - 1] == '\r'))
        vn--;

    if (c == 'a') {
        if (!name_is(line, nlen, "age"))
            return false;
        int64_t age = parse_count(v, vn, INT64_MAX / 10);
        if (age != 0) /* a cache answered (a bad Age counts as one: be safe) */
            h->from_cache = true;
        return true;
    }
    if (c == 'x') {
        if (nlen < 12 || !name_is(line, 12, "x-ratelimit-"))
            return false;
        if (name_is(line, nlen, "x-ratelimit-limit"))
            set_field(&h->x_limit, parse_count(v, vn, BO_RL_MAX_COUNT));
        else if (name_is(line, nlen, "x-ratelimit-remaining"))
            set_field(&h->x_remaining, parse_count(v, vn, BO_RL_MAX_COUNT));
        else if (name_is(line, nlen, "x-ratelimit-reset"))
            set_field(&h->x_reset_epoch, parse_count(v, vn, 99999999999LL));
        else
            return false;
        h->seen = true;
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

bool bo_rl_headers_quota(const bo_rl_headers *h, int64_t wall_ns, bo_rl_quota *q)
{
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
    if (h->x_reset_epoch >= 0 && wall_ns > 0 && counts(h->x_limit, h->x_remaining, q)) {
        int64_t wall_s = wall_ns / BO_NS_PER_S;
        if (h->x_reset_epoch < wall_s || h->x_reset_epoch - wall_s > BO_RL_MAX_RESET_S)
            return false;
        q->reset_ns = h->x_reset_epoch * BO_NS_PER_S - wall_ns;
        if (q->reset_ns < 0)
            q->reset_ns = 0;
        return true;
    }
    q->limit = -1;
    return false;
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
 * tokens came back: an answer that waited in a descheduled thread may show
 * a remaining from long before.
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
        s->mark_fresh_answers = 0;
        return;
    }
    bool fresh = sent_ns > s->mark_ns;
    s->mark_answers += spent;
    s->mark_fresh_answers += fresh && spent;
    /* Tokens back before the window the mark saw has ended: a bucket, even
     * when it is spent exactly as fast as it refills, so that remaining
     * never rises between two answers.  Counting only fresh answers can
     * miss tokens, never invent them.  A reset announced more than the
     * headers' one-second rounding later is a new window: a fixed window
     * that has just reset. */
    if (fresh && now_ns < s->mark_reset_at_ns &&
        now_ns + rl->reset_ns <= s->mark_reset_at_ns + BO_NS_PER_S &&
        rl->remaining - s->mark_remaining + s->mark_fresh_answers > 1)
        s->refills = true;
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
    s->mark_fresh_answers = 0;
}

void bo_quota_note(bo_quota *q, const bo_rl_quota *rl, unsigned inflight, int64_t now_ns,
                   bo_rng *rng)
{
    bo_quota_note_answer(q, rl, inflight, now_ns, true, now_ns, rng);
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
    int64_t at = now_ns + rl->reset_ns;

    if (!q->seeded) { /* admissions draw jitter from here: bo_dest_admit has no generator */
        bo_rng_seed(&q->rng, bo_rng_next(rng));
        q->seeded = true;
    }

    /* A quota that grows back before its window ends is a token bucket:
     * its tokens return continuously, not all at the reset.  Only an answer
     * to a request sent after the last answer came counts (the server saw
     * it later); a reset announced more than the headers' one-second
     * rounding past the known one is a fixed window that has just reset. */
    if (s->last_remaining >= 0 && sent_ns > s->noted_ns && rl->remaining > s->last_remaining &&
        now_ns < s->reset_at_ns && at <= s->reset_at_ns + BO_NS_PER_S)
        s->refills = true;
    s->last_remaining = rl->remaining;
    measure_refill(s, rl, sent_ns, spent, now_ns);
    if (s->reset_at_ns <= now_ns || at > s->reset_at_ns + BO_NS_PER_S || at < now_ns)
        s->reset_at_ns = at;
    else if (at < s->reset_at_ns)
        s->reset_at_ns = at;
    s->noted_ns = now_ns;
    if (rl->window_ns > s->window_ns)
        s->window_ns = rl->window_ns;
    if (rl->reset_ns > s->window_ns && rl->window_ns < 0)
        s->window_ns = rl->reset_ns;
    /* once the window resets: limit per window, when both are known */
    if (rl->limit > 0 && s->window_ns > 0)
        s->after_gap_ns = s->window_ns / rl->limit;

    int64_t left = s->reset_at_ns - now_ns;
    int64_t budget = rl->remaining - (int64_t)inflight;
    bool bucket = s->refills && refill_gap(s) > 0;
    if (bucket)
        budget -= BO_QUOTA_BUCKET_RESERVE;
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
        int64_t spread = after_gap(s) > 0 ? after_gap(s) : BO_NS_PER_S / 10;
        int64_t t = s->reset_at_ns + (int64_t)((double)spread * bo_rng_uniform(&q->rng));
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

int64_t bo_quota_next_send(const bo_quota *q, int64_t now_ns, int64_t cap_ns)
{
    int64_t t = now_ns;
    for (int i = 0; i < BO_QUOTA_SLOTS; i++) {
        const bo_quota_slot *s = &q->slot[i];
        if (slot_live(s, now_ns) && s->next_ns > t)
            t = s->next_ns;
    }
    if (cap_ns > 0 && t - now_ns > cap_ns)
        t = now_ns + cap_ns;
    return t;
}

void bo_quota_on_send(bo_quota *q, int64_t now_ns)
{
    for (int i = 0; i < BO_QUOTA_SLOTS; i++) {
        bo_quota_slot *s = &q->slot[i];
        if (!slot_live(s, now_ns))
            continue;
        int64_t gap = now_ns < s->reset_at_ns ? s->gap_ns : after_gap(s);
        if (gap <= 0)
            continue;
        /* +-10% jitter, mean the gap: threads and processes do not align */
        int64_t g = (int64_t)((double)gap * bo_rng_between(&q->rng, 0.9, 1.1));
        int64_t base = s->next_ns > now_ns ? s->next_ns : now_ns;
        s->next_ns = base + g;
    }
}
