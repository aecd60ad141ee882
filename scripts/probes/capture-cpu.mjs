#!/usr/bin/env node
import { createHash } from 'node:crypto';
import { captureDataJson } from '../../dist/src/capture/capture.js';
import { headersFromRaw } from '../../dist/src/capture/captured-request.js';
// The JavaScript work of one capture (read, recognise, check, render data) against the inbox URL's parse and
// stringify of the same ~1.5 KB GitHub push, in microseconds per call. Build first (npm run build).
// Usage: node scripts/probes/capture-cpu.mjs
import { readBody } from '../../dist/src/capture/request-body.js';
import { recognise } from '../../dist/src/capture/sender-recognition.js';
import { checkSignature } from '../../dist/src/capture/signature-verification.js';
import { parseJsonBody } from '../../dist/src/http/plugins/json-body.js';

const push = JSON.stringify({
  ref: 'refs/heads/main',
  commits: Array.from({ length: 3 }, (_, i) => ({
    id: 'a'.repeat(40),
    message: `Fix ${i}`,
    author: { name: 'Mona', email: 'm@x' },
    modified: ['src/flux.ts'],
    url: `https://github.com/x/y/commit/${i}`,
  })),
  repository: { id: 1, full_name: 'octocat/Hello-World', owner: { login: 'octocat' } },
  pad: 'x'.repeat(900),
});
const buf = Buffer.from(push);
const raw = [
  'host',
  '127.0.0.1:1',
  'content-type',
  'application/json',
  'user-agent',
  'GitHub-Hookshot/044aadd',
  'x-github-event',
  'push',
  'x-github-hook-id',
  '292430182',
  'x-github-delivery',
  '72d3162e-cc78-11e3-81ab-000000000001',
  'content-length',
  String(buf.length),
];
const N = 50000;
async function time(label, f) {
  for (let i = 0; i < 2000; i++) await f();
  const t = performance.now();
  for (let i = 0; i < N; i++) await f();
  console.log(label.padEnd(30), (((performance.now() - t) * 1000) / N).toFixed(2), 'µs');
}
await time('headersFromRaw', () => headersFromRaw(raw));
const h = headersFromRaw(raw);
await time('readBody', () => readBody(buf, 'application/json'));
const b = await readBody(buf, 'application/json');
await time('recognise', () => recognise(h, b.value));
await time('checkSignature', () => checkSignature(h, buf, {}, Date.now()));
const sig = checkSignature(h, buf, {}, Date.now());
await time('captureDataJson', () => captureDataJson({ method: 'POST', subPath: '/github', query: '', headers: h, body: buf, remoteIp: '127.0.0.1' }, b, sig));
await time('sha256', () => createHash('sha256').update(buf).digest('hex'));
await time('endpoint6 parse+stringify', () => JSON.stringify(parseJsonBody(`{"type":"github.push","source":"github","data":${push}}`).data));
console.log('bytes', buf.length);
