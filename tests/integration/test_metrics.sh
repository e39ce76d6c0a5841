#!/bin/sh
# The host-wide counters and gauges, read by real parsers.
#
# Several `backoff -- curl` processes, some throttled, run against three
# destinations: a token bucket (429 with Retry-After), a one-slot cap that
# answers 503, and a port nobody listens on (no connection; the retry budget
# holds the later calls' retries back).  The bucket and the cap hold the first
# calls at their gate (ratelimit-server --gate) until all of them are there,
# then admit them at one instant: 4 calls on a bucket of 3, 3 on a cap of
# one, so that both throttle whatever the machine's speed (12 curls started
# 4 at a time once never outran a 10/s bucket on a busy machine).  A python3
# program connects to a UNIX
# socket whose path holds a quote, a backslash, a newline and a byte that is
# not UTF-8, and curl is given a URL with a password and a query.  Then:
#   - `backoff --status --format=openmetrics` parses with
#     python3-prometheus-client's OpenMetrics parser, and every counter is
#     the sum of the processes' BACKOFF_STATS objects (wait within a
#     millisecond a process: each process rounds its own down), with the
#     counters there after the processes ended; the same figures in the
#     prometheus and json forms; `promtool check metrics` passes the
#     prometheus form; the UNIX path comes back exactly (U+FFFD for the
#     byte); no password, no query;
#   - BACKOFF_METRICS_FILE: written 0600 (BACKOFF_METRICS_MODE=0644 makes it
#     0644), passes promtool, rewritten while two loadgen processes call for
#     2.5 s or more (watched from before they start until they end: at least
#     twice) but never twice within a second, and a process that comes a
#     second after the last rewrite brings it up to date; a real
#     prometheus-node-exporter with the textfile collector serves the file's
#     samples, typed, on its /metrics;
#   - `backoff --reset` zeroes them; a bad --format is one line and exit 2;
#     BACKOFF_SHARE=process is not counted and writes no file;
#   - docs/WATCHING.md's alert rule passes `promtool check rules`, and `promtool
#     test rules` shows it fires at 20% throttled for 5 minutes, not at 5%.
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3
[ -f "$BUILD/libbackoff.so" ] && [ -x "$BUILD/backoff" ] && [ -x "$BUILD/loadgen" ] ||
    fail "build libbackoff.so, backoff and loadgen first"
command -v curl >/dev/null || fail "curl is not installed"
command -v promtool >/dev/null || fail "promtool is not installed (Debian: prometheus)"
NODE_EXPORTER=$(command -v prometheus-node-exporter || command -v node_exporter) ||
    fail "node_exporter is not installed (Debian: prometheus-node-exporter)"
$PY -c 'import prometheus_client.openmetrics.parser' 2>/dev/null ||
    fail "python3-prometheus-client is not installed"

