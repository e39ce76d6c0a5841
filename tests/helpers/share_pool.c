/*
 * share_pool: a slot's entries beyond its own chunk, from the file's pool
 * (dest/share.c, linked in), with processes of their own (fork), checked
 * step by step where test_share_many.sh runs real programs:
 *
 *   share_pool        (XDG_RUNTIME_DIR: a directory of its own)
 *
 *   1. 150 children attach to one destination and stay busy, a quarter of
 *      them with an attempt in flight (a lease): each has an entry of its
 *      own, the slot took chunks of the pool for those past its own 64;
 *   2. 40 of them are SIGKILLed (10 with a lease): a reap gives their
 *      entries and leases back, the others' stay;
 *   3. the rest end their attempts and exit: nothing is left but the
 *      parent's entry; the next attach gives the empty chunks back;
 *   4. a process that dies holding the file's lock, half way through
 *      taking a chunk (named, not linked, the free list cut): the next
 *      attach repairs the file, and the chunk is free again.
 *
 * The file is read through a mapping of its own (share_file.h), as
 * share_dump reads it.  Prints one "ok: ..." line per check and exits 0,
 * or "FAIL: ..." and exits 1.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/core.h"
#include "dest/share.h"
#include "share_file.h"

#define KEY "http://pool.test:1"
#define KIDS 150
#define KILLED 40
#define CHUNK BO_SHARE_CHUNK_PROCS

typedef struct kid {
    int32_t pid;
    unsigned idx;
    int leased;
} kid;

static int failed;

static void check(int ok, const char *what)
{
    printf("%s: %s\n", ok ? "ok" : "FAIL", what);
    fflush(stdout);
    if (!ok)
        failed = 1;
}

static const char *env_get(void *ctx, const char *name)
{
    (void)ctx;
    return getenv(name);
}

static bo_share_slot *attach(const bo_config *cfg, unsigned *idx, uint32_t *gen)
{
    size_t len;
    bool wait;
    uint64_t h = bo_share_key_hash(KEY, &len);
    return bo_share_attach(KEY, len, h, cfg, idx, gen, &wait);
}

/* Entry idx of slot s in the mapping f (share.h's numbering). */
static bo_share_proc *entry(bo_share_file *f, bo_share_slot *s, unsigned idx)
{
    if (idx < CHUNK)
        return &s->m.own.procs[idx];
    idx -= CHUNK;
    return &f->pool[idx / CHUNK].procs[idx % CHUNK];
}

/* Chunks on the free list of the pool (bounded). */
static unsigned free_chunks(bo_share_file *f)
{
    unsigned n = 0;
    for (uint32_t ref = f->pool_free; ref != 0 && n <= BO_SHARE_POOL_CHUNKS; n++)
        ref = f->pool[ref - 1].next;
    return n;
}

/* A child: attach, take a lease if asked, report, wait to be told to end. */
static void child(const bo_config *cfg, int leased, int up, int down)
{
    kid k = {.pid = (int32_t)getpid(), .idx = UINT32_MAX, .leased = leased};
    unsigned idx;
    uint32_t gen;
    char c;

    bo_share_child_fork(); /* this process as the leases name it */
    bo_share_slot *s = attach(cfg, &idx, &gen);
    if (s != NULL) {
        k.idx = idx;
        if (leased) { /* an admitted attempt, as the block does it */
            bo_share_lock(s);
            bo_share_lease_take(s, idx);
            s->d.window.inflight++;
            bo_share_unlock(s);
        }
    }
    if (write(up, &k, sizeof k) != (ssize_t)sizeof k || read(down, &c, 1) != 1)
        _exit(2);
    if (s == NULL)
        _exit(1);
    if (leased) {
        bo_share_lock(s);
        bo_share_lease_drop(s, idx);
        s->d.window.inflight--;
        bo_share_wake(s);
        bo_share_unlock(s);
    }
    bo_share_idle(s, idx);
    bo_share_detach(s, idx, gen, 0);
    _exit(0);
}

