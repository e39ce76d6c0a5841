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
n <- as.integer(args[1]); base <- args[2]; tag <- args[3]
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

program_case bucket-nohint 60 Rscript "$TMP/client.R" 30 -- --rate 30 --burst 10 --bucket-hints none
program_case bucket-hint 60 Rscript "$TMP/client.R" 30 -- --rate 30 --burst 10
program_case cap 60 Rscript "$TMP/client.R" 30 -- --max-busy 4 --service-ms 30
echo "PASS"
