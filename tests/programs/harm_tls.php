<?php
// PHP's https stream (OpenSSL; PHP checks the peer's name itself) for the
// harm suite (tests/integration/test_http_harm.sh): one GET of URL trusting
// CAFILE, its status line and body printed, or "error" when there was no
// answer.   php harm_tls.php URL CAFILE
$ctx = stream_context_create([
    'ssl' => ['cafile' => $argv[2], 'verify_peer' => true, 'verify_peer_name' => true],
    'http' => ['ignore_errors' => true, 'timeout' => 20],
]);
$body = @file_get_contents($argv[1], false, $ctx);
if ($body === false) {
    echo "error\n";
    exit(0);
}
echo $http_response_header[0], "\n", $body, "\n";
