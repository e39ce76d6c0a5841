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
[$_, $n, $url, $tag] = $argv;
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

program_case bucket-nohint 60 php "$TMP/client.php" 60 -- --rate 30 --burst 10 --bucket-hints none
program_case bucket-hint 60 php "$TMP/client.php" 60 -- --rate 30 --burst 10
program_case cap 60 php "$TMP/client.php" 60 -- --max-busy 4 --service-ms 30
echo "PASS"
