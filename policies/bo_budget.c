/*
 * bo_budget: the destination's retry budget and the table of logical
 * requests (see bo_budget.h for the rules).
 */
#include "bo_budget.h"

#include <string.h>

void bo_budget_init(bo_budget *b, int64_t now_ns)
{
    memset(b, 0, sizeof *b);
    b->epoch_ns = now_ns;
    b->probe_ns = INT64_MIN;
}

/* Move the buckets on so that now_ns falls in the current one. */
static void roll(bo_budget *b, int64_t now_ns)
{
    if (now_ns < b->epoch_ns)
        return; /* a caller's clock a little behind another's: same bucket */
    int64_t age = now_ns - b->epoch_ns;
    if (age < BO_BUDGET_WINDOW_NS)
        return;
    if (age < 2 * BO_BUDGET_WINDOW_NS) {
        b->firsts[1] = b->firsts[0];
        b->retries[1] = b->retries[0];
        b->successes[1] = b->successes[0];
        b->epoch_ns += BO_BUDGET_WINDOW_NS;
    } else {
        b->firsts[1] = b->retries[1] = b->successes[1] = 0;
        b->epoch_ns = now_ns;
    }
    b->firsts[0] = b->retries[0] = b->successes[0] = 0;
}

static void bump(uint32_t *c)
{
    if (*c < UINT32_MAX)
        (*c)++;
}

void bo_budget_on_attempt(bo_budget *b, bool first, int64_t now_ns)
{
    roll(b, now_ns);
    bump(first ? &b->firsts[0] : &b->retries[0]);
}

void bo_budget_on_success(bo_budget *b, int64_t now_ns)
{
    roll(b, now_ns);
    bump(&b->successes[0]);
    b->probes = 0; /* the server answers: the next probe need not wait */
    b->probe_ns = INT64_MIN;
}

/*
 * The sliding window: the current bucket whole and the previous one
 * weighted by how much of it still lies within the window.
 */
bool bo_budget_allows_retry(bo_budget *b, unsigned pct, int64_t now_ns)
{
    if (pct == 0)
        return true;
    roll(b, now_ns);
    double into = now_ns > b->epoch_ns ? (double)(now_ns - b->epoch_ns) : 0.0;
    double w = 1.0 - into / (double)BO_BUDGET_WINDOW_NS;
    if (w < 0.0)
        w = 0.0;
    double firsts = b->firsts[0] + w * b->firsts[1];
    double retries = b->retries[0] + w * b->retries[1];
    double successes = b->successes[0] + w * b->successes[1];
    return retries + 1.0 <= BO_BUDGET_RESERVE + (double)pct / 100.0 * firsts + successes;
}

/*
 * The rule of bo_budget_allows_retry at a time t of the current bucket,
 * with w = 1 - (t - epoch) / window the previous bucket's weight, is
 *     now0 + w * prev <= 0
 * where now0 = retries[0] + 1 - reserve - p * firsts[0] - successes[0] and
 * prev = retries[1] - p * firsts[1] - successes[1]: once refused, only a
 * falling w (prev > 0) lets it through within the bucket, at w = -now0 /
 * prev; otherwise at the next bucket, where the current one becomes the
 * previous one and an empty bucket's now0 is 1 - reserve.
 */
static int64_t when_weight(int64_t epoch, double w)
{
    double t = (double)epoch + (1.0 - w) * (double)BO_BUDGET_WINDOW_NS;
    return (int64_t)t + 1; /* up, past the rounding of the weight */
}

int64_t bo_budget_next_retry_ns(bo_budget *b, unsigned pct, int64_t now_ns)
{
    if (bo_budget_allows_retry(b, pct, now_ns))
        return now_ns;
    double p = (double)pct / 100.0;
    double now0 = b->retries[0] + 1.0 - BO_BUDGET_RESERVE - p * b->firsts[0] - b->successes[0];
    double prev = b->retries[1] - p * b->firsts[1] - b->successes[1];
    int64_t t = INT64_MAX;
    if (now0 <= 0 && prev > 0)
        t = when_weight(b->epoch_ns, -now0 / prev);
    if (t > b->epoch_ns + BO_BUDGET_WINDOW_NS) {
        int64_t next = b->epoch_ns + BO_BUDGET_WINDOW_NS; /* where the bucket rolls */
        double later = b->retries[0] - p * b->firsts[0] - b->successes[0];
        double empty = 1.0 - BO_BUDGET_RESERVE;
        t = later <= -empty ? next : when_weight(next, -empty / later);
    }
    return t > now_ns ? t : now_ns;
}

