#!/bin/sh
# wget (one process, one keep-alive connection) fetching BASE/item/1..N
# into a directory of its own, each file checked as tests/programs/http_py.py
# checks a body; prints "done N bad K".  --tries=1: wget's own retries off.
# SSL_CERT_FILE names the test certificate for https.   sh http_wget.sh BASE N
base=$1 n=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/http-wget.XXXXXX")
trap 'rm -rf "$dir"' EXIT
urls=""
i=1
while [ $i -le "$n" ]; do urls="$urls $base/item/$i"; i=$((i + 1)); done
# shellcheck disable=SC2086
wget -q --tries=1 --timeout=30 -x -nH -P "$dir" ${SSL_CERT_FILE:+--ca-certificate="$SSL_CERT_FILE"} $urls
bad=0
i=1
while [ $i -le "$n" ]; do
    want=$(yes "item=$i;" | tr -d '\n' | head -c 64)
    [ -f "$dir/item/$i" ] && [ "$(cat "$dir/item/$i")" = "$want" ] || bad=$((bad + 1))
    i=$((i + 1))
done
echo "done $n bad $bad"
