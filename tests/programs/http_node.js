// Node's http module (libuv: write/read on a non-blocking socket under
// epoll; one keep-alive socket) fetching BASE/item/1..N, as
// tests/programs/http_py.py (prints "done N bad K").   node http_node.js BASE N
const http = require('http');
const base = process.argv[2], n = +process.argv[3];
const agent = new http.Agent({keepAlive: true, maxSockets: 1});
let bad = 0, done = 0;
function one(i) {
  http.get(base + '/item/' + i, {agent}, res => {
    let b = ''; res.on('data', d => b += d); res.on('end', () => {
      const want = ('item=' + i + ';').repeat(64).slice(0, 64);
      if (res.statusCode != 200 || b != want) bad++;
      if (++done == n) { console.log('done ' + n + ' bad ' + bad); agent.destroy(); } else one(i + 1);
    });
  }).on('error', e => { bad++; console.error(e.message); if (++done == n) console.log('done ' + n + ' bad ' + bad); else one(i + 1); });
}
one(1);
