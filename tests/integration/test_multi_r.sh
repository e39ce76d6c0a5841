#!/bin/sh
# R's curl package (Debian's r-cran-curl): even its single requests go
# through a multi handle of its own (curl_fetch_memory), and multi_run drives
# a pool of them.  A sequential loop and a pool of 10 connections, GETs and
# POSTs with their own X-Request-Id, against a token bucket (with and
# without Retry-After) and a concurrency cap.  Without the shim some answers
# are 429; under it every body is exact and no POST reached the server twice.
. "$(dirname "$0")/lib.sh"

[ -f "$BUILD/libbackoff.so" ] || fail "build $BUILD/libbackoff.so first"
LIB="$(cd "$BUILD" && pwd)/libbackoff.so"
command -v Rscript >/dev/null ||
    fail "R is not installed (apt-get install --no-install-recommends r-cran-curl)"
Rscript -e 'library(curl)' >/dev/null 2>&1 ||
    fail "R's curl package is not installed (apt-get install --no-install-recommends r-cran-curl)"

cat >"$TMP/client.R" <<'REOF'
suppressPackageStartupMessages(library(curl))
args <- commandArgs(trailingOnly = TRUE)
base <- args[1]; n <- as.integer(args[2]); tag <- args[3]
want <- function(i) substr(strrep(sprintf("item=%d;", i), 64), 1, 64)
url_for <- function(i) sprintf(if (i %% 4 == 0) "%s/post/%d" else "%s/item/%d", base, i)
handle_for <- function(i) {
    h <- new_handle(url = url_for(i))
    if (i %% 4 == 0) {
        handle_setopt(h, copypostfields = sprintf("n=%d", i))
        handle_setheaders(h, "X-Request-Id" = sprintf("%s-%d", tag, i))
    }
    h
}
right <- function(i, r) {
    body <- rawToChar(r$content)
    r$status_code == 200 &&
        (if (i %% 4 == 0) startsWith(body, "fnv1a64=") else identical(body, want(i)))
}
bad_seq <- 0
for (i in seq_len(n)) {
    r <- tryCatch(curl_fetch_memory(url_for(i), handle = handle_for(i)), error = function(e) NULL)
    if (is.null(r) || !right(i, r)) bad_seq <- bad_seq + 1
}
pool <- new_pool(total_con = 10, host_con = 10)
bad_pool <- 0
for (i in seq(n + 1, 2 * n)) {
    local({
        j <- i
        multi_add(handle_for(j), pool = pool,
                  done = function(r) if (!right(j, r)) bad_pool <<- bad_pool + 1,
                  fail = function(e) bad_pool <<- bad_pool + 1)
    })
}
invisible(multi_run(pool = pool))
cat(sprintf("done %d bad %d\n", 2 * n, bad_seq + bad_pool))
REOF

run_case() { # NAME server-flags...
    name=$1; shift
    start_server "$name" "$@"
    U="http://127.0.0.1:$PORT"
    setsid timeout -k 2 60 Rscript "$TMP/client.R" "$U" 30 plain >"$TMP/$name.plain" 2>&1 ||
        fail "$name: the plain script failed: $(cat "$TMP/$name.plain")"
    grep -q '^done 60 bad [1-9]' "$TMP/$name.plain" ||
        fail "$name: without the shim nothing was throttled (this test could not fail): $(cat "$TMP/$name.plain")"
    setsid timeout -k 2 90 env LD_PRELOAD="$LIB" BACKOFF_STATS="$TMP/$name.stats" \
        Rscript "$TMP/client.R" "$U" 30 shim >"$TMP/$name.shim" 2>&1 ||
        fail "$name: the script under the shim failed: $(cat "$TMP/$name.shim")"
    grep -q '^done 60 bad 0$' "$TMP/$name.shim" || fail "$name: under the shim: $(cat "$TMP/$name.shim")"
    stop_server
    [ "$(summary_field "$TMP/$name.out" duplicate_posts)" = 0 ] || fail "$name: a POST reached the server twice"
    [ "$(stats_sum "$TMP/$name.stats" retries)" -gt 0 ] || fail "$name: the shim retried nothing"
    note "$name: plain $(cat "$TMP/$name.plain"); under the shim $(cat "$TMP/$name.shim"), $(stats_sum "$TMP/$name.stats" retries) retries, no POST twice"
}

run_case bucket-nohint --rate 30 --burst 10 --bucket-hints none
run_case bucket-hint --rate 30 --burst 10
run_case cap --max-busy 4 --service-ms 30
echo "PASS"
