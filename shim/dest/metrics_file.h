/*
 * metrics_file.h: BACKOFF_METRICS_FILE (metrics_file.c), for the call room:
 * after a call's counts changed (complete.c, admit.c) and at exit
 * (report.c).
 */
#ifndef BO_DEST_METRICS_FILE_H
#define BO_DEST_METRICS_FILE_H

#include <stdint.h>

/*
 * After the counts changed, with no lock held: the time the caller already
 * read is compared with the next due rewrite; only a due one (at most once
 * a second, for all the processes writing that file) goes further.
 * Without the variable the first call finds out and nothing is ever due
 * again.
 */
extern __attribute__((visibility("hidden"))) int64_t bo_metrics_due_ns;
void bo_metrics_write_due(int64_t now_ns);
static inline void bo_metrics_tick(int64_t now_ns)
{
    if (__builtin_expect(now_ns >= __atomic_load_n(&bo_metrics_due_ns, __ATOMIC_RELAXED), 0))
        bo_metrics_write_due(now_ns);
}
/* At exit, with no lock held: a process that counted something rewrites the
 * file when a second has passed since the last rewrite (a quiet process's
 * last changes otherwise wait for the next process's). */
void bo_metrics_exit(int64_t now_ns);

#endif
