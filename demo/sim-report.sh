#!/bin/sh
# `make sim`: each article's comparison, reproduced by backoff-sim in virtual
# time, as readable tables (a benchmark, not a test: the regression checks
# live in tests/integration/test_sim_articles.sh).  With --markdown, the same
# figures as markdown tables for docs/RESULTS.md.  Seed 1 throughout.
set -eu
BUILD=${BUILD:-build}
SIM="$BUILD/backoff-sim"
[ -x "$SIM" ] || { echo "backoff: $SIM is missing: run make $SIM" >&2; exit 1; }
md=0
[ "${1:-}" = "--markdown" ] && md=1
TMP=$(mktemp -d "${TMPDIR:-/tmp}/backoff-sim-report.XXXXXX")
trap 'rm -rf "$TMP"' EXIT INT TERM

# The BACKOFF_* settings of the caller still apply (that is the point of the
# simulator); say so when there are any.
if env | grep -q '^BACKOFF_'; then
    echo "note: BACKOFF_* variables set in this environment change the results:"
    env | grep '^BACKOFF_' | sed 's/^/  /'
fi

JITTERED="none,exponential,full-jitter,equal-jitter,decorrelated-jitter"

# tsv_to_md FILE COLUMNS...: a markdown table of the chosen columns.
tsv_to_md() {
    f=$1; shift
    awk -F'\t' -v cols="$*" '
        BEGIN { n = split(cols, want, " ") }
        NR == 1 { for (i = 1; i <= NF; i++) idx[$i] = i
                  line = "|"; sep = "|"
                  for (k = 1; k <= n; k++) { line = line " " want[k] " |"; sep = sep " --- |" }
                  print line; print sep; next }
        { line = "|"; for (k = 1; k <= n; k++) line = line " " $(idx[want[k]]) " |"; print line }' "$f"
}

# contention_pivot: one row per N, calls and completion time per strategy.
contention_pivot() {
    awk -F'\t' -v md="$md" '
        FNR == 1 { for (i = 1; i <= NF; i++) idx[$i] = i; next }
        { n = $(idx["clients"]); p = $2; if (FILENAME ~ /shared/) p = p " (shared)"
          if (!(p in seenp)) { seenp[p] = 1; pols[++np] = p }
          if (!(n in seenn)) { seenn[n] = 1; ns[++nn] = n }
          cell[n, p] = sprintf("%.0f / %.2fs", $(idx["calls"]), $(idx["completion_s"])) }
        END {
            if (md) {
                line = "| N |"; sep = "| --- |"
                for (k = 1; k <= np; k++) { line = line " " pols[k] " |"; sep = sep " --- |" }
                print line; print sep
                for (j = 1; j <= nn; j++) { line = "| " ns[j] " |"
                    for (k = 1; k <= np; k++) line = line " " cell[ns[j], pols[k]] " |"
                    print line }
            } else {
                printf "%5s", "N"; for (k = 1; k <= np; k++) printf "  %20s", pols[k]; printf "\n"
                for (j = 1; j <= nn; j++) { printf "%5s", ns[j]
                    for (k = 1; k <= np; k++) printf "  %20s", cell[ns[j], pols[k]]; printf "\n" }
            }
        }' "$@"
}

section() {
    echo
    if [ "$md" = 1 ]; then echo "### $1"; else echo "######## $1"; fi
    echo
}

# --- 000: burst -------------------------------------------------------------
section "burst (000): 2000 ops at 1000/s, max_busy 50, 500 ms success, 50 ms rejection"
if [ "$md" = 1 ]; then
    "$SIM" --scenario burst --policy all >"$TMP/burst.tsv"
    echo "000 published: exponential 48 s / 17,392 attempts; AIMD 25 s / 2,085; optimum 20 s."
    echo
    tsv_to_md "$TMP/burst.tsv" policy attempts wasted_pct completion_s ratio p50_s p99_s
else
    "$SIM" --scenario burst --policy all --format table
fi

