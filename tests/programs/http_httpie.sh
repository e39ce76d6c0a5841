#!/bin/sh
# httpie (the `http` command, a process per request) fetching BASE/item/1..N,
# each body checked as tests/programs/http_py.py checks it; prints "done N
# bad K".  SSL_CERT_FILE names the test certificate for https.
#   sh http_httpie.sh BASE N
base=$1 n=$2
bad=0
i=1
while [ $i -le "$n" ]; do
    want=$(yes "item=$i;" | tr -d '\n' | head -c 64)
    got=$(http --ignore-stdin --check-status --timeout=30 --body \
        ${SSL_CERT_FILE:+--verify="$SSL_CERT_FILE"} GET "$base/item/$i" 2>/dev/null) || got=""
    [ "$got" = "$want" ] || bad=$((bad + 1))
    i=$((i + 1))
done
echo "done $n bad $bad"
