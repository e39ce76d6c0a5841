# Ruby's net/http on one connection (Net::HTTP.start): BASE/item/1..N, as
# tests/programs/http_py.py (prints "done N bad K").  SSL_CERT_FILE names
# the test certificate for https.   ruby http_rb.rb BASE N
require "net/http"
require "uri"
base, n = ARGV[0], ARGV[1].to_i
u = URI(base)
bad = 0
Net::HTTP.start(u.host, u.port, use_ssl: u.scheme == "https", read_timeout: 30) do |h|
  (1..n).each do |i|
    begin
      r = h.get("/item/#{i}")
      bad += 1 unless r.code == "200" && r.body == ("item=#{i};" * 64)[0, 64]
    rescue StandardError => e
      warn "error #{e}"
      bad += 1
    end
  end
end
puts "done #{n} bad #{bad}"