# --- 001: contention ---------------------------------------------------------
section "contention (001): calls / completion time vs N, mean of 100 runs"
for n in 10 25 50 75 100; do
    "$SIM" --scenario contention --independent --clients "$n" --policy "$JITTERED" >"$TMP/cont_ind_$n.tsv"
    "$SIM" --scenario contention --clients "$n" --policy aws-adaptive,aimd-000,aimd >"$TMP/cont_shared_$n.tsv"
done
echo "independent clients (the article's strategies), then aws-adaptive and aimd with the"
echo "clients as threads sharing one destination (as under the shim); a stale write is a throttle."
echo
contention_pivot "$TMP"/cont_ind_10.tsv "$TMP"/cont_ind_25.tsv "$TMP"/cont_ind_50.tsv \
    "$TMP"/cont_ind_75.tsv "$TMP"/cont_ind_100.tsv "$TMP"/cont_shared_10.tsv \
    "$TMP"/cont_shared_25.tsv "$TMP"/cont_shared_50.tsv "$TMP"/cont_shared_75.tsv \
    "$TMP"/cont_shared_100.tsv

# --- 003: outage ---------------------------------------------------------------
section "outage (003): 1000 clients, server stopped 10 s at t=20 s, run to t=50 s"
"$SIM" --scenario outage --independent --policy fixed,gaussian-jitter,full-jitter >"$TMP/out_ind.tsv"
"$SIM" --scenario outage --policy aimd-000,aimd,responsive,aws-adaptive >"$TMP/out_shared.tsv"
echo "independent: fixed (100 ms) and 003's exponential (gaussian-jitter, factor e, jitter 0.1);"
echo "shared state (threads of one process): aimd, responsive, aws-adaptive.  recovery_s: from the server's return."
echo
if [ "$md" = 1 ]; then
    tail -n +2 "$TMP/out_shared.tsv" >>"$TMP/out_ind.tsv"
    tsv_to_md "$TMP/out_ind.tsv" policy recovery_s down_attempts_per_s peak_concurrency pre_rate post_rate attempts
else
    { cat "$TMP/out_ind.tsv"; tail -n +2 "$TMP/out_shared.tsv"; } |
        awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) idx[$i] = i }
            { printf "%-16s %10s %20s %17s %9s %10s %9s\n", $2, $(idx["recovery_s"]),
              $(idx["down_attempts_per_s"]), $(idx["peak_concurrency"]), $(idx["pre_rate"]),
              $(idx["post_rate"]), $(idx["attempts"]) }'
fi

# --- 002: pacing -----------------------------------------------------------------
section "pacing (002): one sequential client, 600 requests, token bucket 20/s burst 20"
if [ "$md" = 1 ]; then
    "$SIM" --scenario pacing --policy all >"$TMP/pacing.tsv"
    tsv_to_md "$TMP/pacing.tsv" policy attempts throttled throttled_pct completion_s ratio
else
    "$SIM" --scenario pacing --policy all --format table
fi

# --- fairness ------------------------------------------------------------------------
section "fairness: 4 independent clients, 500 ops each, one max_busy=50 server"
if [ "$md" = 1 ]; then
    "$SIM" --scenario fairness --policy full-jitter,decorrelated-jitter,thain,aws-adaptive,aimd-000,aimd >"$TMP/fair.tsv"
    tsv_to_md "$TMP/fair.tsv" policy jain completion_s ratio wasted_pct
else
    "$SIM" --scenario fairness --policy full-jitter,decorrelated-jitter,thain,aws-adaptive,aimd-000,aimd --format table
fi

# --- beyond the articles: the window against server sizes, room, capacity, hints ---
section "burst (000) against server sizes: ratio to the optimum / wasted attempts %"
echo "aimd cold (a fresh state) and warm (the state a first burst left, as the host keeps it),"
echo "aws-adaptive (AWS SDKs' adaptive mode), and the fastest other policy that completes."
echo
for n in 10 50 100 200 500 1000; do
    "$SIM" --scenario burst --policy all --max-busy "$n" >"$TMP/bs$n.tsv"
    "$SIM" --scenario burst --policy aimd --warm --max-busy "$n" >"$TMP/bsw$n.tsv"
