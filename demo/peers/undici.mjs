// undici's RetryAgent with maxRetries 10 over an Agent (its other options as
// shipped: 429/500/502/503/504 and network errors retried, Retry-After
// honoured, 500 ms doubling up to 30 s).  Usage: undici.mjs BASE FIRST COUNT
import { args, load, run } from './peer_common.mjs';

const a = args('undici.mjs BASE FIRST COUNT');
const undici = await load('undici');
const { Agent, RetryAgent, request } = undici.default ?? undici;
const dispatcher = new RetryAgent(new Agent(), { maxRetries: 10 });
await run(async (url) => {
    const { statusCode, body } = await request(url, { dispatcher });
    const text = await body.text();
    return statusCode === 200 ? text : null;
}, a);
process.exit(0);
