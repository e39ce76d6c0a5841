#!/bin/sh
# libcurl reached however the program loads it: a dlopen+dlsym
# client (and dlvsym), a host that loads a libcurl plugin with RTLD_DEEPBIND
# (directly, bound now or lazily, and through a plugin that finds it by its
# own DT_RUNPATH),
# PHP's curl_exec (Debian's php-curl: curl.so is loaded RTLD_DEEPBIND), two
# libcurl copies in one process, threads performing while others
# dlopen/dlsym/dlclose.  Against a token bucket of 20/s, burst 20, with
# Retry-After: 1, each gets 60/60 exact bodies under the shim where plain
# gets fewer, and each run is byte-exact with the plain one when nothing
# is throttled.  PHP's curl_multi_exec (the multi interface is not hooked
# yet) must only keep working.  Also: RTLD_NEXT lookups by another preloaded
# library resolve as glibc resolves them, and a deep-bound plugin's other
# symbols still bind deep.
. "$(dirname "$0")/lib.sh"

LIB="$BUILD/libbackoff.so"
CLIENT="$BUILD/tests/helpers/shim_dl_client"
N=60
[ -f "$LIB" ] || fail "build $LIB first"
[ -x "$CLIENT" ] || fail "build $CLIENT first"
command -v cc >/dev/null || fail "cc is needed to build the test plugins"
php -r 'exit(function_exists("curl_init") ? 0 : 1);' 2>/dev/null ||
    fail "php-cli with php-curl is not installed (apt-get install php-cli php-curl)"
CURL_CFLAGS=$(pkg-config --cflags libcurl 2>/dev/null || true)
CURL_LIBS=$(pkg-config --libs libcurl 2>/dev/null || echo -lcurl)

# ---- the programs ------------------------------------------------------

cat >"$TMP/plugin.c" <<'EOF'
#include <curl/curl.h>
#include <string.h>
typedef struct { char *buf; size_t cap, *len; } sink;
static size_t put(char *p, size_t s, size_t n, void *ud)
{
    sink *k = ud;
    size_t m = s * n;
    if (m > k->cap - *k->len)
        return 0;
    memcpy(k->buf + *k->len, p, m);
    *k->len += m;
    return m;
}
const char *get_tag(void);
const char *get_tag(void) { return "plugin"; }
const char *plugin_tag(void);
const char *plugin_tag(void) { return get_tag(); }
int plugin_get(const char *url, char *buf, size_t cap, size_t *len);
int plugin_get(const char *url, char *buf, size_t cap, size_t *len)
{
    sink k = {buf, cap, len};
    CURL *h = curl_easy_init();
    if (h == NULL)
        return -1;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, put);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &k);
    CURLcode c = curl_easy_perform(h);
    curl_easy_cleanup(h);
    return c == CURLE_OK ? 0 : -1;
}
EOF
# outer.so finds inner.so (the libcurl plugin) only through its own
# DT_RUNPATH, and loads it deep-bound too: the shim's dlopen hook must keep
# outer.so as glibc's caller.
cat >"$TMP/outer.c" <<'EOF'
#include <dlfcn.h>
#include <stddef.h>
int plugin_get(const char *url, char *buf, size_t cap, size_t *len);
int plugin_get(const char *url, char *buf, size_t cap, size_t *len)
{
    static int (*get)(const char *, char *, size_t, size_t *);
    if (get == NULL) {
        void *h = dlopen("inner.so", RTLD_NOW | RTLD_DEEPBIND);
        if (h == NULL)
            return -2;
        *(void **)&get = dlsym(h, "plugin_get");
        if (get == NULL)
            return -3;
    }
    return get(url, buf, cap, len);
}
EOF
# A preloaded library that defines get_tag() too and reports what its
# RTLD_NEXT lookups find.
cat >"$TMP/tagger.c" <<'EOF'
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
const char *get_tag(void);
const char *get_tag(void) { return "preload"; }
static void show(const char *what, void *h, const char *name)
{
    Dl_info i;
    void *p = dlsym(h, name);
    const char *f = p != NULL && dladdr(p, &i) && i.dli_fname ? i.dli_fname : "none";
    const char *b = strrchr(f, '/');
    fprintf(stderr, "lookup %s %s %s\n", what, name, b ? b + 1 : f);
}
__attribute__((constructor)) static void init(void)
{
    show("next", RTLD_NEXT, "connect");
    show("next", RTLD_NEXT, "dlsym");
    show("next", RTLD_NEXT, "write");
    show("next", RTLD_NEXT, "no_such_symbol");
    show("default", RTLD_DEFAULT, "connect");
}
EOF
mkdir -p "$TMP/sub"
# shellcheck disable=SC2086
cc -shared -fPIC -O2 $CURL_CFLAGS -o "$TMP/plugin.so" "$TMP/plugin.c" $CURL_LIBS ||
    fail "cannot build the plugin"
