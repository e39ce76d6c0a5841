#!/bin/sh
# `backoff --check CMD` tells before CMD runs whether the shim will reach its
# HTTP: its libcurl linked dynamically (curl, loadgen), loaded at run time
# (php, a #! script run by it), linked statically, not linked (ls), or
# reached through the helper it runs (git's git-remote-https); its OpenSSL
# (linked: php; loadable: python3; linked statically: node; a distribution's
# node on libnode and the system libssl: named, https not reached yet), GnuTLS (wget:
# same-connection retries), plain sockets; or nothing because it is setuid or a static
# program.  What a program loads at run time is followed: a Java launcher's
# runtime, a pyenv shim's interpreter; a library it cannot find makes a path
# "cannot tell", never "not used".  Exit 0 when one path will (or may) be
# reached, 1 when none.
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
    expect 0 "OpenSSL: not reached: a Node.js build with OpenSSL linked statically" /usr/bin/node
fi
# A distribution's Node.js (Debian's nodejs: node links libnode, which links
# the system libssl and libuv, whose connect is the loop's): made here, a
# node and a libnode.so.108 of nothing but those links, to be read, not run.
mkdir -p "$TMP/nodejs/lib"
printf 'int node_start(void);\nint node_start(void) { return 0; }\n' >"$TMP/nodejs/libnode.c"
printf 'int node_start(void);\nint main(void) { return node_start(); }\n' >"$TMP/nodejs/main.c"
uv=-l:libuv.so.1
[ -e /usr/lib/x86_64-linux-gnu/libuv.so.1 ] || [ -e /lib/x86_64-linux-gnu/libuv.so.1 ] || uv=""
if cc -shared -fPIC -o "$TMP/nodejs/lib/libnode.so.108" "$TMP/nodejs/libnode.c" \
    -Wl,--no-as-needed -l:libssl.so.3 $uv 2>"$TMP/nodejs/cc.err" &&
    cc -o "$TMP/nodejs/node" "$TMP/nodejs/main.c" "$TMP/nodejs/lib/libnode.so.108" \
        -Wl,-rpath,"$TMP/nodejs/lib" 2>>"$TMP/nodejs/cc.err"; then
    expect 0 "OpenSSL: a distribution's Node.js build: libnode on the system libssl" "$TMP/nodejs/node"
    [ -z "$uv" ] || grep -q "plain sockets: reached" "$TMP/out" ||
        fail "a distribution's node: its loop's connections not seen: $(cat "$TMP/out")"
else
    note "no libssl.so.3 to link a distribution's node with: skipped ($(head -c 200 "$TMP/nodejs/cc.err"))"
fi

# What a program loads at run time.  Java: the launcher links only libjli,
# which loads libjvm.so and, for java.net, libnet.so (they import connect).
if command -v java >/dev/null 2>&1; then
    expect 0 "a Java launcher: its runtime .*/libjvm.so" java
    grep -q "plain sockets: reached" "$TMP/out" || fail "java: $(cat "$TMP/out")"
    ! grep -q "not used (it makes no TCP" "$TMP/out" || fail "java: $(cat "$TMP/out")"
    grep -q "OpenSSL: not used (a Java runtime's TLS" "$TMP/out" || fail "java: $(cat "$TMP/out")"
else
    note "no java on this machine: the Java launcher case is skipped"
fi

# A version manager's shim script (pyenv's form) is followed to the program
# the manager names, with the root the shim exports; a program the manager
# cannot name is "cannot tell", exit 2, never the shell's answer.
mkdir -p "$TMP/pyenv/libexec" "$TMP/pyenv/shims" "$TMP/pyenv/versions/9.9/bin"
ln -s /usr/bin/python3 "$TMP/pyenv/versions/9.9/bin/python3"
cat >"$TMP/pyenv/libexec/pyenv" <<'SH'
#!/bin/sh
if [ "$1" = which ] && [ "$2" = python3 ] && [ -n "${PYENV_ROOT:-}" ]; then
    echo "$PYENV_ROOT/versions/9.9/bin/python3"
    exit 0
fi
echo "pyenv: $2: command not found" >&2
exit 127
SH
for prog in python3 nosuch; do
    cat >"$TMP/pyenv/shims/$prog" <<SH
#!/usr/bin/env bash
set -e
program="\${0##*/}"
export PYENV_ROOT="$TMP/pyenv"
exec "$TMP/pyenv/libexec/pyenv" exec "\$program" "\$@"
SH
done
chmod +x "$TMP/pyenv/libexec/pyenv" "$TMP/pyenv/shims/python3" "$TMP/pyenv/shims/nosuch"
expect 0 "a pyenv shim: it runs $TMP/pyenv/versions/9.9/bin/python3" "$TMP/pyenv/shims/python3"
grep -q "OpenSSL: reached if it loads libssl at run time" "$TMP/out" || fail "shim: $(cat "$TMP/out")"
! grep -q "a script run by\|bash" "$TMP/out" || fail "the shim's shell was judged: $(cat "$TMP/out")"
expect 2 "cannot tell: a pyenv shim, and .pyenv which nosuch. names no program" "$TMP/pyenv/shims/nosuch"
if command -v pyenv >/dev/null 2>&1 && case "$(command -v python3)" in */shims/python3) true ;; *) false ;; esac; then
    expect 0 "a pyenv shim: it runs $(pyenv which python3)" python3
else
    note "python3 is not a pyenv shim here: the real pyenv case is skipped"
fi

# A library the dynamic linker would load and the check cannot find: the
# paths it may hold are "cannot tell", never "not used".
cat >"$TMP/unseen.c" <<'C'
int unseen(void);
int unseen(void) { return 0; }
C
cat >"$TMP/needs.c" <<'C'
int unseen(void);
int main(void) { return unseen(); }
C
mkdir -p "$TMP/lib"
cc -shared -fPIC -o "$TMP/lib/libunseen.so" "$TMP/unseen.c" &&
    cc -o "$TMP/needs" "$TMP/needs.c" -L"$TMP/lib" -lunseen ||
    fail "cannot build the program with a library of its own"
expect 0 "plain sockets: cannot tell: libunseen.so, which .*needs needs, is not where" "$TMP/needs"
! grep -q "not used" "$TMP/out" || fail "a path it cannot see called unused: $(cat "$TMP/out")"
LD_LIBRARY_PATH="$TMP/lib" expect 1 "plain sockets: not used" "$TMP/needs"

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