BO=$BUILD/backoff
TEXT=$TMP/textfile
mkdir -p "$TEXT"
MFILE=$TEXT/backoff.prom
STATS=$TMP/stats.json
free_port() { $PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# ---- the run: several processes, some throttled ---------------------------
start_server bucket --rate 10 --burst 3 --gate
P429=$PORT BUCKET_PID=$SERVER_PID
start_server cap --max-busy 1 --service-ms 150 --reject-status 503 --gate
P503=$PORT CAP_PID=$SERVER_PID
PNONE=$(free_port)

# gated NAME PID N: once the server NAME (PID) holds N requests at its gate,
# opens it: they are admitted at one instant.
gated() {
    wait_for "$TMP/$1.err" "^ratelimit-server: gate: $3 held\$" 60
    kill -USR1 "$2"
}

export BACKOFF_STATS="$STATS" BACKOFF_METRICS_FILE="$MFILE"
# 12 calls 4 at a time on the bucket (the first 4 at once: one at least is
# refused), one with a password and a query
seq 1 12 | setsid timeout -k 2 90 xargs -P 4 -I{} "$BO" -- \
    curl -s -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$P429/item/{}" \
    >"$TMP/bucket.codes" &
XARGS=$!
PIDS="$PIDS $XARGS"
gated bucket "$BUCKET_PID" 4
wait "$XARGS" || fail "the bucket's curls failed or timed out"
setsid timeout -k 2 20 "$BO" -- curl -s -o /dev/null \
    "http://agent:hunter2@127.0.0.1:$P429/item/99?token=s3cret" || fail "curl with a password failed"
# 6 calls 3 at a time on the 503 cap (the first 3 at once: two are refused)
seq 1 6 | setsid timeout -k 2 90 xargs -P 3 -I{} "$BO" -- \
    curl -s -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$P503/item/{}" \
    >"$TMP/cap.codes" &
XARGS=$!
PIDS="$PIDS $XARGS"
gated cap "$CAP_PID" 3
wait "$XARGS" || fail "the cap's curls failed or timed out"
# 3 calls one after another where nobody listens (curl 7: kind connect); the
# first spends the retry budget's reserve, the later ones' retries beyond it
# go one probe at a time, 20 ms, then 40 ms apart: the third waits for its
# turn (a budget delay)
for i in 1 2 3; do
    BACKOFF_POLICY=fixed BACKOFF_MAX_ATTEMPTS=4 BACKOFF_BASE_MS=20 setsid timeout -k 2 20 "$BO" -- \
        curl -s -o /dev/null "http://127.0.0.1:$PNONE/item/$i" && fail "a curl to port $PNONE connected"
done
# a UNIX socket with a label to escape: quote, backslash, newline, a byte not UTF-8
cat >"$TMP/unix.py" <<'EOF'
import os, socket, sys
path = os.fsencode(sys.argv[1]) + b'/a"b\\c\nd\xff'
srv = socket.socket(socket.AF_UNIX)
srv.bind(path)
srv.listen(1)
cli = socket.socket(socket.AF_UNIX)
cli.connect(path)
print(repr(("unix:" + os.fsdecode(path)).encode("utf-8", "surrogateescape")))
EOF
setsid timeout -k 2 20 env LD_PRELOAD="$BUILD/libbackoff.so" $PY "$TMP/unix.py" "$TMP" \
    >"$TMP/unix.key" || fail "the UNIX socket program failed"
unset BACKOFF_STATS BACKOFF_METRICS_FILE

[ "$(grep -c '^200$' "$TMP/bucket.codes")" = 12 ] || fail "bucket: $(tr '\n' ' ' <"$TMP/bucket.codes")"
# 12 + 1 + 6 + 3 curls and the python3 program
[ "$(grep -c . "$STATS")" = 23 ] || fail "$(grep -c . "$STATS") BACKOFF_STATS objects, expected 23"

"$BO" --status --format=openmetrics >"$TMP/om.txt" || fail "--status --format=openmetrics failed"
"$BO" --status --format=prometheus >"$TMP/prom.txt" || fail "--status --format=prometheus failed"
"$BO" --status --format=json >"$TMP/status.json" || fail "--status --format=json failed"
promtool check metrics <"$TMP/prom.txt" >"$TMP/promtool.out" 2>&1 ||
    fail "promtool check metrics: $(cat "$TMP/promtool.out")"

# The parsers, and the counters against the sum of BACKOFF_STATS.
cat >"$TMP/check.py" <<'EOF'
import ast, json, sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_parse
from prometheus_client.parser import text_string_to_metric_families as prom_parse

tmp, ports = sys.argv[1], sys.argv[2:]
def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)

def samples(families):
    out, types = {}, {}
    for f in families:
        types[f.name] = f.type
        for s in f.samples:
            key = (s.name, tuple(sorted(s.labels.items())))
            if key in out:
                fail("sample %r twice" % (key,))
            out[key] = s.value
    return out, types

