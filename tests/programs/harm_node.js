// Node (libuv: non-blocking sockets under epoll, closed with the close system
// call, never libc's close()) for the harm suite (test_http_harm.sh,
// demo/bench-harm.sh).  A ticker (setInterval of 10 ms) measures the loop's
// largest stall.  Lines starting with "time " carry timings (seconds).
//   node harm_node.js destroy BASE GOFILE
//       20 http.get of BASE/slow/5 abandoned with req.destroy() once sent,
//       then one http.get of BASE/slow/1 (timed); prints "ready", waits for
//       GOFILE to exist, then 40 http.get of BASE/item/I one after another
//       (new sockets, on the fds the abandoned ones had).
//   node harm_node.js fetch BASE TAG
//       8 fetch() at once, each with AbortSignal.timeout(3000): 1-3 of
//       BASE/first429/TAG-I?ra=1, 4-6 of BASE/always429?ra=5, 7-8 of
//       BASE/slow/5 (aborted, plain too).
const http = require('http');
const fs = require('fs');
const [mode, base, arg] = process.argv.slice(2);
const t0 = Date.now();
let last = Date.now(), stall = 0;
const tick = setInterval(() => {
  const now = Date.now();
  stall = Math.max(stall, now - last - 10);
  last = now;
}, 10);
const secs = ms => (ms / 1000).toFixed(3);

function get(url) {
  return new Promise(resolve => {
    const req = http.get(url, {agent: false}, res => {
      let b = '';
      res.on('data', d => b += d);
      res.on('end', () => resolve(res.statusCode + ' ' + b.trim()));
    });
    req.on('error', e => resolve('error ' + e.code));
  });
}

async function destroy() {
  const reqs = [];
  let sent = 0;
  for (let i = 0; i < 20; i++) {
    const req = http.get(base + '/slow/5', {agent: false});
    req.on('error', () => {});
    req.on('finish', () => sent++);
    reqs.push(req);
  }
  while (sent < 20) await new Promise(r => setTimeout(r, 20));
  await new Promise(r => setTimeout(r, 200));
  for (const req of reqs) req.destroy();
  await new Promise(r => setTimeout(r, 50));
  const t = Date.now();
  console.log('one ' + await get(base + '/slow/1'));
  console.log('time one ' + secs(Date.now() - t));
  console.log('ready');
  while (!fs.existsSync(arg)) await new Promise(r => setTimeout(r, 50));
  let bad = 0;
  for (let i = 1; i <= 40; i++) {
    const want = ('item=' + i + ';').repeat(64).slice(0, 64);
    if (await get(base + '/item/' + i) !== '200 ' + want) bad++;
  }
  console.log('reused 40 bad ' + bad);
}

async function fetches() {
  const urls = [];
  for (let i = 1; i <= 3; i++) urls.push(base + '/first429/' + arg + '-' + i + '?ra=1');
  for (let i = 4; i <= 6; i++) urls.push(base + '/always429?ra=5');
  for (let i = 7; i <= 8; i++) urls.push(base + '/slow/5');
  const res = await Promise.all(urls.map(async (u, i) => {
    try {
      const r = await fetch(u, {signal: AbortSignal.timeout(3000)});
      return (i + 1) + ' ' + r.status + ' ' + (await r.text()).trim();
    } catch (e) {
      return (i + 1) + ' ' + e.name;
    }
  }));
  for (const r of res) console.log(r);
}

(mode === 'destroy' ? destroy() : fetches()).then(() => {
  clearInterval(tick);
  console.log('time total ' + secs(Date.now() - t0) + ' maxstall ' + secs(stall));
});
