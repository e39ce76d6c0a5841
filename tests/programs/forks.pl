# perl forks: fork in a forked child, a pipe open (fork+exec) and backticks
# in the grandchild, exit statuses passed up.  Prints a fixed text.
use strict;
use warnings;
$| = 1;
my $p = fork() // die "fork: $!";
if ($p == 0) {
    my $q = fork() // die "fork: $!";
    if ($q == 0) {
        my $x = `echo \$(echo back)`;
        open(my $fh, "-|", "sh", "-c", "echo piped | tr p P") or die;
        my $y = <$fh>;
        close $fh;
        print "grandchild $x$y";
        exit 5;
    }
    waitpid($q, 0);
    print "child saw ", $? >> 8, "\n";
    exit 6;
}
waitpid($p, 0);
print "parent saw ", $? >> 8, "\n";
my @kids;
for my $i (1 .. 4) {
    my $k = fork() // die;
    if ($k == 0) { my $g = fork(); if ($g == 0) { exit $i } waitpid($g, 0); exit($? >> 8) }
    push @kids, $k;
}
my $sum = 0;
for my $k (@kids) { waitpid($k, 0); $sum += $? >> 8 }
print "sum $sum\n";
exit 3;
