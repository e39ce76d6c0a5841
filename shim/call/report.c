/*
 * report.c: the call room's reports: the trace file (one CSV row per
 * attempt), the call numbers, the time waited, and the stats at exit (one
 * JSON object per process), after which the process's idle host-wide
 * entries are let go and the metrics file gets its last rewrite.
 */
#include "call/report.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bo_time.h"
#include "call/call.h"
#include "core/core.h"
#include "dest/metrics_file.h"

/* Waiting time for BACKOFF_STATS (an atomic, touched only after a wait) and
 * the trace's call numbers; the other counts live in each destination. */
static uint64_t g_wait_ns, g_call_ids;


void bo_report_waited(bo_block *b, int64_t ns)
{
    __atomic_add_fetch(&g_wait_ns, (uint64_t)ns, __ATOMIC_RELAXED);
    bo_block_waited(b, ns);
}

uint64_t bo_run_call_id(void)
{
    const bo_config *cfg = bo_core_config();
    if (cfg == NULL || cfg->trace_path[0] == '\0')
        return 0;
    return __atomic_add_fetch(&g_call_ids, 1, __ATOMIC_RELAXED);
}

/*
 * The trace file, opened for one row and closed after it: a descriptor kept
 * open for the process's life would be the program's to close, and its
 * number the program's again (a daemon closes every descriptor and opens
 * its own files: rows would land in them).  The header is written by the
 * process that finds the file empty (several may share it).  -1: none.
 */
static int open_trace(void)
{
    static const char header[] =
        "t_ms,pid,tid,dest,call,attempt,outcome,status,curl_code,delay_ms,cwnd,ssthresh,"
        "inflight\n";
    struct stat st;
    int fd = open(bo_core_config()->trace_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);

    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size != 0)
        return fd;
    flock(fd, LOCK_EX);
    if (fstat(fd, &st) == 0 && st.st_size == 0)
        bo_core_write_all(fd, header, sizeof header - 1);
    flock(fd, LOCK_UN);
    return fd;
}

void bo_report_trace(const bo_trace_row *r)
{
    char line[512];
    int n;

    int64_t wall = bo_core_wall_ns();
    n = snprintf(line, sizeof line,
                 "%" PRId64 ",%d,%ld,%s,%" PRIu64 ",%u,%s,%d,%d,%" PRId64 ",%.2f,%.2f,%u\n",
                 (int64_t)(wall / BO_NS_PER_MS), (int)getpid(), (long)syscall(SYS_gettid), r->key,
                 r->call_id, r->attempt, r->outcome, r->status, r->code,
                 (int64_t)(r->delay_ns / BO_NS_PER_MS), r->cwnd, r->ssthresh, r->inflight);
    if (n <= 0 || (size_t)n >= sizeof line)
        return;
    int fd = open_trace();
    if (fd < 0)
        return;
    bo_core_write_all(fd, line, (size_t)n);
    bo_core_sys_close(fd);
}

/*
 * At exit: one JSON object, appended with a single write() so that many
 * processes can share the file.  `window` is the current cwnd of the
 * destination with the most attempts; `window_max` the largest cwnd any
 * destination reached.
 */
static void write_stats(const bo_config *cfg, int64_t until_ns)
{
    char buf[512];
    bo_block_totals t;
    int fd, n;

    if (cfg->stats_path[0] == '\0')
        return;
    bo_block_totals_get(&t, until_ns);
    n = snprintf(buf, sizeof buf,
                 "{\"pid\":%d,\"calls\":%" PRIu64 ",\"attempts\":%" PRIu64
                 ",\"retries\":%" PRIu64 ",\"throttled\":%" PRIu64 ",\"failed\":%" PRIu64
                 ",\"gave_up\":%" PRIu64 ",\"wait_ms\":%" PRIu64
                 ",\"window\":%.2f,\"window_max\":%.2f,\"budget_delayed\":%" PRIu64 "}\n",
                 (int)getpid(), t.counts.calls, t.counts.attempts, t.counts.retries,
                 t.counts.throttled, t.counts.failed, t.counts.gave_up,
                 __atomic_load_n(&g_wait_ns, __ATOMIC_RELAXED) / (uint64_t)BO_NS_PER_MS,
                 t.window, t.window_max, t.counts.budget_delayed);
    if (n <= 0 || (size_t)n >= sizeof buf)
        return;
    if (strcmp(cfg->stats_path, "stderr") == 0) {
        bo_core_write_all(2, buf, (size_t)n);
        return;
    }
    fd = open(cfg->stats_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    bo_core_write_all(fd, buf, (size_t)n);
    bo_core_sys_close(fd);
}

/*
 * At exit (exit() or a return from main; not _exit, a crash or a kill,
 * whose entries are reaped): the stats, then the host-wide entries of the
 * destinations this process no longer uses are let go, then
 * BACKOFF_METRICS_FILE is rewritten if a second has passed since its last
 * rewrite and this process counted something.
 */
__attribute__((destructor)) static void at_exit(void)
{
    const bo_config *cfg = bo_core_config_if_loaded();
    int saved = errno;
    /* A slot's lock held by a process stopped in it is waited for 100 ms
     * at most, all slots together: the exit never hangs on another process. */
    int64_t until = bo_core_now_ns() + 100 * BO_NS_PER_MS;

    if (cfg == NULL)
        return;
    write_stats(cfg, until);
    if (cfg->share != BO_SHARE_PROCESS) {
        bo_block_table_exit(until);
        bo_metrics_exit(bo_core_now_ns());
    }
    errno = saved;
}

/* In a fork child the waiting time counted is the child's own. */
void bo_report_child_fork(void)
{
    g_wait_ns = 0;
    /* The trace fd is shared with the parent (O_APPEND): rows stay whole. */
}