om, om_types = samples(om_parse(open(tmp + "/om.txt").read()))
prom, prom_types = samples(prom_parse(open(tmp + "/prom.txt").read()))
def still(d):  # the age moves between the two reads
    return {k: v for k, v in d.items() if k[0] != "backoff_last_throttle_age_seconds"}
if still(om) != still(prom):
    fail("openmetrics and prometheus forms differ: %r" % (set(om.items()) ^ set(prom.items()),))
counters = ["calls", "attempts", "retries", "throttled", "failed", "gave_up", "budget_delayed",
            "wait_seconds"]
for c in counters:
    if om_types.get("backoff_" + c) != "counter":
        fail("backoff_%s is %r in OpenMetrics, not a counter" % (c, om_types.get("backoff_" + c)))
for g in ["window", "in_flight", "processes", "last_throttle_age_seconds"]:
    if om_types.get("backoff_" + g) != "gauge":
        fail("backoff_%s is not a gauge" % g)

def total(name, **want):
    return sum(v for (n, labels), v in om.items() if n == name and
               all(dict(labels).get(k) == w for k, w in want.items()))

stats = [json.loads(l) for l in open(tmp + "/stats.json")]
def ssum(k):
    return sum(o[k] for o in stats)
for key, name in [("calls", "calls"), ("attempts", "attempts"), ("retries", "retries"),
                  ("failed", "failed"), ("gave_up", "gave_up"),
                  ("budget_delayed", "budget_delayed")]:
    got = total("backoff_%s_total" % name)
    if got != ssum(key):
        fail("backoff_%s_total is %s, the processes' BACKOFF_STATS say %s" % (name, got, ssum(key)))
thr = sum(total("backoff_throttled_total", kind=k) for k in ("429", "503", "504"))
if thr != ssum("throttled"):
    fail("throttled 429+503+504 is %s, BACKOFF_STATS say %s" % (thr, ssum("throttled")))
wait_ms = total("backoff_wait_seconds_total") * 1000
if not (ssum("wait_ms") - 1 <= wait_ms <= ssum("wait_ms") + len(stats) + 1):
    fail("waited %.3f ms host-wide, %s ms in BACKOFF_STATS (%d processes)" %
         (wait_ms, ssum("wait_ms"), len(stats)))
p429, p503, pnone = ("http://127.0.0.1:" + p for p in ports)
need = [(total("backoff_throttled_total", destination=p429, kind="429"), "429s on the bucket"),
        (total("backoff_throttled_total", destination=p503, kind="503"), "503s on the cap"),
        (total("backoff_throttled_total", destination=pnone, kind="connect"), "refused connects"),
        (total("backoff_budget_delayed_total", destination=pnone), "budget delays"),
        (total("backoff_wait_seconds_total"), "time waited")]
for got, what in need:
    if not got > 0:
        fail("no %s counted: the run throttled nothing, this test proves nothing" % what)
# the processes are gone; their counts stay
if total("backoff_processes", state="busy") != 0 or total("backoff_in_flight") != 0:
    fail("processes or attempts still counted in flight after every process ended")
if total("backoff_calls_total", destination=p429) != 13:
    fail("the bucket's calls: %s, expected 13" % total("backoff_calls_total", destination=p429))
if om.get(("backoff_last_throttle_timestamp_seconds", (("destination", p429),)), 0) < 1.7e9:
    fail("no last-throttle time for the bucket")
# the UNIX socket's key, escaped and read back exactly (U+FFFD for the byte)
key = ast.literal_eval(open(tmp + "/unix.key").read()).replace(b"\xff", "\ufffd".encode()).decode()
if ("backoff_calls_total", (("destination", key),)) not in om:
    fail("no destination %r among %r" % (key, sorted({dict(l)["destination"] for _, l in om})))
