// What every Node client of the peers bench shares (demo/bench-peers.sh): the
// same contract as peer_common.py.  A client fetches COUNT items, /item/FIRST
// .. /item/FIRST+COUNT-1, one after another from BASE, checks each body
// ("item=K;" repeated to 64 bytes) and prints "ok N failed M".
// The npm packages live where the bench installed them: PEERS_NPM, a
// directory holding node_modules/ (npm install --prefix).
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

export function itemBody(k, size = 64) {
    const unit = `item=${k};`;
    return unit.repeat(Math.ceil(size / unit.length) + 1).slice(0, size);
}

export function args(usage) {
    const [base, first, count] = process.argv.slice(2);
    const f = Number(first), c = Number(count);
    if (!base || !Number.isInteger(f) || !Number.isInteger(c) || f < 0 || c < 0) {
        process.stderr.write(`usage: ${usage}\n`);
        process.exit(2);
    }
    return { base: base.replace(/\/$/, ''), first: f, count: c };
}

// load(NAME): the package as the bench installed it (CommonJS or ES module).
export async function load(name) {
    const dir = process.env.PEERS_NPM;
    if (!dir) {
        process.stderr.write('PEERS_NPM is not set: expected the directory npm installed the peers into\n');
        process.exit(2);
    }
    const req = createRequire(join(dir, 'package.json'));
    return import(pathToFileURL(req.resolve(name)).href);
}

// run(fetch, a): fetch(url, k) resolves to the body text, or rejects when
// the client gave up on the item.
export async function run(fetch, { base, first, count }) {
    let ok = 0, failed = 0;
    for (let k = first; k < first + count; k++) {
        let good = false;
        try {
            good = (await fetch(`${base}/item/${k}`, k)) === itemBody(k);
        } catch (e) {
            process.stderr.write(`item ${k}: ${e && (e.code || e.name)}: ${String(e && e.message).slice(0, 200)}\n`);
        }
        if (good) ok++; else failed++;
    }
    process.stdout.write(`ok ${ok} failed ${failed}\n`);
}
