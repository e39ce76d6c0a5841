#!/bin/sh
# PHP's curl_multi_exec (php-cli with php-curl, which PHP loads with
# RTLD_DEEPBIND: the shim reaches it by rewriting the extension's GOT):
# GETs and POSTs with their own X-Request-Id in one multi handle, driven by
# the usual curl_multi_exec/curl_multi_select loop, against a token bucket
# and a concurrency cap.  Without the shim some answers are 429; under it
# every body is exact and no POST reached the server twice.
. "$(dirname "$0")/lib.sh"

[ -f "$BUILD/libbackoff.so" ] || fail "build $BUILD/libbackoff.so first"
LIB="$(cd "$BUILD" && pwd)/libbackoff.so"
command -v php >/dev/null || fail "php-cli is not installed (apt-get install php-cli php-curl)"
php -r 'exit(function_exists("curl_multi_exec") ? 0 : 1);' || fail "php-curl is not installed (apt-get install php-curl)"

cat >"$TMP/client.php" <<'PHPEOF'
<?php
[$_, $url, $n, $tag] = $argv;
$mh = curl_multi_init();
$hs = [];
for ($i = 1; $i <= $n; $i++) {
    $h = curl_init();
    if ($i % 4 == 0) {
        curl_setopt($h, CURLOPT_URL, "$url/post/$i");
        curl_setopt($h, CURLOPT_POSTFIELDS, "n=$i");
        curl_setopt($h, CURLOPT_HTTPHEADER, ["X-Request-Id: $tag-$i"]);
    } else {
        curl_setopt($h, CURLOPT_URL, "$url/item/$i");
    }
    curl_setopt($h, CURLOPT_RETURNTRANSFER, true);
    curl_multi_add_handle($mh, $h);
    $hs[$i] = $h;
}
do {
    $st = curl_multi_exec($mh, $running);
    if ($running)
        curl_multi_select($mh, 1.0);
} while ($running && $st == CURLM_OK);
$bad = 0;
foreach ($hs as $i => $h) {
    $body = curl_multi_getcontent($h);
    $code = curl_getinfo($h, CURLINFO_RESPONSE_CODE);
    $want = substr(str_repeat("item=$i;", 64), 0, 64);
    $ok = $code == 200 && ($i % 4 == 0 ? strncmp($body, "fnv1a64=", 8) == 0 : $body === $want);
    $bad += $ok ? 0 : 1;
    curl_multi_remove_handle($mh, $h);
}
curl_multi_close($mh);
echo "done $n bad $bad\n";
PHPEOF

run_case() { # NAME server-flags...
    name=$1; shift
    start_server "$name" "$@"
    U="http://127.0.0.1:$PORT"
    setsid timeout -k 2 60 php "$TMP/client.php" "$U" 60 plain >"$TMP/$name.plain" 2>&1 ||
        fail "$name: the plain script failed: $(cat "$TMP/$name.plain")"
    grep -q '^done 60 bad [1-9]' "$TMP/$name.plain" ||
        fail "$name: without the shim nothing was throttled (this test could not fail): $(cat "$TMP/$name.plain")"
    setsid timeout -k 2 90 env LD_PRELOAD="$LIB" BACKOFF_STATS="$TMP/$name.stats" \
        php "$TMP/client.php" "$U" 60 shim >"$TMP/$name.shim" 2>&1 ||
        fail "$name: the script under the shim failed: $(cat "$TMP/$name.shim")"
    grep -q '^done 60 bad 0$' "$TMP/$name.shim" || fail "$name: under the shim: $(cat "$TMP/$name.shim")"
    stop_server
    [ "$(summary_field "$TMP/$name.out" duplicate_posts)" = 0 ] || fail "$name: a POST reached the server twice"
    note "$name: plain $(cat "$TMP/$name.plain"); under the shim $(cat "$TMP/$name.shim"), $(stats_sum "$TMP/$name.stats" retries) retries, no POST twice"
}

run_case bucket-nohint --rate 30 --burst 10 --bucket-hints none
run_case bucket-hint --rate 30 --burst 10
run_case cap --max-busy 4 --service-ms 30
echo "PASS"
