#!/usr/bin/env node
// The load that once stalled PostgreSQL's batches: 40 concurrent deliveries of 1.2 MB quote-and-backslash bodies to one address;
// prints the time until all are answered. Start the service with MAX_PAYLOAD_BYTES=4194304.
// Usage: node scripts/probes/quote-heavy.mjs http://127.0.0.1:3000
const base = process.argv[2] ?? 'http://127.0.0.1:3000';
const r = await fetch(`${base}/api/v1/addresses`, { method: 'POST' }).then((x) => x.json());
const inbox = r.endpoints.inbox_url;
const body = JSON.stringify({ data: '"\\'.repeat(300_000) });
console.log('body bytes', body.length);
const t0 = performance.now();
const res = await Promise.all(
  Array.from({ length: 40 }, () => fetch(inbox, { method: 'POST', headers: { 'content-type': 'application/json' }, body }).then((x) => x.status)),
);
console.log('statuses', [...new Set(res)], 'ms', Math.round(performance.now() - t0));
