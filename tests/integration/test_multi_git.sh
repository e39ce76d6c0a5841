#!/bin/sh
# git over HTTP drives every request through libcurl's multi interface
# (git-remote-http: curl_multi_add_handle/_perform/_info_read/_fdset/
# _timeout).  A bare repository prepared with `git update-server-info` is
# served by ratelimit-server --serve-dir through a token bucket (without
# Retry-After, then with it) and a concurrency cap: plain `git clone` fails,
# under the shim the clone equals the source, and a `git fetch` after new
# commits brings them all.
. "$(dirname "$0")/lib.sh"

[ -f "$BUILD/libbackoff.so" ] || fail "build $BUILD/libbackoff.so first"
LIB="$(cd "$BUILD" && pwd)/libbackoff.so" # git -C changes directory
command -v git >/dev/null || fail "git is not installed (apt-get install git)"

export GIT_CONFIG_NOSYSTEM=1 HOME="$TMP" GIT_TERMINAL_PROMPT=0
git config --global user.email t@example.invalid
git config --global user.name test
git config --global init.defaultBranch main

# A source with many loose objects: the dumb HTTP walker fetches each one.
commits() {
    for c in $(seq "$2" "$3"); do
        for f in 1 2 3 4 5; do
            echo "commit $c file $f $(seq 1 "$c" | tr '\n' ' ')" >"$1/f$f.txt"
        done
        git -C "$1" add -A >/dev/null
        git -C "$1" commit -qm "commit $c"
    done
}
mkdir -p "$TMP/src" "$TMP/www"
git -C "$TMP/src" init -q
commits "$TMP/src" 1 12
git clone -q --bare "$TMP/src" "$TMP/www/repo.git"
git -C "$TMP/www/repo.git" update-server-info
nobj=$(find "$TMP/www/repo.git/objects" -type f -path '*/objects/??/*' | wc -l)
note "the served repository has $nobj loose objects"
[ "$nobj" -ge 40 ] || fail "expected at least 40 loose objects, found $nobj"

same_repo() { # CLONE: the clone's refs and trees equal the source's
    [ "$(git -C "$1" rev-parse origin/main)" = "$(git -C "$TMP/src" rev-parse main)" ] ||
        fail "$2: the clone's origin/main is not the source's main"
    git -C "$1" fsck --full --strict >/dev/null 2>&1 || fail "$2: git fsck failed in the clone"
    [ "$(git -C "$1" log --format=%H origin/main)" = "$(git -C "$TMP/src" log --format=%H main)" ] ||
        fail "$2: the histories differ"
}

run_case() { # NAME server-flags...
    name=$1; shift
    start_server "$name" --serve-dir "$TMP/www" "$@"
    URL="http://127.0.0.1:$PORT/repo.git"
    if setsid timeout -k 2 60 git clone -q "$URL" "$TMP/plain-$name" >"$TMP/plain-$name.log" 2>&1; then
        fail "$name: plain git clone succeeded: the server does not throttle it (this test could not fail)"
    fi
    note "$name: plain git clone fails: $(tail -n 1 "$TMP/plain-$name.log")"
    setsid timeout -k 2 120 env LD_PRELOAD="$LIB" BACKOFF_STATS="$TMP/stats-$name" \
        git clone -q "$URL" "$TMP/clone-$name" >"$TMP/clone-$name.log" 2>&1 ||
        fail "$name: git clone under the shim failed: $(cat "$TMP/clone-$name.log")"
    same_repo "$TMP/clone-$name" "$name clone"
    note "$name: clone under the shim equals the source ($(stats_sum "$TMP/stats-$name" calls) calls, $(stats_sum "$TMP/stats-$name" retries) retries)"
    [ "$(stats_sum "$TMP/stats-$name" retries)" -gt 0 ] || fail "$name: the shim retried nothing"
    # new commits, then a fetch through the throttle
    commits "$TMP/src" 13 18
    git -C "$TMP/www/repo.git" fetch -q "$TMP/src" main:main
    git -C "$TMP/www/repo.git" update-server-info
    setsid timeout -k 2 120 env LD_PRELOAD="$LIB" BACKOFF_STATS="$TMP/fstats-$name" \
        git -C "$TMP/clone-$name" fetch -q origin >"$TMP/fetch-$name.log" 2>&1 ||
        fail "$name: git fetch under the shim failed: $(cat "$TMP/fetch-$name.log")"
    same_repo "$TMP/clone-$name" "$name fetch"
    stop_server
    [ "$(summary_field "$TMP/$name.out" duplicate_posts)" = 0 ] || fail "$name: duplicated POSTs"
    note "$name: fetch brought the new commits; server: $(summary_field "$TMP/$name.out" requests) requests, $(summary_field "$TMP/$name.out" rejected) rejected"
}

run_case bucket-nohint --rate 20 --burst 5 --bucket-hints none
run_case bucket-hint --rate 20 --burst 5
run_case cap --max-busy 1 --service-ms 20
echo "PASS"
