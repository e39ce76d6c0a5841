/*
 * share_status.c: every host-wide destination as its processes share it
 * (share_status.h): the views the metrics render, `backoff --status` and
 * `backoff --reset`.  The wrapper reads the file through a mapping of its
 * own, which stands in for the process's while it walks the slots.
 */
#include "dest/share_status.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/core.h"
#include "dest/share.h"
#include "dest/share_entry.h"
#include "dest/share_file.h"

#define CHUNK BO_SHARE_CHUNK_PROCS

/* Under the slot's lock: its view (see bo_share_view).  Processes: those
 * using it now (busy entries) and those that used it and may come back
 * (idle); of the busy, those with an attempt in flight (holding) and those
 * with a call waiting for admission (on the slot's futex, or told to wait
 * within BO_SHARE_WAIT_SEEN_NS and not admitted since). */
static void view_of(bo_share_slot *s, bo_share_view *v, int64_t now)
{
    bo_share_chunk *ch;
    unsigned nch;

    memcpy(v->key, s->key, sizeof v->key);
    v->key[sizeof v->key - 1] = '\0';
    const bo_share_counts *c = &s->counts; /* field by field: wait_ns is added unlocked */
    memcpy(v->counts.throttled, c->throttled, sizeof v->counts.throttled);
    v->counts.calls = c->calls;
    v->counts.attempts = c->attempts;
    v->counts.retries = c->retries;
    v->counts.failed = c->failed;
    v->counts.gave_up = c->gave_up;
    v->counts.budget_delayed = c->budget_delayed;
    v->counts.last_throttle_ns = c->last_throttle_ns;
    v->counts.wait_ns = __atomic_load_n(&c->wait_ns, __ATOMIC_RELAXED);
    v->busy = v->idle = v->holding = v->waiting = 0;
    BO_SHARE_FOR_CHUNKS(s, ch, nch)
        for (unsigned i = 0, left = ch->nattached; i < CHUNK && left > 0; i++) {
            const bo_share_proc *p = &ch->procs[i];
            if (p->pid == 0)
                continue;
            left--;
            if (bo_share_entry_idle(p))
                v->idle++;
            else
                v->busy++;
            v->holding += p->inflight > 0;
            v->waiting += p->waiters > 0 ||
                          (p->wait_ns != 0 && now - p->wait_ns <= BO_SHARE_WAIT_SEEN_NS);
        }
    v->window = s->d.window.cwnd;
    v->pace_hz = s->d.window.rate_limit_hz;
    if (v->pace_hz <= 0 && s->d.pacing.interval_ns > 0)
        v->pace_hz = 1e9 / (double)s->d.pacing.interval_ns;
    if (!(v->pace_hz > 0))
        v->pace_hz = 0;
    v->in_flight = s->d.window.inflight;
    v->throttle_age_ns = s->last_throttle_ns == 0 || s->last_throttle_ns > now
                             ? -1 : now - s->last_throttle_ns;
    v->success_age_ns = s->last_success_ns == 0 || s->last_success_ns > now
                            ? -1 : now - s->last_success_ns;
}

int bo_share_views(bo_share_file *f, bo_share_view **views, size_t *n, int64_t until_ns,
                   char *why, size_t len)
{
    bool mine = f == NULL, replaced;
    int rc = 0;
    bo_share_view *v = NULL;
    size_t k = 0;

    *views = NULL;
    *n = 0;
    why[0] = '\0';
    if (bo_share_me.pid == 0)
        bo_share_identify();
    if (mine && (f = bo_share_map_file(false, why, len, &replaced, NULL, NULL)) == NULL)
        return why[0] == '\0' ? 1 : 2;
    /* A slot's pool chunks are found through bo_share_me.file: a mapping of the
     * wrapper's own (mine, one thread) stands in for it during the walk. */
    bo_share_file *process_file = bo_share_me.file;
    if (mine)
        bo_share_me.file = f;
    unsigned hi = bo_share_hiwater(f);
    if (hi > 0 && (v = calloc(hi, sizeof *v)) == NULL) {
        snprintf(why, len, "no memory for %u destinations", hi);
        rc = 2;
        goto out;
    }
    int64_t now = bo_core_now_ns();
    for (unsigned i = 0; i < hi; i++) {
        bo_share_slot *s = &f->slots[i];
        if (!__atomic_load_n(&s->used, __ATOMIC_ACQUIRE))
            continue;
        if (until_ns == 0) {
            bo_share_lock(s);
        } else if (!bo_share_lock_until(s, until_ns)) {
            snprintf(why, len, "the lock of a destination was held too long (a process "
                               "stopped in it?)");
            free(v);
            v = NULL;
            k = 0;
            rc = 2;
            goto out;
        }
        if (s->used) {
            /* the wrapper reaps now; a process writing its metrics file at
             * most every 250 ms per slot, as its waiters do */
            bo_share_reap(s, now, mine);
            view_of(s, &v[k++], now);
        }
        bo_share_unlock(s);
    }
out:
    if (mine) { /* the mapping (and its shared flock) was this call's */
        bo_share_me.file = process_file;
        bo_share_unmap(f);
    }
    *views = v;
    *n = k;
    return rc;
}

