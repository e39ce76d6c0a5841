#!/bin/sh
# Bad configuration and harmlessness:
# - every bad BACKOFF_* value prints exactly one line on stderr (naming the
#   variable) and the program still runs; `backoff --check` exits 2 on it,
#   and so does the program under BACKOFF_STRICT=1;
# - `LD_PRELOAD=build/libbackoff.so ls` prints nothing extra; sh maps no libm
#   nor libhiredis under the library (it links neither);
# - the wrapper: exit status of the command, 127 when not found, 126 when
#   not executable, the absolute library path first in LD_PRELOAD, options
#   become variables, and it finds the library in the installed layout.
. "$(dirname "$0")/lib.sh"

LIB="$BUILD/libbackoff.so"
BO="$BUILD/backoff"
[ -f "$LIB" ] && [ -x "$BO" ] || fail "build $LIB and $BO first"

check_bad() { # VAR VALUE
    var=$1 val=$2
    out=$(env "$var=$val" LD_PRELOAD="$LIB" /bin/echo ran 2>"$TMP/err") || fail "$var=$val: the program failed"
    [ "$out" = ran ] || fail "$var=$val: the program did not run (stdout '$out')"
    [ "$(wc -l <"$TMP/err")" -eq 1 ] || fail "$var=$val: expected one stderr line, got: $(cat "$TMP/err")"
    grep -q "^backoff: .*$var" "$TMP/err" || fail "$var=$val: the line does not name it: $(cat "$TMP/err")"
    rc=0
    env "$var=$val" "$BO" --check 2>/dev/null || rc=$?
    [ $rc -eq 2 ] || fail "$var=$val: backoff --check exited $rc, expected 2"
    [ "$var" = BACKOFF_STRICT ] && return 0
    rc=0
    env "$var=$val" BACKOFF_STRICT=1 LD_PRELOAD="$LIB" /bin/echo ran >/dev/null 2>&1 || rc=$?
    [ $rc -eq 2 ] || fail "$var=$val with BACKOFF_STRICT=1: exited $rc, expected 2"
}

note "bad values"
n=0
while read -r var val; do
    check_bad "$var" "$val"
    n=$((n + 1))
done <<'EOF'
BACKOFF_POLICY bogus
BACKOFF_MAX_ATTEMPTS abc
BACKOFF_MAX_ATTEMPTS -1
BACKOFF_MAX_TIME_MS 1.5x
BACKOFF_BASE_MS -5
BACKOFF_CAP_MS lots
BACKOFF_FACTOR zero
BACKOFF_JITTER 7
BACKOFF_RETRY_ON 418
BACKOFF_UNSAFE_RETRY maybe
BACKOFF_IDEMPOTENCY_KEY on
BACKOFF_WINDOW 0
BACKOFF_WINDOW_MAX x
BACKOFF_BETA 3
BACKOFF_AIMD_MODE vegas
BACKOFF_UP nope
BACKOFF_DOWN nope
BACKOFF_DOWN_AFTER -3
BACKOFF_CONNECT 2
BACKOFF_HTTP off
BACKOFF_HOSTS a,,b
BACKOFF_VERBOSE yes-please
BACKOFF_SEED seed
BACKOFF_STRICT 9
EOF
note "$n bad values: one line each, the program ran, --check and STRICT exit 2"

note "a good configuration: --check exits 0, no output"
out=$(BACKOFF_POLICY=full-jitter "$BO" --check 2>&1) || fail "--check on a good config exited $?"
[ -z "$out" ] || fail "--check printed: $out"

note "LD_PRELOAD=libbackoff.so ls prints nothing extra"
# A directory of our own: "ls -la /" shows /proc's link count, which changes
# with every process started or ended meanwhile (it failed on a busy machine).
mkdir -p "$TMP/lsdir/sub"
printf 'x' >"$TMP/lsdir/a"
ln -s a "$TMP/lsdir/link"
ls -la "$TMP/lsdir" >"$TMP/ls.plain" 2>&1
LD_PRELOAD="$LIB" ls -la "$TMP/lsdir" >"$TMP/ls.shim" 2>&1 || fail "ls failed under the shim"
cmp -s "$TMP/ls.plain" "$TMP/ls.shim" || fail "ls output differs under the shim: $(diff "$TMP/ls.plain" "$TMP/ls.shim" | head)"

note "without BACKOFF_* at start, what the program sets later is not read (the defaults, made on first use)"
# The constructor parses nothing then; the connect() hook makes the defaults.
# A variable the program puts in its own environment first is ignored, as it
# always was when the variables were parsed at load.
LD_PRELOAD="$LIB" python3 -c '
import os, socket
os.environ["BACKOFF_POLICY"] = "bogus"
s = socket.socket()
s.settimeout(2)
try:
    s.connect(("127.0.0.1", 9))
except OSError:
    pass
' 2>"$TMP/late.err" || fail "python3 failed under the library: $(cat "$TMP/late.err")"
[ ! -s "$TMP/late.err" ] || fail "a variable set after start was read: $(cat "$TMP/late.err")"