bool bo_budget_lone(bo_budget *b, unsigned own_retries, int64_t now_ns)
{
    roll(b, now_ns);
    return (uint64_t)b->firsts[0] + b->firsts[1] <= 1 && b->successes[0] + b->successes[1] == 0 &&
           (uint64_t)b->retries[0] + b->retries[1] <= own_retries;
}

bool bo_budget_may_probe(const bo_budget *b, int64_t now_ns)
{
    return now_ns >= b->probe_ns;
}

void bo_budget_on_probe(bo_budget *b, int64_t now_ns, int64_t gap_ns)
{
    if (b->probes < UINT32_MAX)
        b->probes++;
    b->probe_ns = now_ns + (gap_ns > 0 ? gap_ns : 0);
}

/*
 * Eight bytes a step (a URL is hashed at every CURLOPT_URL: byte by byte
 * it cost ~220 instructions of a call to a new URL), each word mixed in
 * with a multiply and a fold; the length goes in last, so that "a"+"bc"
 * differs from "ab"+"c".  Keys live in one process: the byte order of
 * the words does not matter.
 */
#define BO_KEY_MUL 0x9e3779b97f4a7c15ULL

static uint64_t key_mix(uint64_t h, uint64_t w)
{
    h = (h ^ w) * BO_KEY_MUL;
    return h ^ (h >> 29);
}

static uint64_t key_add_n(uint64_t h, const char *s, size_t n)
{
    size_t i = 0;
    uint64_t w;

    for (; i + 8 <= n; i += 8) {
        memcpy(&w, s + i, 8);
        h = key_mix(h, w);
    }
    w = 0;
    memcpy(&w, s + i, n - i);
    h = key_mix(h, w);
    h = key_mix(h, (uint64_t)n + 0xff);
    return h != 0 ? h : 1;
}

uint64_t bo_key_add(uint64_t h, const char *s)
{
    return key_add_n(h, s, strlen(s));
}

uint64_t bo_key_of(const char *s, size_t *len)
{
    *len = strlen(s);
    return key_add_n(BO_KEY_INIT, s, *len);
}

static bool expired(const bo_lineage *l, int64_t now_ns)
{
    return now_ns - l->failed_ns > BO_LINEAGE_WINDOW_NS;
}

static void drop(bo_lineages *t, bo_lineage *l)
{
    memset(l, 0, sizeof *l);
    if (t->used > 0)
        t->used--;
}

bool bo_lineage_find(bo_lineages *t, uint64_t key, int64_t now_ns, bo_lineage *out)
{
    if (key == 0 || t->used == 0)
        return false;
    for (unsigned i = 0; i < BO_LINEAGE_SLOTS; i++) {
        bo_lineage *l = &t->slot[i];
        if (l->key == 0)
            continue;
        if (expired(l, now_ns)) {
            drop(t, l);
            continue;
        }
        if (l->key == key) {
            *out = *l;
            return true;
        }
    }
    return false;
}

void bo_lineage_failed(bo_lineages *t, const bo_lineage *l, int64_t now_ns)
{
    bo_lineage *free_slot = NULL, *oldest = NULL;

    if (l->key == 0)
        return;
    for (unsigned i = 0; i < BO_LINEAGE_SLOTS; i++) {
        bo_lineage *s = &t->slot[i];
        if (s->key == l->key) {
            free_slot = s;
            break;
        }
        if (s->key != 0 && expired(s, now_ns))
            drop(t, s);
        if (s->key == 0 && free_slot == NULL)
            free_slot = s;
        if (s->key != 0 && (oldest == NULL || s->failed_ns < oldest->failed_ns))
            oldest = s;
    }
    if (free_slot == NULL)
        free_slot = oldest; /* full: the oldest failure makes room */
    else if (free_slot->key == 0)
        t->used++;
    *free_slot = *l;
    free_slot->failed_ns = now_ns;
}

void bo_lineage_forget(bo_lineages *t, uint64_t key)
{
    if (key == 0 || t->used == 0)
        return;
    for (unsigned i = 0; i < BO_LINEAGE_SLOTS; i++) {
        if (t->slot[i].key == key) {
            drop(t, &t->slot[i]);
            return;
        }
    }
}
