/*
 * metrics.h: the host-wide counts and gauges of every destination in the
 * forms monitoring reads (metrics.c), for the wrapper (`backoff --status
 * --format=F`) and the unit suite; the library's own use of it, the
 * BACKOFF_METRICS_FILE rewrite, is in dest.h (bo_metrics_tick).
 *
 *   openmetrics  OpenMetrics 1.0 text: a counter family `backoff_calls`
 *                (`# TYPE backoff_calls counter`) has the samples
 *                `backoff_calls_total{destination="..."}`, and `# EOF` ends it;
 *   prometheus   the Prometheus text format 0.0.4 that node_exporter's textfile
 *                collector and `promtool check metrics` read: the same samples,
 *                but a counter's TYPE and HELP name the sample
 *                (`# TYPE backoff_calls_total counter`), and no `# EOF`;
 *                BACKOFF_METRICS_FILE is written in it;
 *   json         one object: {"scope":"host",...,"destinations":[{...}]};
 *   table        `backoff --status`'s table, unchanged (share.c).
 * The two text forms cannot be one: an OpenMetrics parser refuses a counter
 * family named `..._total` and the 0.0.4 parser sees `backoff_calls_total`
 * as an untyped family without help when the TYPE line says `backoff_calls`.
 */
#ifndef BO_DEST_METRICS_H
#define BO_DEST_METRICS_H

#include <stdint.h>
#include <stdio.h>

#include "dest/share_status.h"

typedef enum bo_metrics_format {
    BO_METRICS_TABLE = 0,
    BO_METRICS_OPENMETRICS,
    BO_METRICS_PROMETHEUS,
    BO_METRICS_JSON
} bo_metrics_format;

#define BO_METRICS_FORMATS "table, openmetrics, prometheus or json"

/* The format called name; -1 when there is none of that name. */
int bo_metrics_format_named(const char *name, bo_metrics_format *out);

/*
 * The value of the `destination` label for a key: what a key can hold
 * ("scheme://host:port", "tcp://addr:port", "unix:path") with, should a
 * scheme://authority key ever carry them, the user info (up to the last
 * '@' of the authority: a password) and anything from the first '/', '?'
 * or '#' after the authority (a path, a query) left out.  Written into out
 * (len > 0), cut to fit; returns strlen(out).
 */
size_t bo_metrics_label(const char *key, char *out, size_t len);

/*
 * Write the views in fmt (not BO_METRICS_TABLE) to out: sorted by
 * destination, views of one destination (processes configured differently
 * keep separate states) merged: counts and in-flight and process numbers
 * summed, window and pace those of the state with the most attempts.
 * mono_ns and wall_ns are the time now on CLOCK_MONOTONIC and the wall
 * clock (the last throttle's age and time).  The views are sorted in
 * place.  Numbers are written in the C locale, whatever the program's.
 * Returns 0, or -1 when writing failed (ferror).
 */
int bo_metrics_render(FILE *out, bo_metrics_format fmt, bo_share_view *views, size_t n,
                      int64_t mono_ns, int64_t wall_ns);

/*
 * `backoff --status --format=fmt`: the user's file read and written to out;
 * 0, or 2 with one line on err when the file cannot be read.  No file yet
 * is no destination (an empty set, 0); the table keeps its own statuses
 * (bo_share_status).
 */
int bo_metrics_status(FILE *out, FILE *err, bo_metrics_format fmt);

#endif