static void ago(char *buf, size_t len, int64_t age_ns)
{
    if (age_ns < 0)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.1fs", (double)age_ns / 1e9);
}

int bo_share_status(FILE *out)
{
    char why[PATH_MAX + 256], thr[32], suc[32], pace[32];
    bo_share_view *v;
    size_t n;

    int rc = bo_share_views(NULL, &v, &n, 0, why, sizeof why);
    if (rc == 1) {
        fprintf(out, "backoff: no shared state yet (no file)\n");
        return 1;
    }
    if (rc != 0) {
        fprintf(out, "backoff: shared state not readable: %s\n", why);
        return 2;
    }
    fprintf(out, "# destination window pace_per_s in_flight processes last_throttle "
                 "last_success holding waiting\n");
    for (size_t i = 0; i < n; i++) {
        if (v[i].pace_hz > 0)
            snprintf(pace, sizeof pace, "%.1f", v[i].pace_hz);
        else
            snprintf(pace, sizeof pace, "-");
        ago(thr, sizeof thr, v[i].throttle_age_ns);
        ago(suc, sizeof suc, v[i].success_age_ns);
        fprintf(out, "%s %.1f %s %u %u %s %s %u %u\n", v[i].key, v[i].window, pace,
                v[i].in_flight, v[i].busy, thr, suc, v[i].holding, v[i].waiting);
    }
    free(v);
    return 0;
}

int bo_share_reset(FILE *out, const bo_config *cfg)
{
    char why[PATH_MAX + 256], path[PATH_MAX];
    bool replaced;
    int64_t now = bo_core_now_ns();
    unsigned freed = 0, kept = 0;

    if (bo_share_me.pid == 0)
        bo_share_identify();
    __atomic_store_n(&bo_share_me.cfg, cfg, __ATOMIC_RELAXED);
    bo_share_file *f = bo_share_map_file(false, why, sizeof why, &replaced, NULL, NULL);
    if (f == NULL) {
        if (why[0] == '\0') {
            fprintf(out, "backoff: no shared state to reset\n");
            return 0;
        }
        /* Not usable: remove it if it is ours and a plain file (not a link). */
        struct stat st;
        if (bo_share_path(path, sizeof path) == 0 && lstat(path, &st) == 0 &&
            S_ISREG(st.st_mode) && st.st_uid == geteuid() && unlink(path) == 0) {
            fprintf(out, "backoff: removed %s (%s)\n", path, why);
            return 0;
        }
        fprintf(out, "backoff: cannot reset: %s\n", why);
        return 2;
    }
    bo_share_file *mine = bo_share_me.file;
    bo_share_me.file = f; /* the slots are read through this mapping */
    bo_share_lock_file(f);
    for (unsigned i = 0, n = bo_share_hiwater(f); i < n; i++) {
        bo_share_slot *s = &f->slots[i];
        if (!s->used)
            continue;
        bo_share_lock(s);
        bo_share_reap(s, now, true);
        bo_share_counts_clear(s);
        if (!bo_share_slot_idle(s)) {
            bo_share_fresh_state(s, cfg, now); /* its processes' leases stay counted */
            bo_share_release_chunks(s, false);
            kept++;
        } else {
            bo_share_drop_idle(s);
            bo_share_chain_unlink(f, s);
            s->used = 0;
            s->key[0] = '\0';
            freed++;
        }
        bo_share_unlock(s);
    }
    pthread_mutex_unlock(&f->mu);
    bo_share_me.file = mine;
    bo_share_unmap(f);
    fprintf(out, "backoff: reset %u destination(s) (%u in use started fresh)\n", freed + kept,
            kept);
    return 0;
}
