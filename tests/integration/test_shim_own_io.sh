#!/bin/sh
# The library's own I/O never passes through its own exported hooks: its
# stderr lines (BACKOFF_VERBOSE), its state file, BACKOFF_STATS,
# BACKOFF_TRACE, BACKOFF_METRICS_FILE, the timerfd of a wait and `backoff
# --status`/`--reset` make their read, write and close system calls
# themselves (bo_core_sys_*), not through the write, read, close, send... that
# libbackoff.so exports for the program's HTTP (shim/http/sock.c).
#
# A spy library preloaded in front of libbackoff.so interposes those
# functions too: any call to them that libbackoff.so (or the wrapper) makes
# through its PLT reaches the spy first, which writes one line naming the
# function and the object of its caller.  A throttled curl (the libcurl
# room, retried: verbose lines, stats, trace, metrics), a throttled Python
# urllib request (the http room: its retry waits on a timerfd) and the
# wrapper's --status and --reset must leave no such line.  A program of the
# test's own that calls write, read and close itself shows that the spy sees
# and names such calls (else this test could not fail).
. "$(dirname "$0")/lib.sh"

LIB="$BUILD/libbackoff.so"
B="$BUILD/backoff"
[ -e "$LIB" ] && [ -x "$B" ] || fail "build $LIB and $B first"

cat >"$TMP/spy.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

/* SPY_OBJS: a colon list of object base names whose calls are reported
 * (one line each to SPY_OUT: "FUNCTION OBJECT"), written by system calls. */
