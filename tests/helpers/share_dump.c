/*
 * share_dump: the entries of one destination's slot in the host-wide state
 * file (shim/dest/share.h), read under the slot's lock and without reaping
 * anything (`backoff --status` reaps dead processes first, so it cannot
 * tell an entry left behind from none); or the whole file checked.
 *
 *   share_dump KEY     (XDG_RUNTIME_DIR: the test's directory)
 *   share_dump --check
 *
 * KEY: prints "entries N busy M" (entries in use, of which busy: a block of
 * the process in use, or a lease or a waiter), then
 * "slot in_flight I leases L chunks C" (the window's count, the entries'
 * leases summed, the pool chunks on the slot's chain), then one line per
 * entry in use: "pid P refs R inflight I waiters W".  "entries 0 busy 0"
 * alone when KEY has no slot.
 *
 * --check: every slot in use, under its lock, and the pool, under the
 * file's: each chain's chunks name their slot and belong to no other
 * chain, each chunk's counts and busy bits agree with its entries, the
 * slot's in-flight count is the sum of its leases and its waiters the sum
 * of theirs, and every chunk of the pool handed out is on exactly one
 * chain or the free list.  Prints "unsound: ..." for each fault, then
 * "sound slots S chunks H free F entries E busy B leases L dead_leases D"
 * (D: leases of processes gone, which a reap gives back) or "unsound N";
 * a lock left by a dead holder is a fault (the library repairs it when it
 * next takes it).  Exit 1 when the file is not there or not this build's,
 * or unsound.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "share_file.h"

static unsigned faults;

__attribute__((format(printf, 1, 2))) static void fault(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("unsound: ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    faults++;
}

/* The lock; a dead holder's is a fault (it was not repaired yet). */
static void lock(pthread_mutex_t *mu, const char *what)
{
    if (pthread_mutex_lock(mu) == EOWNERDEAD) {
        fault("%s: its lock was left by a dead holder", what);
        pthread_mutex_consistent(mu);
    }
}

static int dump(bo_share_file *f, const char *key)
{
    for (unsigned i = 0, n = bo_share_hiwater(f); i < n; i++) {
        bo_share_slot *s = &f->slots[i];
        if (!s->used || strcmp(s->key, key) != 0)
            continue;
        if (pthread_mutex_lock(&s->mu) == EOWNERDEAD)
            pthread_mutex_consistent(&s->mu);
        unsigned entries = 0, busy = 0, leases = 0, chunks = 0;
        const bo_share_chunk *c = &s->m.own;
        for (unsigned k = 0; c != NULL && k <= BO_SHARE_POOL_CHUNKS; k++) {
            chunks += c != &s->m.own;
            for (unsigned j = 0; j < BO_SHARE_CHUNK_PROCS; j++) {
                const bo_share_proc *p = &c->procs[j];
                entries += p->pid != 0;
                busy += p->pid != 0 && (p->refs != 0 || p->inflight != 0 || p->waiters != 0);
                leases += p->pid != 0 ? p->inflight : 0;
            }
            c = bo_share_chunk_next(f, s, c);
        }
        printf("entries %u busy %u\n", entries, busy);
        printf("slot in_flight %u leases %u chunks %u\n", s->d.window.inflight, leases, chunks);
        c = &s->m.own;
        for (unsigned k = 0; c != NULL && k <= BO_SHARE_POOL_CHUNKS; k++) {
            for (unsigned j = 0; j < BO_SHARE_CHUNK_PROCS; j++) {
                const bo_share_proc *p = &c->procs[j];
                if (p->pid != 0)
                    printf("pid %d refs %u inflight %u waiters %u\n", (int)p->pid,
                           (unsigned)p->refs, (unsigned)p->inflight, (unsigned)p->waiters);
            }
            c = bo_share_chunk_next(f, s, c);
        }
        pthread_mutex_unlock(&s->mu);
        return 0;
    }
    printf("entries 0 busy 0\n");
    return 0;
}

/* A chunk's entries against its counts and busy bits; adds to the totals. */
static void check_chunk(const bo_share_chunk *c, const char *key, unsigned *entries,
                        unsigned *busy, unsigned *leases, unsigned *dead, unsigned *waiters)
{
    unsigned in = 0;
    for (unsigned j = 0; j < BO_SHARE_CHUNK_PROCS; j++) {
        const bo_share_proc *p = &c->procs[j];
        bool bit = (c->busy >> j) & 1;
        if (p->pid == 0) {
            if (bit || p->refs != 0 || p->inflight != 0 || p->waiters != 0)
                fault("%s: a free entry holds something (busy bit %d, refs %u, inflight %u)",
                      key, (int)bit, (unsigned)p->refs, (unsigned)p->inflight);
            continue;
        }
        in++;
        if (bit != (p->refs != 0))
            fault("%s: pid %d has refs %u but busy bit %d", key, (int)p->pid,
                  (unsigned)p->refs, (int)bit);
        *busy += p->refs != 0 || p->inflight != 0 || p->waiters != 0;
        *leases += p->inflight;
        *waiters += p->waiters;
        if (p->inflight != 0 && kill(p->pid, 0) != 0 && errno == ESRCH)
            *dead += p->inflight;
    }
    if (in != c->nattached)
        fault("%s: a chunk counts %u entries, holds %u", key, (unsigned)c->nattached, in);
    *entries += in;
}

