// got with retry: {limit: 10} (its other retry options as shipped: GET
// retried on 408/413/429/500/502/503/504/521/522/524 and on network errors,
// Retry-After honoured).  Usage: got.mjs BASE FIRST COUNT
import { args, load, run } from './peer_common.mjs';

const a = args('got.mjs BASE FIRST COUNT');
const { default: got } = await load('got');
await run((url) => got(url, { retry: { limit: 10 } }).text(), a);
process.exit(0); // keep-alive sockets would hold the loop open
