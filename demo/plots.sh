#!/bin/sh
# Draw the demo's PNG plots from the data files demo.sh left in $OUT.
set -eu
: "${OUT:?}" "${POLICIES:?}"
cd "$OUT"
for p in $POLICIES; do
    [ -s "rate-$p.dat" ] || continue
    gnuplot <<GP
set terminal png size 900,700 noenhanced
set output "rate-$p.png"
set multiplot layout 2,1 title "$p: requests per second at the server (burst, 5x time-scaled)"
set xlabel "time (s)"
set ylabel "requests/s"
set key top right
plot "rate-$p.dat" using 1:2 with lines lw 2 lc rgb "#2a9d3a" title "succeeded", \
     "rate-$p.dat" using 1:3 with lines lw 1 lc rgb "#d62728" title "rejected (429)"
set logscale y
set ylabel "requests/s (log)"
plot "rate-$p.dat" using 1:(\$2 > 0 ? \$2 : 1/0) with lines lw 2 lc rgb "#2a9d3a" title "succeeded", \
     "rate-$p.dat" using 1:(\$3 > 0 ? \$3 : 1/0) with lines lw 1 lc rgb "#d62728" title "rejected (429)"
unset multiplot
GP
done

# peers_panel: the gnuplot commands of the peers panel (summary.png's bottom row).
peers_panel() {
    cat <<GP
set origin 0, 0
set size 1, $lower
set title "real retry tools: 1 process x 40 items, bucket 10/s burst 3, Retry-After: 1 (green: plain client under backoff; dashed: the bucket's $popt s)"
set ylabel "seconds"
set yrange [0:$ptop]
set xtics rotate by 0
plot "peers.dat" using 1:(\$6 > 0 ? \$3 : 1/0):xtic(2) with boxes lc rgb "#228833", \
     "" using 1:(\$6 > 0 ? 1/0 : \$3):xtic(2) with boxes lc rgb "#888888", \
     "" using 1:(\$3 + ((\$5 > 0 ? 3 : 2) * 0.65 + 0.5) * $ptop / 11): \
        (sprintf("%.2f s\n%d req%s", \$3, \$4, \$5 > 0 ? sprintf("\n%d failed", \$5) : "")) with labels, \
     $popt with lines dt (8, 6) lw 2 lc rgb "black"
GP
}