# json: the same counts
j = json.load(open(tmp + "/status.json"))
if j.get("scope") != "host" or "BACKOFF_SHARE=process" not in j.get("not_counted", ""):
    fail("json: no scope or note: %r" % {k: j.get(k) for k in ("scope", "not_counted")})
for d in j["destinations"]:
    for c in ["calls", "attempts", "retries", "failed", "gave_up", "budget_delayed"]:
        if d[c] != total("backoff_%s_total" % c, destination=d["destination"]):
            fail("json %s of %s: %s" % (c, d["destination"], d[c]))
    for k, v in d["throttled"].items():
        if v != total("backoff_throttled_total", destination=d["destination"], kind=k):
            fail("json throttled %s of %s: %s" % (k, d["destination"], v))
if len(j["destinations"]) != len({dict(l)["destination"] for _, l in om}):
    fail("json and openmetrics list different destinations")
print("counters = sum of %d BACKOFF_STATS: calls %d attempts %d retries %d throttled %d "
      "(429 %d, 503 %d, connect %d) gave_up %d budget_delayed %d wait %.3f s" %
      (len(stats), ssum("calls"), ssum("attempts"), ssum("retries"), ssum("throttled"),
       total("backoff_throttled_total", kind="429"), total("backoff_throttled_total", kind="503"),
       total("backoff_throttled_total", kind="connect"), ssum("gave_up"),
       ssum("budget_delayed"), wait_ms / 1000))
EOF
$PY "$TMP/check.py" "$TMP" "$P429" "$P503" "$PNONE" >"$TMP/check.out" 2>&1 ||
    fail "$(cat "$TMP/check.out")"
note "$(cat "$TMP/check.out")"
for f in "$TMP/om.txt" "$TMP/prom.txt" "$TMP/status.json" "$MFILE"; do
    ! grep -q 'hunter2\|s3cret\|agent' "$f" || fail "$f shows the URL's password or query"
done

# ---- BACKOFF_METRICS_FILE --------------------------------------------------
[ -f "$MFILE" ] || fail "no $MFILE"
[ "$(stat -c %a "$MFILE")" = 600 ] || fail "$MFILE is mode $(stat -c %a "$MFILE"), not 600"
promtool check metrics <"$MFILE" >"$TMP/promtool.out" 2>&1 ||
    fail "promtool check metrics $MFILE: $(cat "$TMP/promtool.out")"
# two processes calling for 2.5 s or more (loadgen's open-loop rate: a slow
# machine makes it longer, never shorter), watched from before they start
# until they end: the file changes, never twice within a second
start_server open
cat >"$TMP/poll.py" <<'EOF'
import os, sys, time
path, ready, stop = sys.argv[1:4]
until = time.monotonic() + 120
seen, changes = None, []
while time.monotonic() < until and not os.path.exists(stop):
    try:
        ino = os.stat(path).st_ino
    except FileNotFoundError:
        ino = None
    if ino != seen:
        if seen is not None:
            changes.append(time.monotonic())
        seen = ino
    if not os.path.exists(ready):
        with open(ready, "w") as f:
            f.write("ready\n")
    time.sleep(0.005)
gaps = [b - a for a, b in zip(changes, changes[1:])]
print(len(changes), "%.3f" % min(gaps) if gaps else "-")
EOF
$PY "$TMP/poll.py" "$MFILE" "$TMP/poll.ready" "$TMP/poll.stop" >"$TMP/poll.out" &
POLL=$!
PIDS="$PIDS $POLL"
wait_for "$TMP/poll.ready" '^ready$' 30
LOADGENS=""
for i in 1 2; do
    BACKOFF_METRICS_FILE="$MFILE" setsid timeout -k 2 20 env LD_PRELOAD="$BUILD/libbackoff.so" \
        "$BUILD/loadgen" --url "http://127.0.0.1:$PORT/item/{n}" --requests 1000 --rate 400 \
        --threads 2 >"$TMP/loadgen$i.out" 2>&1 &
    LOADGENS="$LOADGENS $!"