int main(void)
{
    static kid kids[KIDS];
    bo_config cfg;
    char err[512];
    int up[2], down[2];
    unsigned pidx, leased = 0;
    uint32_t pgen;

    if (getenv("XDG_RUNTIME_DIR") == NULL) {
        fprintf(stderr, "share_pool: set XDG_RUNTIME_DIR to a directory of its own\n");
        return 2;
    }
    if (bo_config_load(&cfg, env_get, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    bo_share_init(&cfg);
    bo_share_slot *ps = attach(&cfg, &pidx, &pgen);
    bo_share_file *f = share_file_map();
    if (ps == NULL || f == NULL) {
        printf("FAIL: no host-wide file (XDG_RUNTIME_DIR?)\n");
        return 1;
    }
    bo_share_slot *s = &f->slots[0]; /* the first slot handed out: ps, seen through f */
    check(strcmp(s->key, KEY) == 0, "the destination has the file's first slot");
    if (pipe(up) != 0 || pipe(down) != 0)
        return 2;

    printf("# 1. %d processes attach and stay busy, a quarter with a lease\n", KIDS);
    for (int k = 0; k < KIDS; k++) {
        pid_t p = fork();
        if (p < 0)
            return 2;
        if (p == 0)
            child(&cfg, k % 4 == 0, up[1], down[0]);
        leased += k % 4 == 0;
    }
    int distinct = 1, all = 1;
    for (int k = 0; k < KIDS; k++) {
        if (read(up[0], &kids[k], sizeof kids[k]) != (ssize_t)sizeof kids[k]) {
            printf("FAIL: a child ended early\n");
            return 1;
        }
        all &= kids[k].idx != UINT32_MAX;
        distinct &= kids[k].idx != pidx;
        for (int j = 0; j < k; j++)
            distinct &= kids[j].idx != kids[k].idx;
    }
    check(all, "every child has an entry");
    check(distinct, "no two processes share an entry");
    pthread_mutex_lock(&s->mu);
    int named = 1;
    for (int k = 0; k < KIDS && all; k++)
        named &= entry(f, s, kids[k].idx)->pid == kids[k].pid &&
                 entry(f, s, kids[k].idx)->inflight == (unsigned)kids[k].leased;
    check(named, "each entry names its process and its lease");
    check(s->m.nattached == KIDS + 1, "the slot counts every process");
    check(s->m.nchunks == (KIDS + 1 - CHUNK + CHUNK - 1) / CHUNK,
          "past its own 64, the slot took chunks of the pool (no more than it needs)");
    check(s->d.window.inflight == leased, "the window counts every lease");
    pthread_mutex_unlock(&s->mu);

    printf("# 2. %d of them SIGKILLed, 10 with a lease\n", KILLED);
    unsigned killed_leases = 0;
    for (int k = 0; k < KILLED; k++) {
        kill(kids[k].pid, SIGKILL);
        waitpid(kids[k].pid, NULL, 0);
        killed_leases += (unsigned)kids[k].leased;
    }
    bo_share_lock(ps);
    bo_share_reap(ps, bo_core_now_ns(), true);
    bo_share_unlock(ps);
    pthread_mutex_lock(&s->mu);
    int gone = 1;
    for (int k = 0; k < KIDS; k++)
        gone &= (entry(f, s, kids[k].idx)->pid == kids[k].pid) == (k >= KILLED);
    check(gone, "the dead processes' entries were reaped, the live ones' stayed");
    check(s->m.nattached == KIDS + 1 - KILLED, "the slot counts the live ones");
    check(s->d.window.inflight == leased - killed_leases,
          "the dead processes' leases came back, the live ones' stayed");
    pthread_mutex_unlock(&s->mu);

    printf("# 3. the rest end their attempts and exit\n");
    for (int k = KILLED; k < KIDS; k++)
        if (write(down[1], "x", 1) != 1)
            return 2;
    int clean = 1;
    for (int k = KILLED; k < KIDS; k++) {
        int st;
        clean &= waitpid(kids[k].pid, &st, 0) == kids[k].pid && WIFEXITED(st) &&
                 WEXITSTATUS(st) == 0;
    }
    check(clean, "every child ended its attempt and exited");
    pthread_mutex_lock(&s->mu);
    check(s->m.nattached == 1 && s->d.window.inflight == 0,
          "nothing is left but the parent's entry, nothing in flight");
    unsigned chunks = s->m.nchunks;
    pthread_mutex_unlock(&s->mu);
    bo_share_idle(ps, pidx);
    bo_share_detach(ps, pidx, pgen, 0);
    ps = attach(&cfg, &pidx, &pgen);
    check(ps != NULL && s->m.nchunks == 0 && free_chunks(f) == chunks &&
              bo_share_pool_hiwater(f) == chunks,
          "the next attach gave the empty chunks back to the pool");

    printf("# 4. a process dies inside the file's lock, half way through taking a chunk\n");
    pid_t p = fork();
    if (p == 0) {
        pthread_mutex_lock(&f->mu);
        bo_share_chunk *c = &f->pool[f->pool_free - 1];
        c->owner = 1;             /* named for slot 0 ... */
        f->pool_free = c->next;   /* ... off the free list, never linked: then death */
        _exit(0);
    }
    waitpid(p, NULL, 0);
    check(free_chunks(f) == chunks - 1, "the dead process left a chunk off the free list");
    bo_share_idle(ps, pidx);
    bo_share_detach(ps, pidx, pgen, 0);
    ps = attach(&cfg, &pidx, &pgen); /* takes the file's lock: repaired */
    check(ps != NULL && free_chunks(f) == chunks && s->m.nchunks == 0,
          "the next attach repaired the file: the chunk is free again");
    bo_share_idle(ps, pidx);
    bo_share_detach(ps, pidx, pgen, 0);
    return failed;
}
