// Node fetching BASE/item/1..N one after another, as tests/programs/http_py.py
// (prints "done N bad K"): its http module (libuv: write/read on a
// non-blocking socket under epoll; one keep-alive socket), or with HOW
// "fetch" its fetch() (undici: one keep-alive socket, and a 1 s timer tick
// in its loop while a request is out).   node http_node.js BASE N [TAG [HOW]]
const http = require('http');
const base = process.argv[2], n = +process.argv[3], how = process.argv[5] || 'http';
const agent = new http.Agent({keepAlive: true, maxSockets: 1});
let bad = 0, done = 0;
const want = i => ('item=' + i + ';').repeat(64).slice(0, 64);
function one(i) {
  http.get(base + '/item/' + i, {agent}, res => {
    let b = ''; res.on('data', d => b += d); res.on('end', () => {
      if (res.statusCode != 200 || b != want(i)) bad++;
      if (++done == n) { console.log('done ' + n + ' bad ' + bad); agent.destroy(); } else one(i + 1);
    });
  }).on('error', e => { bad++; console.error(e.message); if (++done == n) console.log('done ' + n + ' bad ' + bad); else one(i + 1); });
}
async function fetches() {
  for (let i = 1; i <= n; i++) {
    try {
      const r = await fetch(base + '/item/' + i), b = await r.text();
      if (r.status != 200 || b != want(i)) bad++;
    } catch (e) { bad++; console.error(e.message); }
  }
  console.log('done ' + n + ' bad ' + bad);
}
if (how === 'fetch') fetches(); else one(1);