# shellcheck disable=SC2086
cc -shared -fPIC -O2 $CURL_CFLAGS -Wl,-z,lazy -o "$TMP/plugin-lazy.so" "$TMP/plugin.c" $CURL_LIBS ||
    fail "cannot build the lazy plugin"
# shellcheck disable=SC2086
cc -shared -fPIC -O2 $CURL_CFLAGS -o "$TMP/sub/inner.so" "$TMP/plugin.c" $CURL_LIBS ||
    fail "cannot build inner.so"
cc -shared -fPIC -O2 -o "$TMP/outer.so" "$TMP/outer.c" -Wl,--enable-new-dtags,-rpath,'$ORIGIN/sub' ||
    fail "cannot build outer.so"
cc -shared -fPIC -O2 -D_GNU_SOURCE -o "$TMP/tagger.so" "$TMP/tagger.c" || fail "cannot build tagger.so"

cat >"$TMP/exec.php" <<'EOF'
<?php
$base = $argv[1]; $n = (int)$argv[2]; $ok = 0;
for ($i = 1; $i <= $n; $i++) {
    $h = curl_init("$base/item/$i");
    curl_setopt($h, CURLOPT_RETURNTRANSFER, true);
    $body = curl_exec($h);
    curl_close($h);
    if ($body === substr(str_repeat("item=$i;", 64), 0, 64)) $ok++;
    echo $body, "\n";
}
echo "ok=$ok/$n\n";
EOF
cat >"$TMP/multi.php" <<'EOF'
<?php
$base = $argv[1]; $n = (int)$argv[2]; $ok = 0;
for ($i = 1; $i <= $n; $i++) {
    $m = curl_multi_init();
    $h = curl_init("$base/item/$i");
    curl_setopt($h, CURLOPT_RETURNTRANSFER, true);
    curl_multi_add_handle($m, $h);
    do {
        $st = curl_multi_exec($m, $running);
        if ($running) curl_multi_select($m, 1.0);
    } while ($running && $st == CURLM_OK);
    $body = curl_multi_getcontent($h);
    curl_multi_remove_handle($m, $h);
    curl_close($h);
    curl_multi_close($m);
    if ($body === substr(str_repeat("item=$i;", 64), 0, 64)) $ok++;
    echo $body, "\n";
}
echo "ok=$ok/$n\n";
EOF

# run NAME OUT [LD_PRELOAD]: runs program NAME against $URL, bounded in time,
# in its own process group; stdout in OUT, stats in OUT.stats.
run() {
    _name=$1 _out=$2 _pre=${3:-}
    case $_name in
    dlsym | dlvsym | two | threads) set -- "$CLIENT" "$_name" "$URL" "$N" ;;
    plugin) set -- "$CLIENT" plugin "$URL" "$N" "$TMP/plugin.so" ;;
    lazy) set -- "$CLIENT" lazy "$URL" "$N" "$TMP/plugin-lazy.so" ;;
    runpath) set -- "$CLIENT" plugin "$URL" "$N" "$TMP/outer.so" ;;
    php-exec) set -- php "$TMP/exec.php" "$URL" "$N" ;;
    php-multi) set -- php "$TMP/multi.php" "$URL" "$N" ;;
    esac
    rm -f "$_out.stats"
    if [ -n "$_pre" ]; then
        BACKOFF_STATS="$_out.stats" LD_PRELOAD="$_pre" setsid timeout -k 2 60 "$@" >"$_out" 2>"$_out.err" ||
            fail "$_name under the shim exited $?: $(tail -n 3 "$_out.err")"
    else
        setsid timeout -k 2 60 "$@" >"$_out" 2>"$_out.err" ||
            fail "$_name without the shim exited $?: $(tail -n 3 "$_out.err")"
    fi
}

ok_count() { sed -n "s/^ok=\([0-9]*\)\/$N\$/\1/p" "$1"; }

PROGRAMS="dlsym dlvsym plugin lazy runpath php-exec two threads"
HAVE_GNUTLS=1
[ -e /usr/lib/x86_64-linux-gnu/libcurl-gnutls.so.4 ] || [ -e /usr/lib/libcurl-gnutls.so.4 ] ||
    HAVE_GNUTLS=0
if [ $HAVE_GNUTLS = 0 ]; then
    note "libcurl-gnutls.so.4 is not installed: the two-copies and threads parts are skipped"
    PROGRAMS="dlsym dlvsym plugin lazy runpath php-exec"
fi
# A sanitized host (make check-asan/check-tsan) cannot dlopen with
# RTLD_DEEPBIND at all (google/sanitizers#611): its runtime refuses.  PHP, a
# foreign program, still loads curl.so deep-bound under the sanitized shim.
DEEP=1
if ldd "$CLIENT" 2>/dev/null | grep -Eq 'lib(asan|tsan)'; then
    note "sanitized host: its RTLD_DEEPBIND plugin parts are skipped (the runtime refuses the flag)"
    DEEP=0
    PROGRAMS=$(echo "$PROGRAMS" | sed 's/ plugin lazy runpath//')
fi

# ---- throttled: 60/60 under the shim, fewer without ----------------------

