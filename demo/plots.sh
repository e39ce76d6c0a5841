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

# All policies' success rate on one picture.
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