note "a program that maps neither libm nor libhiredis maps none of them under the library"
# (every process of a command's tree loads the library: it links neither;
# the fleet loads hiredis on its first connection, test_share_redis)
plain=$(sh -c 'cat /proc/$$/maps')
maps=$(LD_PRELOAD="$LIB" sh -c 'cat /proc/$$/maps')
echo "$maps" | grep -q libbackoff || fail "the library is not in sh's maps"
# (a sanitized library, make check-asan or check-tsan, brings its runtime,
# which links libm: there what the library itself names, DT_NEEDED, is checked)
san=""
ldd "$LIB" 2>/dev/null | grep -q 'libasan\|libtsan\|libubsan' && san=yes
for l in libm.so libhiredis; do
    echo "$plain" | grep -q "/$l" && { note "sh maps $l on its own here: not checked"; continue; }
    if [ -n "$san" ]; then
        readelf -d "$LIB" | grep NEEDED | grep -q "\[$l" &&
            fail "the sanitized library needs $l itself: $(readelf -d "$LIB" | grep NEEDED | tr '\n' ' ')"
        note "$l: a sanitizer's runtime is loaded (it may bring $l): the library's own needs checked"
        continue
    fi
    echo "$maps" | grep -q "/$l" && fail "sh maps $l under the library"
done

note "the wrapper"
rc=0; "$BO" -- sh -c 'exit 7' || rc=$?
[ $rc -eq 7 ] || fail "exit status $rc, expected 7"
rc=0; "$BO" -- /nonexistent/command 2>/dev/null || rc=$?
[ $rc -eq 127 ] || fail "missing command: $rc, expected 127"
printf 'not a program\n' >"$TMP/noexec"
chmod 644 "$TMP/noexec"
rc=0; "$BO" -- "$TMP/noexec" 2>/dev/null || rc=$?
[ $rc -eq 126 ] || fail "non-executable command: $rc, expected 126"
abs=$(cd "$(dirname "$LIB")" && pwd)/libbackoff.so
pre=$(LD_PRELOAD=/lib/x86_64-linux-gnu/libm.so.6 "$BO" -- sh -c 'printf %s "$LD_PRELOAD"')
[ "$pre" = "$abs /lib/x86_64-linux-gnu/libm.so.6" ] || fail "LD_PRELOAD is '$pre'"
vars=$(cd "$TMP" && "$BO" -p thain -n 5 -v --stats s.json --trace t.csv -- env | grep '^BACKOFF_' | sort | tr '\n' ' ')
[ "$vars" = "BACKOFF_MAX_ATTEMPTS=5 BACKOFF_POLICY=thain BACKOFF_STATS=$TMP/s.json BACKOFF_TRACE=$TMP/t.csv BACKOFF_VERBOSE=1 " ] ||
    fail "variables: $vars"
"$BO" --print-config | grep -q '^BACKOFF_POLICY=aimd$' || fail "--print-config"

note "--print-config's output fed back as the environment (empty values included) prints the same"
BACKOFF_SEED=7 BACKOFF_HOSTS=a.example:81 BACKOFF_WINDOW=5 "$BO" --print-config >"$TMP/pc1"
(env -i PATH="$PATH" $(BACKOFF_WINDOW=3 "$BO" --print-config | tr '\n' ' ') "$BO" --print-config) >"$TMP/pc2" ||
    fail "--print-config's own output is rejected: $(cat "$TMP/pc2")"
BACKOFF_WINDOW=3 "$BO" --print-config | cmp -s - "$TMP/pc2" || fail "--print-config does not read back the same"
grep -q '^BACKOFF_SEED=7$' "$TMP/pc1" && grep -q '^BACKOFF_HOSTS=a.example:81$' "$TMP/pc1" ||
    fail "--print-config: $(cat "$TMP/pc1")"

note "the README's variable table is the library's own (backoff --variables)"
top=$(cd "$(dirname "$0")/../.." && pwd)
sed -n '/^<!-- variables: generated by/,/^<!-- end of variables -->/p' "$top/README.md" |
    sed '1d;$d' >"$TMP/readme-vars"
"$BO" --variables >"$TMP/vars"
[ -s "$TMP/vars" ] && [ "$(wc -l <"$TMP/vars")" -gt 20 ] || fail "--variables printed $(wc -l <"$TMP/vars") lines"
cmp -s "$TMP/readme-vars" "$TMP/vars" ||
    fail "README.md's variable table differs from backoff --variables (sh docs/readme-variables.sh rewrites it: $(diff "$TMP/readme-vars" "$TMP/vars" | head -3 | tr '\n' ' '))"
MAN="$(dirname "$BO")/backoff.1"
[ -s "$MAN" ] || fail "the man page $MAN was not built"
for k in $("$BO" --print-config | cut -d= -f1); do
    grep -q "^| \`$k\` |" "$TMP/vars" || fail "--variables lacks $k"
    grep -q "^\.B $k\$" "$MAN" || fail "the man page lacks $k"
done
if command -v groff >/dev/null 2>&1; then
    w=$(groff -man -ww -z "$MAN" 2>&1) || true
    [ -z "$w" ] || fail "groff warns about the man page: $w"
fi
rc=0; "$BO" -p bogus -- true 2>/dev/null || rc=$?
[ $rc -eq 2 ] || fail "bad -p: exit $rc, expected 2"

note "installed layout: PREFIX/bin/backoff finds PREFIX/lib/backoff/libbackoff.so"
mkdir -p "$TMP/prefix/bin" "$TMP/prefix/lib/backoff"
cp "$BO" "$TMP/prefix/bin/backoff"
cp "$LIB" "$TMP/prefix/lib/backoff/libbackoff.so"
pre=$(cd / && env -u LD_PRELOAD "$TMP/prefix/bin/backoff" -- sh -c 'printf %s "$LD_PRELOAD"')
[ "$pre" = "$(cd "$TMP/prefix/lib/backoff" && pwd -P)/libbackoff.so" ] || fail "installed layout: LD_PRELOAD is '$pre'"
echo "ok"
