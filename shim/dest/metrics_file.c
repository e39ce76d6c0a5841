/*
 * metrics_file.c: BACKOFF_METRICS_FILE (metrics_file.h: bo_metrics_tick), the
 * host-wide counts and gauges in the Prometheus text format (metrics.c)
 * for node_exporter's textfile collector.
 *
 * The file is rewritten whole, atomically (a temporary beside it, then a
 * rename: node_exporter never reads half a file), at most once a second
 * between all the processes writing it: each file has an entry in the
 * shared state (bo_share_export) whose last-written time a process moves
 * forward by compare-and-swap before it writes, so one process a second
 * wins and the others learn when to ask next.  A call's cost is the
 * compare of the time its completion already read with this process's due
 * time (bo_metrics_due_ns); without the variable the first call finds out
 * and the due time becomes never.  The writer reads the slots one at a time
 * under their locks, all waited for 50 ms at most (a process stopped in a
 * slot makes it skip that rewrite, never hang the program), with no other
 * lock held.  A process that counted something and exits rewrites the file
 * when a second has passed since the last rewrite; otherwise the last
 * second of a burst waits in the shared state for the next process's
 * change (`backoff --status --format=prometheus` always reads it all).
 */
#include "dest/metrics_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "bo_hash.h"
#include <sys/stat.h>
#include <unistd.h>

#include "bo_time.h"
#include "core/core.h"
#include "dest/metrics.h"
#include "dest/share.h"

/* At most one rewrite of a file this often, by all the processes. */
#define WRITE_GAP_NS BO_NS_PER_S
/* The writer waits this long in all for the slots' locks. */
#define LOCK_WAIT_NS (50 * BO_NS_PER_MS)

/* 0: not known yet (the first call finds out); INT64_MAX: never. */
int64_t bo_metrics_due_ns;

static int g_said; /* the one BACKOFF_VERBOSE line about a failed rewrite */

__attribute__((format(printf, 2, 3))) static void say_once(const bo_config *cfg,
                                                           const char *fmt, ...)
{
    if (!cfg->verbose || __atomic_exchange_n(&g_said, 1, __ATOMIC_RELAXED))
        return;
    va_list ap;
    va_start(ap, fmt);
    bo_core_vline(fmt, ap);
    va_end(ap);
}

/* The file's entry in the shared state, claimed on first use; NULL when all are taken. */
static bo_share_export *export_entry(bo_share_file *f, const char *path)
{
    uint64_t h = bo_fnv1a(BO_FNV_INIT, path, strlen(path)) | 1; /* 0 is a free entry */
    for (int pass = 0; pass < 2; pass++) {
        for (unsigned i = 0; i < BO_SHARE_EXPORTS; i++) {
            bo_share_export *e = &f->exports[i];
            uint64_t seen = __atomic_load_n(&e->path_hash, __ATOMIC_ACQUIRE);
            if (seen == h)
                return e;
            if (pass == 1 && seen == 0 &&
                (__atomic_compare_exchange_n(&e->path_hash, &seen, h, false, __ATOMIC_ACQ_REL,
                                             __ATOMIC_ACQUIRE) ||
                 seen == h))
                return e;
        }
    }
    return NULL;
}

/* Rewrite the file from the slots of f; with no lock held. */
static void rewrite(const bo_config *cfg, bo_share_file *f, int64_t now)
{
    char tmp[PATH_MAX], why[PATH_MAX + 256];
    bo_share_view *v = NULL;
    size_t n = 0;
    int saved = errno;

    if (bo_share_views(f, &v, &n, now + LOCK_WAIT_NS, why, sizeof why) != 0) {
        say_once(cfg, "backoff: BACKOFF_METRICS_FILE=%s: not rewritten: %s", cfg->metrics_path,
                 why);
        goto out;
    }
    if (snprintf(tmp, sizeof tmp, "%s.XXXXXX", cfg->metrics_path) >= (int)sizeof tmp)
        goto out;
    /* beside the file (a rename stays in one file system), and not *.prom:
     * the textfile collector never reads the temporary */
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        say_once(cfg, "backoff: BACKOFF_METRICS_FILE=%s: not rewritten: %s", cfg->metrics_path,
                 strerror(errno));
        goto out;
    }
    FILE *fp = fchmod(fd, (mode_t)cfg->metrics_mode) == 0 ? fdopen(fd, "w") : NULL;
    int rc = fp != NULL ? bo_metrics_render(fp, BO_METRICS_PROMETHEUS, v, n, now,
                                            bo_core_wall_ns())
                        : -1;
    if (fp != NULL ? fclose(fp) != 0 : bo_core_sys_close(fd) != 0)
        rc = -1;
    if (rc != 0 || rename(tmp, cfg->metrics_path) != 0) {
        say_once(cfg, "backoff: BACKOFF_METRICS_FILE=%s: not rewritten: %s", cfg->metrics_path,
                 strerror(errno));
        unlink(tmp);
    }
out:
    free(v);
    errno = saved;
}

void bo_metrics_write_due(int64_t now)
{
    const bo_config *cfg = bo_core_config();
    static int64_t alone_ns; /* the last rewrite when the shared entries are all taken */

    if (cfg == NULL || cfg->metrics_path[0] == '\0' || cfg->share == BO_SHARE_PROCESS) {
        __atomic_store_n(&bo_metrics_due_ns, INT64_MAX, __ATOMIC_RELAXED);
        return;
    }
    bo_share_file *f = bo_share_mapped();
    if (f == NULL) { /* no shared state (yet): nothing host-wide to write */
        __atomic_store_n(&bo_metrics_due_ns, now + WRITE_GAP_NS, __ATOMIC_RELAXED);
        return;
    }
    bo_share_export *e = export_entry(f, cfg->metrics_path);
    int64_t *last = e != NULL ? &e->written_ns : &alone_ns;
    now = bo_core_now_ns(); /* the claim's time is the write's, not the call's start */
    int64_t then = __atomic_load_n(last, __ATOMIC_ACQUIRE);
    /* a time ahead of now is from another clock's life: take it as due */
    if ((then <= now && now - then < WRITE_GAP_NS) ||
        !__atomic_compare_exchange_n(last, &then, now, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        /* another process wrote it lately (or just won the claim) */
        __atomic_store_n(&bo_metrics_due_ns, then <= now ? then + WRITE_GAP_NS : now,
                         __ATOMIC_RELAXED);
        return;
    }
    __atomic_store_n(&bo_metrics_due_ns, now + WRITE_GAP_NS, __ATOMIC_RELAXED);
    rewrite(cfg, f, now);
}

void bo_metrics_exit(int64_t now)
{
    int64_t due = __atomic_load_n(&bo_metrics_due_ns, __ATOMIC_RELAXED);
    if (due != 0 && due != INT64_MAX) /* counted something, with a file to write */
        bo_metrics_write_due(now);
}