static int check(bo_share_file *f)
{
    static unsigned char seen[BO_SHARE_POOL_CHUNKS]; /* 1: on a chain, 2: free */
    unsigned slots = 0, entries = 0, busy = 0, leases = 0, dead = 0, nfree = 0;

    lock(&f->mu, "the file");
    unsigned nchunks = bo_share_pool_hiwater(f);
    for (unsigned i = 0, n = bo_share_hiwater(f); i < n; i++) {
        bo_share_slot *s = &f->slots[i];
        lock(&s->mu, s->used ? s->key : "a free slot");
        const char *key = s->used ? s->key : "a free slot";
        unsigned se = 0, sb = 0, sl = 0, sw = 0, chain = 0;
        const bo_share_chunk *c = &s->m.own;
        check_chunk(c, key, &se, &sb, &sl, &dead, &sw);
        uint32_t ref = s->m.own.next;
        for (unsigned k = 0; ref != 0 && k <= BO_SHARE_POOL_CHUNKS; k++) {
            if (ref > nchunks) {
                fault("%s: its chain names chunk %u of %u handed out", key, ref, nchunks);
                break;
            }
            c = &f->pool[ref - 1];
            if (c->owner != i + 1) {
                fault("%s: its chain holds chunk %u, which names slot %u", key, ref,
                      (unsigned)c->owner);
                break;
            }
            if (seen[ref - 1]) {
                fault("%s: chunk %u is on two chains (or twice on one)", key, ref);
                break;
            }
            seen[ref - 1] = 1;
            chain++;
            check_chunk(c, key, &se, &sb, &sl, &dead, &sw);
            ref = c->next;
        }
        if (!s->used && (se != 0 || chain != 0))
            fault("slot %u is free but holds %u entries and %u chunks", i, se, chain);
        if (chain != s->m.nchunks)
            fault("%s: %u chunks on its chain, it counts %u", key, chain,
                  (unsigned)s->m.nchunks);
        if (se != s->m.nattached)
            fault("%s: %u entries in use, it counts %u", key, se, (unsigned)s->m.nattached);
        if (sl != s->d.window.inflight)
            fault("%s: in flight %u, its leases %u", key, (unsigned)s->d.window.inflight, sl);
        if (sw != s->waiters)
            fault("%s: %u waiters, its entries' %u", key, (unsigned)s->waiters, sw);
        pthread_mutex_unlock(&s->mu);
        slots += s->used != 0;
        entries += se;
        busy += sb;
        leases += sl;
    }
    uint32_t ref = f->pool_free;
    for (unsigned k = 0; ref != 0 && k <= BO_SHARE_POOL_CHUNKS; k++) {
        if (ref > nchunks || seen[ref - 1]) {
            fault("the free list names chunk %u (%s)", ref,
                  ref > nchunks ? "not handed out" : "also on a chain or twice");
            break;
        }
        if (f->pool[ref - 1].owner != 0)
            fault("free chunk %u names slot %u", ref, (unsigned)f->pool[ref - 1].owner);
        seen[ref - 1] = 2;
        nfree++;
        ref = f->pool[ref - 1].next;
    }
    for (unsigned k = 0; k < nchunks; k++)
        if (!seen[k])
            fault("chunk %u is on no chain and not free (names slot %u)", k + 1,
                  (unsigned)f->pool[k].owner);
    pthread_mutex_unlock(&f->mu);
    if (faults != 0) {
        printf("unsound %u\n", faults);
        return 1;
    }
    printf("sound slots %u chunks %u free %u entries %u busy %u leases %u dead_leases %u\n",
           slots, nchunks, nfree, entries, busy, leases, dead);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2 || getenv("XDG_RUNTIME_DIR") == NULL) {
        fprintf(stderr, "usage: share_dump KEY | --check (XDG_RUNTIME_DIR set)\n");
        return 2;
    }
    bo_share_file *f = share_file_map();
    if (f == NULL)
        return 1;
    if (strcmp(argv[1], "--check") == 0)
        return check(f);
    return dump(f, argv[1]);
}