# The main picture (summary.png): requests completed so far, one line per
# policy, against the optimum (the server's capacity, dashed): who finished
# first, and how straight the line is, shows at a glance.  Below it the
# attempts each policy spent per request beside the requests it failed (a
# policy that gives up spends few attempts: both together say what it cost),
# and, when the demo ran them (peers.tsv), the real retry tools on one
# process's 40 items against a token bucket.  The default policy (aimd) is
# drawn thickest.
i=0
done_cmd=""
for p in $POLICIES; do
    [ -s "rate-$p.dat" ] || continue
    i=$((i + 1))
    # rate-P.dat: bucket start (s), successes/s and rejections/s in 0.1 s buckets
    awk 'BEGIN { print 0, 0 } { n += $2 / 10; printf "%.1f %d\n", $1 + 0.1, n }' \
        "rate-$p.dat" >"done-$p.dat"
    lw=2
    [ "$p" = aimd ] && lw=4
    # the legend names each policy with its completion time (demo.tsv)
    label=$p
    [ -s demo.tsv ] && label=$(awk -F'\t' -v p="$p" '$1 == p { printf "%s (%.2f s)", p, $2; f = 1 }
                                    END { if (!f) print p }' demo.tsv)
    done_cmd="$done_cmd${done_cmd:+, }\"done-$p.dat\" using 1:2 with lines lw $lw lc $i title \"$label\""
done
if [ -n "$done_cmd" ] && [ -s demo.tsv ] && [ -n "${OPS:-}" ] && [ -n "${OPTIMUM:-}" ]; then
    # demo.tsv: policy completion_s ratio attempts wasted_pct p99_ms all_ok failed
    awk -F'\t' -v n="$OPS" 'NR > 1 { printf "%d \"%s\" %.2f %d\n", NR - 2, $1, $4 / n, $8 }' demo.tsv \
        >attempts-per-request.dat
    top=$(awk '{ if ($3 > m) m = $3 } END { printf "%.2f", m * 1.25 + 0.1 }' attempts-per-request.dat)
    ftop=$(awk '{ if ($4 > m) m = $4 } END { printf "%d", (m > 0 ? m * 1.25 : 10) }' attempts-per-request.dat)
    # peers.tsv (demo/bench-peers.sh): workload client time_s optimum_s requests failed_min failed_max
    peers=""
    if [ -s peers.tsv ]; then
        awk -F'\t' 'NR > 1 && $1 == 1 { printf "%d \"%s\" %.2f %d %d %d\n", n++, $2, $3, $5, $7, ($2 ~ /^backoff-/) }' \
            peers.tsv >peers.dat
        popt=$(awk -F'\t' 'NR > 1 && $1 == 1 { print $4; exit }' peers.tsv)
        ptop=$(awk '{ if ($3 > m) m = $3 } END { printf "%.1f", m * 1.45 + 0.5 }' peers.dat)
        [ -s peers.dat ] && peers=1
    fi
    panel=""
    if [ -n "$peers" ]; then
        height=1150 upper=0.46 lower=0.24
        panel=$(peers_panel)
    else
        height=800 upper=0.35 lower=0
    fi
    gnuplot <<GP
set terminal pngcairo size 1000,$height noenhanced font ",10"
set output "summary.png"
set multiplot
set origin 0, $upper
set size 1, 1 - $upper
set title "burst: requests completed over time, every policy (dashed: the server's capacity, done at $OPTIMUM s)"
set xlabel "time (s)"
set ylabel "requests completed"
set key bottom right
set yrange [0:*]
set grid
set samples 400
plot $done_cmd, \
     (x <= $OPTIMUM ? x * $OPS / $OPTIMUM : $OPS) with lines dt (8, 6) lw 2 lc rgb "black" title "optimum"
unset xlabel
set style fill solid 0.8
set boxwidth 0.6
unset key
set xrange [-0.5:*]
set xtics rotate by -25
set origin 0, $lower
set size 0.5, $upper - $lower
set title "attempts per request (1.00: nothing wasted)"
set ylabel "attempts / request"
set yrange [0:$top]
plot "attempts-per-request.dat" using 1:3:xtic(2) with boxes lc rgb "#4477aa", \
     "" using 1:3:(sprintf("%.2f", \$3)) with labels offset 0,0.7
set origin 0.5, $lower
set size 0.5, $upper - $lower
set title "requests failed, of $OPS (given up: never done)"
set ylabel "requests failed"
set yrange [0:$ftop]
plot "attempts-per-request.dat" using 1:4:xtic(2) with boxes lc rgb "#cc3311", \
     "" using 1:4:(sprintf("%d", \$4)) with labels offset 0,0.7
$panel
unset multiplot
GP
fi

# All policies' success rate on one picture (detail).
plotcmd=""
for p in $POLICIES; do
    [ -s "rate-$p.dat" ] || continue
    plotcmd="$plotcmd${plotcmd:+, }\"rate-$p.dat\" using 1:2 with lines lw 2 title \"$p\""
done
gnuplot <<GP
set terminal png size 900,500 noenhanced
set output "rate-all.png"
set title "successful requests per second, every policy (optimum: done at ${OPTIMUM:-?} s)"
set xlabel "time (s)"
set ylabel "successes/s"
plot $plotcmd
GP

gnuplot <<GP
set terminal png size 900,500 noenhanced
set output "rejections-all.png"
set title "rejected (wasted) requests per second, every policy (log scale)"
set xlabel "time (s)"
set ylabel "rejections/s"
set logscale y
plot $(echo "$plotcmd" | sed 's/using 1:2/using 1:(\$3 > 0 ? \$3 : 1\/0)/g')
GP

if [ -s trace-aimd.csv ]; then
    # t_ms,pid,tid,dest,call,attempt,outcome,status,curl_code,delay_ms,cwnd,ssthresh,inflight
    gnuplot <<'GP'
set terminal png size 900,500 noenhanced
set output "window-aimd.png"
set datafile separator ","
set title "aimd: congestion window, ssthresh and attempts in flight (from BACKOFF_TRACE)"
set xlabel "time since the first attempt (s)"
set ylabel "requests"
set logscale y
set key top right
stats "trace-aimd.csv" using 1 nooutput
t0 = STATS_min
plot "trace-aimd.csv" every ::1 using (($1 - t0) / 1000):11 with steps lw 2 title "cwnd", \
     "" every ::1 using (($1 - t0) / 1000):12 with steps lw 1 title "ssthresh", \
     "" every ::1 using (($1 - t0) / 1000):13 with dots title "in flight"
GP
fi

if [ -s attempts.tsv ]; then
    awk -F'\t' 'NR > 1 && $1 == "exponential" { print $2, $3 }' attempts.tsv >attempts-exponential.dat
    awk -F'\t' 'NR > 1 && $1 == "aimd" { print $2, $3 }' attempts.tsv >attempts-aimd.dat
    gnuplot <<'GP'
set terminal png size 900,500 noenhanced
set output "attempts-vs-ops.png"
set title "attempts needed against operations (burst, real time)"
set xlabel "operations"
set ylabel "attempts"
set key top left
plot "attempts-exponential.dat" using 1:2 with linespoints lw 2 title "exponential", \
     "attempts-aimd.dat" using 1:2 with linespoints lw 2 title "aimd", \
     x with lines dt 2 lc rgb "gray" title "one attempt per operation"
GP
fi
