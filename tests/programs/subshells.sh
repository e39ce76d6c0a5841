# Shell script with nested subshells, command substitutions, pipelines,
# background jobs and functions in pipelines.  Prints a fixed text.
f() { ( echo "f:$1" | tr a-z A-Z ) | ( read y; echo "$y" ); }
x=$( ( echo a; ( echo b | tr b c ) ) | sort -r | tr '\n' ' ' )
echo "x=$x"
for i in 1 2 3; do y=$(echo $i | (read z; echo $((z * 2)))); echo "y=$y"; done
echo "$(f one) $(f two | cat)"
( ( ( echo deep ) | cat ) | cat )
n=0; while read l; do n=$((n + l)); done <<EOT
$(seq 1 10 | (while read v; do echo $((v * v)); done))
EOT
echo "sum=$n"
{ for i in 3 1 2; do ( echo "job$(echo $i)" ) & done; wait; } | sort
r=$( (exit 7); echo $? )
echo "r=$r"
(exit 4)