done
awk -F'\t' -v md="$md" '
    FNR == 1 { for (i = 1; i <= NF; i++) idx[$i] = i; n = FILENAME; sub(/.*bsw?/, "", n); sub(/\.tsv$/, "", n)
               warm = (FILENAME ~ /bsw/); next }
    { pol = $(idx["policy"]); c = $(idx["completion_s"]); cell = sprintf("%s / %.2f%%", $(idx["ratio"]), $(idx["wasted_pct"]))
      if (warm) { w[n] = cell; next }
      if (pol == "aimd") a[n] = cell " (" c " s)"
      else if (pol == "aws-adaptive") aw[n] = cell " (" c " s)"
      else if (c != "never" && (!(n in best) || c + 0 < best[n])) { best[n] = c + 0; bp[n] = pol " " c " s" }
      if (!(n in seen)) { seen[n] = 1; ns[++k] = n } }
    END {
        if (md) { print "| slots | aimd cold | aimd warm | aws-adaptive | fastest other |"; print "| --- | --- | --- | --- | --- |" }
        else printf "%6s  %-26s %-16s %-26s %s\n", "slots", "aimd cold", "aimd warm", "aws-adaptive", "fastest other"
        for (j = 1; j <= k; j++) { s = ns[j]
            if (md) printf "| %s | %s | %s | %s | %s |\n", s, a[s], w[s], aw[s], bp[s]
            else printf "%6s  %-26s %-16s %-26s %s\n", s, a[s], w[s], aw[s], bp[s] } }' \
    "$TMP"/bs10.tsv "$TMP"/bs50.tsv "$TMP"/bs100.tsv "$TMP"/bs200.tsv "$TMP"/bs500.tsv "$TMP"/bs1000.tsv \
    "$TMP"/bsw10.tsv "$TMP"/bsw50.tsv "$TMP"/bsw100.tsv "$TMP"/bsw200.tsv "$TMP"/bsw500.tsv "$TMP"/bsw1000.tsv

section "room: 200 threads x 2,000 requests of 200 ms, never refused; quick requests behind held ones"
for w in cold warm; do
    "$SIM" --scenario room --policy none,aws-adaptive,aimd $([ $w = warm ] && echo --warm) >"$TMP/room-$w.tsv"
done
for shape in "20" "20 --warm" "20 --abandon" "20 --abandon --warm" "200"; do
    # shellcheck disable=SC2086
    "$SIM" --scenario room --held $shape --service-ms 10 --policy aimd >"$TMP/held.tsv"
    echo "$shape $(awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) idx[$i] = i; next } { print $(idx["held_wait_s"]) }' "$TMP/held.tsv")"
done >"$TMP/held.txt"
awk -F'\t' -v md="$md" 'FNR == 1 { for (i = 1; i <= NF; i++) idx[$i] = i; w = (FILENAME ~ /warm/); next }
    { r[$2, w] = $(idx["ratio"]); if (!($2 in s)) { s[$2] = 1; p[++k] = $2 } }
    END { if (md) { print "| policy | completion / their own pace, cold | warm |"; print "| --- | --- | --- |" }
          for (j = 1; j <= k; j++) if (md) printf "| %s | %s | %s |\n", p[j], r[p[j], 0], r[p[j], 1]
                                   else printf "%-14s cold %s  warm %s\n", p[j], r[p[j], 0], r[p[j], 1] }' \
    "$TMP/room-cold.tsv" "$TMP/room-warm.tsv"
echo
awk -v md="$md" 'BEGIN { if (md) { print "| held (N, shape) | aimd: longest wait of a quick request, s |"; print "| --- | --- |" } }
    { w = $NF; $NF = ""; if (md) printf "| %s| %s |\n", $0, w; else printf "held %-22s %s s\n", $0, w }' "$TMP/held.txt"

section "capacity: 200 threads, the capacity halved from 10 s to 20 s, then back"
for l in cap bucket; do
    "$SIM" --scenario capacity --limiter $l --policy full-jitter,aws-adaptive,aimd-000,aimd >"$TMP/cap-$l.tsv"