for p in $PROGRAMS php-multi; do
    # a fresh bucket for each run: full, 20 tokens, 20 per second
    start_server "plain-$p" --rate 20 --burst 20 --retry-after 1
    URL="http://127.0.0.1:$PORT"
    run "$p" "$TMP/$p.plain"
    stop_server
    start_server "shim-$p" --rate 20 --burst 20 --retry-after 1
    URL="http://127.0.0.1:$PORT"
    run "$p" "$TMP/$p.shim" "$LIB"
    stop_server
    plain=$(ok_count "$TMP/$p.plain")
    shim=$(ok_count "$TMP/$p.shim")
    calls=$(stats_sum "$TMP/$p.shim.stats" calls)
    note "$p: plain $plain/$N, under the shim $shim/$N, shim's calls $calls"
    [ -n "$plain" ] && [ -n "$shim" ] || fail "$p printed no ok= line"
    [ "$plain" -lt $N ] || fail "$p: plain got $plain/$N: the bucket did not throttle"
    if [ "$p" = php-multi ]; then
        continue # not hooked: it must only keep working
    fi
    [ "$shim" -eq $N ] || fail "$p: $shim/$N correct bodies under the shim"
    [ "$calls" -eq $N ] || fail "$p: the shim counted $calls calls, expected $N"
done
[ $DEEP = 0 ] || grep -qx 'tag=plugin' "$TMP/plugin.shim" ||
    fail "the deep-bound plugin's get_tag() no longer binds to its own"
if [ $HAVE_GNUTLS = 1 ]; then
    grep -qx 'distinct=1' "$TMP/two.shim" || fail "both copies' curl_easy_perform lookups gave one function"
fi

# ---- nothing throttled: byte-exact with the plain run ---------------------

start_server open
URL="http://127.0.0.1:$PORT"
for p in $PROGRAMS php-multi; do
    run "$p" "$TMP/$p.open-plain"
    run "$p" "$TMP/$p.open-shim" "$LIB"
    if [ "$p" = threads ]; then
        # the threads' order is free: compare the count only
        [ "$(ok_count "$TMP/$p.open-shim")" -eq $N ] || fail "threads: not $N/$N unthrottled"
        continue
    fi
    cmp -s "$TMP/$p.open-plain" "$TMP/$p.open-shim" ||
        fail "$p: the run under the shim differs from the plain one: $(diff "$TMP/$p.open-plain" "$TMP/$p.open-shim" | head -n 5)"
    [ "$(ok_count "$TMP/$p.open-shim")" -eq $N ] || fail "$p: not $N/$N unthrottled"
done
note "unthrottled: every program byte-exact with its plain run"

# ---- other libraries' lookups resolve as glibc resolves them ------------

# tagger.so in front of the shim: its RTLD_NEXT finds the shim's connect,
# dlsym and write (the next definitions: the http room hooks write); behind
# it, libc's.
LD_PRELOAD="$TMP/tagger.so $LIB" "$CLIENT" dlsym "$URL" 1 >/dev/null 2>"$TMP/front.err" ||
    fail "tagger.so in front of the shim: $(cat "$TMP/front.err")"
LD_PRELOAD="$LIB $TMP/tagger.so" "$CLIENT" dlsym "$URL" 1 >/dev/null 2>"$TMP/behind.err" ||
    fail "tagger.so behind the shim: $(cat "$TMP/behind.err")"
LD_PRELOAD="$TMP/tagger.so" "$CLIENT" dlsym "$URL" 1 >/dev/null 2>"$TMP/alone.err" ||
    fail "tagger.so alone: $(cat "$TMP/alone.err")"
cat "$TMP/alone.err" "$TMP/front.err" "$TMP/behind.err"
# write: libc's, or a sanitizer runtime's in front of it (as without the shim)
write=$(grep '^lookup next write ' "$TMP/alone.err")
for want in "lookup next connect libbackoff.so" "lookup next dlsym libbackoff.so" \
    "lookup next write libbackoff.so" "lookup next no_such_symbol none" \
    "lookup default connect libbackoff.so"; do
    grep -qx "$want" "$TMP/front.err" || fail "in front of the shim, expected '$want'"
done
for want in "lookup next connect libc.so.6" "lookup next dlsym libc.so.6" \
    "$write" "lookup next no_such_symbol none" \
    "lookup default connect libbackoff.so"; do
    grep -qx "$want" "$TMP/behind.err" || fail "behind the shim, expected '$want'"
done

# a deep-bound plugin keeps its own get_tag() although a preloaded library
# defines one: only the libcurl references are routed
if [ $DEEP = 1 ]; then
    LD_PRELOAD="$LIB $TMP/tagger.so" "$CLIENT" plugin "$URL" 1 "$TMP/plugin.so" >"$TMP/tag.out" 2>/dev/null ||
        fail "plugin with tagger.so preloaded"
    grep -qx 'tag=plugin' "$TMP/tag.out" || fail "the deep-bound plugin's get_tag() bound to the preloaded one"
fi
stop_server
echo "ok"
