#!/bin/sh
# `backoff --check CMD` tells before CMD runs whether the shim will reach its
# HTTP: its libcurl linked dynamically (curl, loadgen), loaded at run time
# (php, a #! script run by it), linked statically, not linked (ls), or
# reached through the helper it runs (git's git-remote-https); its OpenSSL
# (linked: php; loadable: python3; linked statically: node), GnuTLS (wget:
# same-connection retries), plain sockets; or nothing because it is setuid or a static
# program.  Exit 0 when one path will (or may) be reached, 1 when none.
. "$(dirname "$0")/lib.sh"

B="$BUILD/backoff"
[ -x "$B" ] || fail "build $B first"

# expect RC PATTERN CMD: backoff --check CMD exits RC and prints PATTERN
expect() {
    _rc=$1 _pat=$2
    shift 2
    rc=0
    "$B" --check "$@" >"$TMP/out" 2>&1 || rc=$?
    cat "$TMP/out"
    [ "$rc" -eq "$_rc" ] || fail "backoff --check $*: exit $rc, expected $_rc"
    grep -q "$_pat" "$TMP/out" || fail "backoff --check $*: no '$_pat'"
}

expect 0 "reached: libcurl is linked dynamically" /usr/bin/curl
expect 0 "reached: libcurl is linked dynamically" "$BUILD/loadgen"
expect 0 "reached if it loads libcurl at run time" /usr/bin/php
printf '#!/usr/bin/php\n<?php echo 1;\n' >"$TMP/script.php"
chmod +x "$TMP/script.php"
expect 0 "reached if it loads libcurl at run time" "$TMP/script.php"
expect 1 "not reached: it does not use libcurl" /bin/ls
grep -q "plain sockets: not used" "$TMP/out" || fail "ls: $(cat "$TMP/out")"
# the http room's paths, and git's helper
expect 0 "reached through its helper .*git-remote-https: libcurl is linked dynamically" git
grep -q "plain sockets: reached" "$TMP/out" || fail "git: $(cat "$TMP/out")"
! grep -q "not reached: it does not use libcurl" "$TMP/out" ||
    fail "git: says libcurl is not reached beside its helper's line: $(cat "$TMP/out")"
expect 0 "OpenSSL: reached: libssl is linked dynamically" /usr/bin/php
expect 0 "OpenSSL: reached if it loads libssl at run time" /usr/bin/python3
expect 0 "GnuTLS: reached: GnuTLS is linked dynamically" wget
grep -q "plain sockets: reached" "$TMP/out" || fail "wget: $(cat "$TMP/out")"
expect 0 "OpenSSL: only libcurl's" /usr/bin/curl
if [ -x /usr/bin/node ] && nm -D /usr/bin/node 2>/dev/null | grep -q ' T SSL_read$'; then
    expect 0 "OpenSSL: not reached: linked statically into it" /usr/bin/node
fi

cat >"$TMP/fake.c" <<'C'
int curl_easy_perform(void *h);
int curl_easy_perform(void *h) { return h != 0; }
int main(void) { return curl_easy_perform(0); }
C
cc -o "$TMP/fake" "$TMP/fake.c" || fail "cannot build the static-libcurl stand-in"
expect 1 "not reached: libcurl is linked statically" "$TMP/fake"
if cc -static -o "$TMP/static" "$TMP/fake.c" 2>/dev/null; then
    expect 1 "not reached: a statically linked program" "$TMP/static"
else
    note "no static libc: the static program case is skipped"
fi
cp /usr/bin/curl "$TMP/suid-curl"
chmod u+s "$TMP/suid-curl"
expect 1 "not reached: it is setuid" "$TMP/suid-curl"

rc=0
"$B" --check /no/such/program >"$TMP/out" 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "a missing program: exit $rc, expected 2"
rc=0
BACKOFF_POLICY=bogus "$B" --check /usr/bin/curl >"$TMP/out" 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "a bad configuration comes first: exit $rc, expected 2"
echo "ok"