done
awk -F'\t' -v md="$md" 'FNR == 1 { for (i = 1; i <= NF; i++) idx[$i] = i; l = FILENAME; sub(/.*cap-/, "", l); sub(/\.tsv$/, "", l); next }
    { row = sprintf("%s|%s|%s|%s|%s|%s|%s|%s|%s", l, $2, $(idx["settle_s"]), $(idx["extra_rej"]), $(idx["window"]),
                    $(idx["up_s"]), $(idx["use_1"]), $(idx["use_2"]), $(idx["use_3"]))
      rows[++k] = row }
    END { if (md) { print "| limiter | policy | settled after the halving, s | refusals until then | in flight at it | 90% of the doubled capacity used after, s | use 1st / 2nd / 3rd third |"
                    print "| --- | --- | --- | --- | --- | --- | --- |" }
          for (j = 1; j <= k; j++) { split(rows[j], f, "|")
              if (md) printf "| %s | %s | %s | %s | %s | %s | %s / %s / %s |\n", f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9]
              else printf "%-7s %-14s settle %5s s  extra %5s  window %4s  up %5s s  use %s %s %s\n", f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9] } }' \
    "$TMP/cap-cap.tsv" "$TMP/cap-bucket.tsv"

section "hints that prove wrong: a window of 20 per 2 s told OpenAI's way in whole seconds, 8 x 100"
for ph in 0 0.4 0.9 1.4 1.6 1.8; do
    "$SIM" --scenario headers --limiter window --window-requests 20 --window-s 2 --ops 100 --clients 8 \
        --dialect openai-s --retry-after-form none --phase-s "$ph" --policy aimd,aws-adaptive >"$TMP/oai.tsv"
    awk -F'\t' -v ph="$ph" 'NR == 1 { for (i = 1; i <= NF; i++) idx[$i] = i; next }
        { printf "%s %s %s %s %s\n", ph, $2, $(idx["throttled"]), $(idx["completion_s"]), $(idx["ratio"]) }' "$TMP/oai.tsv"
done >"$TMP/oai.txt"
awk -v md="$md" 'BEGIN { if (md) { print "| started into the window, s | policy | rejected | completion, s | / optimum |"; print "| --- | --- | --- | --- | --- |" } }
    { if (md) printf "| %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5
      else printf "phase %-4s %-13s rejected %3s  %6s s  %s x\n", $1, $2, $3, $4, $5 }' "$TMP/oai.txt"

section "down: 8 programs x 100 items through an outage (503, no hint); a lone call to a dead server"
echo "items failed / completion, s, for outages from the start of 5 and 20 s; a lone call to a"
echo "server that never comes back: attempts / s until its failure is handed back, alone and with"
echo "the program retrying it 3 times on its own (after 1, 2 and 4 s, as curl --retry 3)."
echo
for pol in aimd exponential full-jitter; do
    row="$pol"
    for d in 5 20; do
        row="$row $("$SIM" --scenario down --policy "$pol" --outage-for-s "$d" |
            awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) idx[$i] = i; next }
                { printf "%s/%s", $(idx["failed"]), $(idx["completion_s"]) }')"
    done
    for own in 0 3; do
        row="$row $("$SIM" --scenario down --policy "$pol" --clients 1 --ops 1 --outage-for-s 1000 \
            --program-retries "$own" |
            awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) idx[$i] = i; next }
                { printf "%s/%s", $(idx["attempts"]), $(idx["completion_s"]) }')"
    done
    echo "$row"
done >"$TMP/down.txt"
awk -v md="$md" 'BEGIN { if (md) { print "| policy | down 5 s: failed / s | down 20 s: failed / s | lone call: attempts / s | with 3 retries of its own |"; print "| --- | --- | --- | --- | --- |" }
                         else printf "%-12s %-20s %-20s %-22s %s\n", "policy", "down 5 s: failed/s", "down 20 s: failed/s", "lone call: attempts/s", "+ 3 own retries" }
    { split($2, a, "/"); split($3, b, "/"); split($4, c, "/"); split($5, e, "/")
      if (md) printf "| %s | %s / %s | %s / %s | %s / %s | %s / %s |\n", $1, a[1], a[2], b[1], b[2], c[1], c[2], e[1], e[2]
      else printf "%-12s %-20s %-20s %-22s %s\n", $1, a[1] " / " a[2], b[1] " / " b[2], c[1] " / " c[2], e[1] " / " e[2] }' "$TMP/down.txt"
