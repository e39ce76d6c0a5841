# Perl's HTTP clients: BASE/item/1..N, as tests/programs/http_py.py (prints
# "done N bad K").  MODE lwp (LWP::UserAgent, a connection per request) or
# tiny (HTTP::Tiny, one keep-alive connection).  PERL_LWP_SSL_CA_FILE /
# SSL_CERT_FILE name the test certificate for https.   perl http_pl.pl MODE BASE N
use strict;
use warnings;
my ($mode, $base, $n) = @ARGV;
my $bad = 0;
my $ca = $ENV{SSL_CERT_FILE};
my $get;
if ($mode eq "lwp") {
    require LWP::UserAgent;
    my $ua = LWP::UserAgent->new(timeout => 30);
    $ua->ssl_opts(SSL_ca_file => $ca) if $ca;
    $get = sub { my $r = $ua->get($_[0]); return ($r->code, $r->content) };
} else {
    require HTTP::Tiny;
    my $ua = HTTP::Tiny->new(timeout => 30, verify_SSL => $ca ? 1 : 0,
                             $ca ? (SSL_options => {SSL_ca_file => $ca}) : ());
    $get = sub { my $r = $ua->get($_[0]); return ($r->{status}, $r->{content}) };
}
for my $i (1 .. $n) {
    my ($code, $body) = $get->("$base/item/$i");
    my $want = substr("item=$i;" x 64, 0, 64);
    $bad++ unless $code == 200 && $body eq $want;
}
print "done $n bad $bad\n";