static void report(const char *fn, const void *ret)
{
    const char *objs = getenv("SPY_OBJS"), *out = getenv("SPY_OUT");
    Dl_info di;
    if (objs == NULL || out == NULL || !dladdr(ret, &di) || di.dli_fname == NULL)
        return;
    const char *base = strrchr(di.dli_fname, '/');
    base = base != NULL ? base + 1 : di.dli_fname;
    char list[1024], line[512];
    snprintf(list, sizeof list, ":%s:", objs);
    snprintf(line, sizeof line, ":%s:", base);
    if (strstr(list, line) == NULL)
        return;
    int fd = (int)syscall(SYS_openat, AT_FDCWD, out, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    int n = snprintf(line, sizeof line, "%s %s\n", fn, base);
    syscall(SYS_write, fd, line, (size_t)n);
    syscall(SYS_close, fd);
}

#define SPY(ret_t, name, params, args)                               \
    ret_t name(params)                                               \
    {                                                                \
        static ret_t (*real)(params);                                \
        if (real == NULL)                                            \
            *(void **)&real = dlsym(RTLD_NEXT, #name);               \
        report(#name, __builtin_return_address(0));                  \
        return real(args);                                           \
    }
#define P(...) __VA_ARGS__
SPY(ssize_t, write, P(int fd, const void *b, size_t n), P(fd, b, n))
SPY(ssize_t, read, P(int fd, void *b, size_t n), P(fd, b, n))
SPY(int, close, P(int fd), P(fd))
SPY(ssize_t, send, P(int fd, const void *b, size_t n, int f), P(fd, b, n, f))
SPY(ssize_t, recv, P(int fd, void *b, size_t n, int f), P(fd, b, n, f))
SPY(ssize_t, writev, P(int fd, const struct iovec *v, int n), P(fd, v, n))
C
cc -shared -fPIC -O1 -o "$TMP/spy.so" "$TMP/spy.c" -ldl || fail "cannot build the spy library"
SPY="$TMP/spy.so $LIB"

# The control: a program that calls write, read and close itself is seen.
cat >"$TMP/own.c" <<'C'
#include <fcntl.h>
#include <unistd.h>
int main(void)
{
    char c;
    int fd = open("/dev/null", O_RDONLY);
    if (write(1, "x\n", 2) != 2 || read(fd, &c, 1) != 0)
        return 1;
    return close(fd);
}
C
cc -O1 -o "$TMP/own" "$TMP/own.c" || fail "cannot build the control program"
LD_PRELOAD="$SPY" SPY_OBJS=own SPY_OUT="$TMP/control.spy" "$TMP/own" >/dev/null ||
    fail "the control program failed under the spy"
for fn in write read close; do
    grep -q "^$fn own\$" "$TMP/control.spy" 2>/dev/null ||
        fail "the spy did not see the control program's $fn (this test could not fail): $(cat "$TMP/control.spy" 2>/dev/null)"
done
note "control: the spy saw $(wc -l <"$TMP/control.spy") calls of the program's own"

start_flip_server flip
URL="http://127.0.0.1:$PORT"

# The libcurl room, retried once, with every output of the library on.
LD_PRELOAD="$SPY" SPY_OBJS=libbackoff.so SPY_OUT="$TMP/curl.spy" BACKOFF_VERBOSE=1 \
    BACKOFF_STATS="$TMP/stats.json" BACKOFF_TRACE="$TMP/trace.csv" \
    BACKOFF_METRICS_FILE="$TMP/metrics.prom" \
    timeout -k 2 30 curl -s -o "$TMP/curl.body" "$URL/item/1" 2>"$TMP/curl.err" ||
    fail "curl under the library failed: $(cat "$TMP/curl.err")"
[ "$(cat "$TMP/curl.body")" = "$(item_body 1)" ] || fail "curl got: $(cat "$TMP/curl.body")"
grep -q '^backoff: ' "$TMP/curl.err" || fail "no BACKOFF_VERBOSE line: $(cat "$TMP/curl.err")"
[ "$(stats_sum "$TMP/stats.json" retries)" -ge 1 ] || fail "no retry in the stats: $(cat "$TMP/stats.json")"
[ "$(wc -l <"$TMP/trace.csv")" -ge 3 ] || fail "the trace has no rows: $(cat "$TMP/trace.csv")"
grep -q '^backoff_calls_total' "$TMP/metrics.prom" || fail "no metrics file: $(ls "$TMP")"
[ ! -s "$TMP/curl.spy" ] ||
    fail "libbackoff.so's own I/O went through the exported hooks: $(sort "$TMP/curl.spy" | uniq -c)"

# The http room: a Python request retried after its 429, the wait a timerfd's.
LD_PRELOAD="$SPY" SPY_OBJS=libbackoff.so SPY_OUT="$TMP/py.spy" BACKOFF_VERBOSE=1 \
    BACKOFF_STATS="$TMP/py.stats" timeout -k 2 30 /usr/bin/python3 -c '
import sys, urllib.request
print(urllib.request.urlopen(sys.argv[1], timeout=20).read().decode())' "$URL/item/2" \
    >"$TMP/py.out" 2>"$TMP/py.err" || fail "python under the library failed: $(cat "$TMP/py.err")"
[ "$(cat "$TMP/py.out")" = "$(item_body 2)" ] || fail "python got: $(cat "$TMP/py.out")"
[ "$(stats_sum "$TMP/py.stats" retries)" -ge 1 ] || fail "python: no retry: $(cat "$TMP/py.stats")"
[ ! -s "$TMP/py.spy" ] ||
    fail "the http room's own I/O went through the exported hooks: $(sort "$TMP/py.spy" | uniq -c)"

# The wrapper reads the state file for --status and --reset; preloaded, its
# reads and closes must not reach the library's hooks either.
for what in --status --reset; do
    LD_PRELOAD="$SPY" SPY_OBJS=libbackoff.so:backoff SPY_OUT="$TMP/wrapper.spy" \
        "$B" "$what" >"$TMP/wrapper.out" 2>&1 || fail "backoff $what: $(cat "$TMP/wrapper.out")"
done
grep -q 'reset [1-9][0-9]* destination' "$TMP/wrapper.out" || fail "backoff --reset: $(cat "$TMP/wrapper.out")"
[ ! -s "$TMP/wrapper.spy" ] ||
    fail "the wrapper's state file I/O went through the exported hooks: $(sort "$TMP/wrapper.spy" | uniq -c)"
echo "ok"
