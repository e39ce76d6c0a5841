// axios with axios-retry as its README shows it: retries 10, retryDelay
// axiosRetry.exponentialDelay (which honours Retry-After); the default
// retryCondition retries a GET on network errors, 429 and 5xx.
// Usage: axios.mjs BASE FIRST COUNT
import { args, load, run } from './peer_common.mjs';

const a = args('axios.mjs BASE FIRST COUNT');
const axios = (await load('axios')).default;
const retryMod = await load('axios-retry');
const axiosRetry = retryMod.default?.default ?? retryMod.default;
const client = axios.create();
axiosRetry(client, { retries: 10, retryDelay: axiosRetry.exponentialDelay });
await run(async (url) => {
    const r = await client.get(url, { responseType: 'text', transformResponse: (x) => x });
    return r.status === 200 ? r.data : null;
}, a);
process.exit(0);
