/*
 * share_evict: the host-wide file (dest/share.c, linked in) evicts a slot
 * whose only entry is the idle one of a live process when it needs the
 * room, and that process then attaches anew, to a slot of its own.
 *
 *   share_evict        (XDG_RUNTIME_DIR: a directory of the test's own)
 *
 * The parent attaches KEY, marks its state, lets it go idle and forks.
 * The child (another process of the user) fills every other slot of the
 * file with destinations it keeps busy: the last of them must take the
 * parent's slot (the only one nobody is using), one more must find no room
 * (busy slots are never taken); then it lets one of its slots go idle and
 * waits.  The parent's reuse must see that its attachment is gone, and a
 * new attach must give it a slot of KEY with a fresh state and its own
 * entry, taken from the child's idle one.  Prints one "ok: ..." line per
 * check and exits 0, or "FAIL: ..." and exits 1.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dest/share.h"

#define KEY "http://idle.test:1"
#define MARK 77.0

static const char *env_get(void *ctx, const char *name)
{
    (void)ctx;
    return getenv(name);
}

static int failed;

static void check(int ok, const char *what)
{
    printf("%s: %s\n", ok ? "ok" : "FAIL", what);
    fflush(stdout);
    if (!ok)
        failed = 1;
}

static bo_share_slot *attach(const char *key, const bo_config *cfg, unsigned *idx, uint32_t *gen)
{
    size_t len;
    uint64_t h = bo_share_key_hash(key, &len);
    bool wait;
    return bo_share_attach(key, len, h, cfg, idx, gen, &wait);
}

/* The child: every free slot busy, the parent's idle one taken last. */
static int fill(const bo_config *cfg, bo_share_slot *parent, int to_parent, int from_parent)
{
    char key[64], last_key[64];
    bo_share_slot *first = NULL, *last = NULL;
    unsigned idx, first_idx = 0;
    uint32_t gen, first_gen = 0;
    int got = 0;

    bo_share_child_fork();
    for (int i = 0; i < BO_SHARE_SLOTS; i++) {
        snprintf(key, sizeof key, "http://f%d.test:1", i);
        last = attach(key, cfg, &idx, &gen);
        if (last == NULL)
            break;
        if (i == 0) {
            first = last;
            first_idx = idx;
            first_gen = gen;
        }
        got++;
    }
    snprintf(last_key, sizeof last_key, "http://f%d.test:1", BO_SHARE_SLOTS - 1);
    check(got == BO_SHARE_SLOTS, "the child attached as many destinations as the file has slots");
    check(last == parent && strcmp(parent->key, last_key) == 0,
          "the last one took the slot the parent left idle");
    check(parent->m.nattached == 1 && parent->m.own.procs[idx].pid == (int32_t)getpid(),
          "the parent's idle entry was dropped with it");
    check(attach("http://one-more.test:1", cfg, &idx, &gen) == NULL,
          "one more finds no room: busy slots are never taken");
    bo_share_idle(first, first_idx); /* room for the parent */
    if (write(to_parent, "1", 1) != 1)
        return 1;
    char c;
    if (read(from_parent, &c, 1) != 1)
        return 1;
    check(!bo_share_reuse(first, first_idx, first_gen, cfg),
          "the child's idle slot, taken by the parent, is not its any more");
    return failed;
}

int main(void)
{
    bo_config cfg;
    char err[512];
    int up[2], down[2];
    unsigned idx;
    uint32_t gen;

    if (getenv("XDG_RUNTIME_DIR") == NULL) {
        fprintf(stderr, "share_evict: set XDG_RUNTIME_DIR to a directory of its own\n");
        return 2;
    }
    if (bo_config_load(&cfg, env_get, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    bo_share_init(&cfg);
    bo_share_slot *s = attach(KEY, &cfg, &idx, &gen);
    if (s == NULL) {
        printf("FAIL: no host-wide file (XDG_RUNTIME_DIR?)\n");
        return 1;
    }
    bo_share_lock(s);
    s->d.window.cwnd = MARK;
    bo_share_unlock(s);
    bo_share_idle(s, idx);
    check(s->m.own.busy == 0 && s->m.own.procs[idx].pid == (int32_t)getpid() &&
              s->m.nattached == 1,
          "the parent's entry stays, idle");
    check(bo_share_reuse(s, idx, gen, &cfg), "an idle attachment nobody took is reused");
    bo_share_idle(s, idx);

    if (pipe(up) != 0 || pipe(down) != 0)
        return 2;
    pid_t child = fork();
    if (child < 0)
        return 2;
    if (child == 0)
        _exit(fill(&cfg, s, up[1], down[0]));
    char c;
    if (read(up[0], &c, 1) != 1) {
        printf("FAIL: the child ended early\n");
        waitpid(child, NULL, 0);
        return 1;
    }
    check(!bo_share_reuse(s, idx, gen, &cfg), "the parent's reuse sees its slot taken");
    unsigned idx2;
    uint32_t gen2;
    bo_share_slot *s2 = attach(KEY, &cfg, &idx2, &gen2);
    check(s2 != NULL && s2 != s, "the parent attaches anew, to another slot");
    if (s2 != NULL) {
        bo_share_lock(s2);
        check(strcmp(s2->key, KEY) == 0, "the new slot holds the parent's destination");
        check(s2->d.window.cwnd != MARK, "its state is fresh, not another's");
        check(s2->m.nattached == 1 && s2->m.own.procs[idx2].pid == (int32_t)getpid() &&
                  s2->m.own.procs[idx2].refs == 1 && s2->m.own.busy == 1ULL << idx2,
              "its only entry is the parent's, busy");
        bo_share_unlock(s2);
        bo_share_idle(s2, idx2);
        bo_share_detach(s2, idx2, gen2, 0);
        check(s2->m.nattached == 0 && s2->m.own.busy == 0, "a detach leaves no entry");
    }
    if (write(down[1], "1", 1) != 1)
        return 2;
    int st;
    waitpid(child, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child's checks passed");
    return failed;
}
