<?php
// PHP's file_get_contents (http and https streams: a connection per
// request): BASE/item/1..N, as tests/programs/http_py.py (prints "done N
// bad K").  SSL_CERT_FILE names the test certificate for https.
//   php http_php.php BASE N
$base = $argv[1];
$n = (int)$argv[2];
$bad = 0;
$ctx = stream_context_create([
    "http" => ["ignore_errors" => true, "timeout" => 30],
    "ssl" => ["cafile" => getenv("SSL_CERT_FILE") ?: null],
]);
for ($i = 1; $i <= $n; $i++) {
    $body = @file_get_contents("$base/item/$i", false, $ctx);
    $status = isset($http_response_header[0]) ? explode(" ", $http_response_header[0])[1] : 0;
    if ($status != 200 || $body !== substr(str_repeat("item=$i;", 64), 0, 64))
        $bad++;
}
echo "done $n bad $bad\n";
