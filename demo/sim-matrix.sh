#!/bin/sh
# The robustness matrix in virtual time (backoff-sim --scenario
# matrix), judged against the default policy's targets:
#   - no call gives up with the default settings;
#   - threads of one process <= 1.25 attempts per request, fresh processes <= 2.2;
#   - completion <= 1.05x the fastest other policy that gave up no call, and
#     for threads <= 1.15x the optimum where one is defined;
#   - rejected attempts in any one second <= the server's capacity per second.
# Fresh processes are judged as they run by default (BACKOFF_SHARE=host: the
# host-wide state that the processes before them left); the -alone cells
# (BACKOFF_SHARE=process, every process from nothing) are shown, not judged.
# Usage: sim-matrix.sh [--markdown] [--check] [--policy LIST] [--tsv FILE]
#   --tsv FILE  judge a saved `backoff-sim --scenario matrix` output instead of running it
#   --check     print only the failed targets; exit 1 if any
#   --markdown  the aimd table and a per-cell summary of every policy, for docs/RESULTS-matrix.md
set -eu
BUILD=${BUILD:-build}
SIM="$BUILD/backoff-sim"
[ -x "$SIM" ] || { echo "backoff: $SIM is missing: run make $SIM" >&2; exit 1; }
mode=table
pol=
tsv=
while [ $# -gt 0 ]; do
    case $1 in
    --markdown) mode=markdown ;;
    --check) mode=check ;;
    --policy) pol=$2; shift ;;
    --tsv) tsv=$2; shift ;;
    *) echo "sim-matrix.sh: $1 is not a known argument: expected --markdown, --check, --policy LIST or --tsv FILE" >&2; exit 2 ;;
    esac
    shift
done
TMP=$(mktemp "${TMPDIR:-/tmp}/backoff-matrix.XXXXXX")
trap 'rm -f "$TMP"' EXIT INT TERM
if [ -n "$tsv" ]; then cp "$tsv" "$TMP"
elif [ -n "$pol" ]; then "$SIM" --scenario matrix --policy "$pol" >"$TMP"
else "$SIM" --scenario matrix >"$TMP"; fi
awk -F'\t' -v mode="$mode" '
NR == 1 { next }
{
    cell = $1 "|" $2 "|" $3
    if (!(cell in seen)) { seen[cell] = 1; order[++n] = cell }
    comp = ($5 == "never") ? 1e18 : $5 + 0
    if ($4 == "aimd") { a_comp[cell] = comp; a_row[cell] = $0; a_ratio[cell] = $7; a_att[cell] = $8;
                        a_gave[cell] = $9; a_peak[cell] = $10; a_frac[cell] = $11;
                        a_own[cell] = ($12 == "") ? "-" : sprintf("%.2f", $12) }
    else if ($9 == 0 && (!(cell in best) || comp < best[cell])) { best[cell] = comp; bestp[cell] = $4 }
}
END {
    fails = 0
    if (mode == "markdown") {
        print "| server | hint | clients | completion / optimum | attempts per request | gave up | most rejected in 1 s (x capacity) | fastest other policy without give-ups | aimd / it | attempts per request, program retrying 3x on top |"
        print "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    } else if (mode == "table") {
        printf "%-10s %-8s %-11s %8s %8s %6s %12s  %-20s %7s %s\n", "server", "hint", "clients", "ratio", "att/req", "gaveup", "rej/s(xcap)", "fastest-other", "vs", "verdict"
    }
    for (i = 1; i <= n; i++) {
        c = order[i]; split(c, k, "|")
        if (!(c in a_row)) continue
        threads = (k[3] ~ /^threads/)
        alone = (k[3] ~ /-alone$/)
        why = ""
        if (a_gave[c] > 0) why = why " gave-up"
        if (threads && a_att[c] > 1.25) why = why " attempts>1.25"
        if (!threads && a_att[c] > 2.2) why = why " attempts>2.2"
        vs = "-"
        if (c in best) { vs = sprintf("%.3f", a_comp[c] / best[c]); if (a_comp[c] > 1.05 * best[c]) why = why " slower>1.05x" }
        if (threads && a_ratio[c] != "-" && a_ratio[c] > 1.15) why = why " ratio>1.15"
        if (a_frac[c] != "-" && a_frac[c] > 1.0) why = why " rejections>capacity"
        verdict = why == "" ? "ok" : "FAIL:" why
        mark = why == "" ? "" : " **" why " **"
        if (alone) {
            verdict = "not judged (share=process):" (why == "" ? " ok" : why)
            mark = " (not judged" (why == "" ? ")" : ":" why ")")
            why = ""
        }
        if (why != "") fails++
        other = (c in best) ? sprintf("%s %.3f s", bestp[c], best[c]) : "none"
        if (mode == "markdown")
            printf "| %s | %s | %s | %s | %.2f | %d | %d (%s) | %s | %s%s | %s |\n", k[1], k[2], k[3], a_ratio[c], a_att[c], a_gave[c], a_peak[c], a_frac[c], other, vs, mark, a_own[c]
        else if (mode == "table")
            printf "%-10s %-8s %-11s %8s %8.3f %6d %5d (%5s)  %-20s %7s %s\n", k[1], k[2], k[3], a_ratio[c], a_att[c], a_gave[c], a_peak[c], a_frac[c], other, vs, verdict
        else if (why != "")
            printf "%s %s %s:%s\n", k[1], k[2], k[3], why
    }
    if (mode != "markdown") printf "%d cell(s) miss a target\n", fails
    if (mode == "check" && fails > 0) exit 1
}' "$TMP"
