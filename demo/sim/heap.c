/*
 * A binary min-heap of events ordered by (time, insertion sequence), so
 * that events at the same instant leave in the order they were scheduled:
 * the simulation is deterministic for a seed.
 */
#include "sim.h"

#include <stdlib.h>

static bool before(const sim_event *a, const sim_event *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

/* Returns 0, or -1 when memory runs out (the event is not added). */
int sim_heap_push(sim_heap *h, int64_t t, int kind, int who, int64_t arg)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 1024;
        sim_event *v = realloc(h->v, cap * sizeof(*v));
        if (v == NULL)
            return -1;
        h->v = v;
        h->cap = cap;
    }
    sim_event e = {t, h->next_seq++, kind, who, arg};
    size_t i = h->n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!before(&e, &h->v[parent]))
            break;
        h->v[i] = h->v[parent];
        i = parent;
    }
    h->v[i] = e;
    return 0;
}

/* Removes the earliest event into *out; false when the heap is empty. */
bool sim_heap_pop(sim_heap *h, sim_event *out)
{
    if (h->n == 0)
        return false;
    *out = h->v[0];
    sim_event last = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        const sim_event *best = &last;
        if (l < h->n && before(&h->v[l], best)) {
            m = l;
            best = &h->v[l];
        }
        if (r < h->n && before(&h->v[r], best))
            m = r;
        if (m == i)
            break;
        h->v[i] = h->v[m];
        i = m;
    }
    if (h->n > 0)
        h->v[i] = last;
    return true;
}

void sim_heap_free(sim_heap *h)
{
    free(h->v);
    h->v = NULL;
    h->n = h->cap = 0;
}
