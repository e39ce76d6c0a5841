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

# The main picture (summary.png): requests completed so far, one line per
# policy, against the optimum (the server's capacity, dashed): who finished
# first, and how straight the line is, shows at a glance.  Below it the
# attempts each policy spent per request.  The default policy (aimd) is
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
    # demo.tsv: policy completion_s ratio attempts wasted_pct p99_ms all_ok
    awk -F'\t' -v n="$OPS" 'NR > 1 { printf "%d \"%s\" %.2f\n", NR - 2, $1, $4 / n }' demo.tsv \
        >attempts-per-request.dat
    top=$(awk '{ if ($3 > m) m = $3 } END { printf "%.2f", m * 1.2 + 0.1 }' attempts-per-request.dat)
    gnuplot <<GP
set terminal pngcairo size 1000,800 noenhanced font ",10"
set output "summary.png"
set multiplot
set origin 0, 0.35
set size 1, 0.65
set title "requests completed over time, every policy (dashed: the server's capacity, done at $OPTIMUM s)"
set xlabel "time (s)"
set ylabel "requests completed"
set key bottom right
set yrange [0:*]
set grid
set samples 400
plot $done_cmd, \
     (x <= $OPTIMUM ? x * $OPS / $OPTIMUM : $OPS) with lines dt (8, 6) lw 2 lc rgb "black" title "optimum"
set origin 0, 0
set size 1, 0.35
set title "attempts per request (1.00: nothing wasted)"
unset xlabel
set ylabel "attempts / request"
set style fill solid 0.8
set boxwidth 0.6
set yrange [0:$top]
unset key
set xrange [-0.5:*]
plot "attempts-per-request.dat" using 1:3:xtic(2) with boxes lc rgb "#4477aa", \
     "" using 1:3:(sprintf("%.2f", \$3)) with labels offset 0,0.7
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