done
PIDS="$PIDS $LOADGENS"
t0=$(date +%s%3N)
for p in $LOADGENS; do wait "$p" || fail "a loadgen failed: $(cat "$TMP"/loadgen*.out)"; done
t1=$(date +%s%3N)
touch "$TMP/poll.stop"
wait $POLL || fail "the file's watcher failed"
set -- $(cat "$TMP/poll.out")
[ "$1" -ge 2 ] || fail "the file changed $1 time(s) in $((t1 - t0)) ms of calls: not rewritten while they ran"
# claims are a second apart; a writer descheduled between its claim and its
# rename can narrow the gap seen here, never to the milliseconds of no limit
awk -v g="$2" 'BEGIN { exit !(g >= 0.75) }' ||
    fail "the file was rewritten twice within $2 s (at most once a second)"
note "metrics file: $1 rewrites in $((t1 - t0)) ms of two processes' calls, at least $2 s apart"
# a second after the last rewrite, one more call brings the file up to date (and 0644)
sleep 1.1
BACKOFF_METRICS_FILE="$MFILE" BACKOFF_METRICS_MODE=0644 setsid timeout -k 2 20 "$BO" -- \
    curl -s -o /dev/null "http://127.0.0.1:$PORT/item/1" || fail "the last curl failed"
[ "$(stat -c %a "$MFILE")" = 644 ] || fail "BACKOFF_METRICS_MODE=0644 gave mode $(stat -c %a "$MFILE")"
"$BO" --status --format=prometheus >"$TMP/prom2.txt"
grep '_total{' "$TMP/prom2.txt" | sort >"$TMP/live.counters"
grep '_total{' "$MFILE" | sort >"$TMP/file.counters"
cmp -s "$TMP/live.counters" "$TMP/file.counters" ||
    fail "the file's counters are not the shared state's: $(diff "$TMP/live.counters" "$TMP/file.counters" | head -4)"

# node_exporter's textfile collector serves them, typed
NE_PORT=$(free_port)
setsid "$NODE_EXPORTER" --web.listen-address="127.0.0.1:$NE_PORT" --collector.disable-defaults \
    --collector.textfile --collector.textfile.directory="$TEXT" >"$TMP/ne.log" 2>&1 &
PIDS="$PIDS $!"
i=0
until curl -s -o "$TMP/ne.txt" "http://127.0.0.1:$NE_PORT/metrics"; do
    i=$((i + 1))
    [ $i -gt 100 ] && fail "node_exporter did not answer within 10 s: $(tail -3 "$TMP/ne.log")"
    sleep 0.1
done
grep -q '^node_textfile_scrape_error 0$' "$TMP/ne.txt" ||
    fail "node_exporter could not read the file: $(grep textfile "$TMP/ne.txt")"
grep -q '^# TYPE backoff_calls_total counter$' "$TMP/ne.txt" ||
    fail "node_exporter does not serve backoff_calls_total as a counter"
cat >"$TMP/same.py" <<'EOF'
import sys
from prometheus_client.parser import text_string_to_metric_families as parse
def backoff(path):
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in parse(open(path).read()) for s in f.samples if s.name.startswith("backoff_")}
served, written = backoff(sys.argv[1]), backoff(sys.argv[2])
if not written or served != written:
    print("node_exporter serves %d backoff samples, the file has %d; differing: %r" %
          (len(served), len(written), sorted(set(served.items()) ^ set(written.items()))[:4]))
    sys.exit(1)
print(len(served))
EOF
n=$($PY "$TMP/same.py" "$TMP/ne.txt" "$MFILE") || fail "$n"
note "node_exporter serves the file's $n backoff samples"

# ---- --reset, bad --format, BACKOFF_SHARE=process ---------------------------
"$BO" --reset >/dev/null || fail "--reset failed"
"$BO" --status --format=json >"$TMP/reset.json"
grep -q '"destinations":\[\]' "$TMP/reset.json" || fail "--reset left: $(cat "$TMP/reset.json")"
setsid timeout -k 2 20 "$BO" -- curl -s -o /dev/null "http://127.0.0.1:$PORT/item/2" || fail "curl failed"
"$BO" --status --format=openmetrics >"$TMP/om3.txt"
grep -q "^backoff_calls_total{destination=\"http://127.0.0.1:$PORT\"} 1\$" "$TMP/om3.txt" ||
    fail "after --reset and one call: $(grep calls_total "$TMP/om3.txt")"
rc=0
"$BO" --status --format=xml >"$TMP/bad.out" 2>"$TMP/bad.err" || rc=$?
[ $rc = 2 ] && [ "$(wc -l <"$TMP/bad.err")" = 1 ] && [ ! -s "$TMP/bad.out" ] ||
    fail "--format=xml: exit $rc, $(cat "$TMP/bad.err")"
grep -q -- '--format="xml" is not valid: expected table, openmetrics, prometheus or json' \
    "$TMP/bad.err" || fail "--format=xml said: $(cat "$TMP/bad.err")"
start_server other
BACKOFF_SHARE=process BACKOFF_METRICS_FILE="$TMP/process.prom" setsid timeout -k 2 20 "$BO" -- \
    curl -s -o /dev/null "http://127.0.0.1:$PORT/item/3" || fail "curl under BACKOFF_SHARE=process failed"
"$BO" --status --format=openmetrics >"$TMP/om4.txt"
! grep -q "127.0.0.1:$PORT\"" "$TMP/om4.txt" || fail "a BACKOFF_SHARE=process destination is counted"
grep -q '^# HELP backoff_calls .*processes under BACKOFF_SHARE=process are not counted' "$TMP/om4.txt" ||
    fail "the output does not say that BACKOFF_SHARE=process is not counted"
[ ! -e "$TMP/process.prom" ] || fail "BACKOFF_SHARE=process wrote a metrics file"

# ---- the alert rule of docs/WATCHING.md --------------------------------------
awk '/^<!-- alert rule:/ { on = 1; next } on && /^```yaml$/ { next } on && /^```$/ { exit } on { print }' \
    "$TOP/docs/WATCHING.md" >"$TMP/rules.yml"
grep -q 'alert: BackoffThrottled' "$TMP/rules.yml" || fail "no alert rule found in docs/WATCHING.md"
promtool check rules "$TMP/rules.yml" >"$TMP/rules.out" 2>&1 || fail "promtool check rules: $(cat "$TMP/rules.out")"
cat >"$TMP/rules_test.yml" <<EOF
rule_files: [$TMP/rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'backoff_attempts_total{instance="h",destination="http://hot:80"}'
        values: '0+100x15'
      - series: 'backoff_throttled_total{instance="h",destination="http://hot:80",kind="429"}'
        values: '0+20x15'
      - series: 'backoff_attempts_total{instance="h",destination="http://calm:80"}'
        values: '0+100x15'
      - series: 'backoff_throttled_total{instance="h",destination="http://calm:80",kind="503"}'
        values: '0+5x15'
    alert_rule_test:
      - eval_time: 4m
        alertname: BackoffThrottled
        exp_alerts: []
      - eval_time: 12m
        alertname: BackoffThrottled
        exp_alerts:
          - exp_labels: {severity: warning, instance: h, destination: "http://hot:80"}
            exp_annotations:
              summary: "http://hot:80: 20% of attempts throttled on h"
EOF
promtool test rules "$TMP/rules_test.yml" >"$TMP/rules_test.out" 2>&1 ||
    fail "promtool test rules: $(cat "$TMP/rules_test.out")"
note "docs/WATCHING.md's alert: promtool check rules and test rules pass (fires at 20%, not at 5%)"
echo "ok"
