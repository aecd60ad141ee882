// Row `capture`: the capture URL beside POST /api/v1/inbox on one service, the same GitHub push body.

import { randomBytes } from 'node:crypto';
import type { Request as CannonRequest } from 'autocannon';
import type { Child } from './processes.js';
import { CONNECTIONS, cannon, createAddress, details, fmt, JSON_HEADERS, log, median, ROUNDS, type Run, readBack, rows, SECONDS, sideBySide } from './setup.js';

/** A GitHub push delivery of about 2 KB, the body both sides of the capture scenario carry. */
function githubPush(): string {
  const commit = (i: number) => ({
    id: randomBytes(20).toString('hex'),
    tree_id: randomBytes(20).toString('hex'),
    distinct: true,
    message: `Fix the flux capacitor, part ${i}`,
    timestamp: '2026-11-25T09:00:00Z',
    url: `https://github.com/octocat/Hello-World/commit/${i}`,
    author: { name: 'Mona Lisa Octocat', email: 'mona@github.com', username: 'octocat' },
    added: [],
    removed: [],
    modified: ['src/flux.ts'],
  });
  return JSON.stringify({
    ref: 'refs/heads/main',
    before: randomBytes(20).toString('hex'),
    after: randomBytes(20).toString('hex'),
    created: false,
    deleted: false,
    forced: false,
    repository: {
      id: 1296269,
      node_id: 'MDEwOlJlcG9zaXRvcnkxMjk2MjY5',
      name: 'Hello-World',
      full_name: 'octocat/Hello-World',
      private: false,
      owner: { login: 'octocat', id: 1 },
    },
    pusher: { name: 'octocat', email: 'mona@github.com' },
    sender: { login: 'octocat', id: 1, type: 'User' },
    commits: [commit(1), commit(2), commit(3)],
    head_commit: null,
    compare: 'https://github.com/octocat/Hello-World/compare/a...b',
  });
}

/**
 * The capture URL beside POST /api/v1/inbox on one service, in alternating rounds: the same ~2 KB GitHub push
 * body, sent to the capture URL as GitHub sends it (its headers, a fresh X-GitHub-Delivery per
 * request, so every request is a new event behind a dedupe key) and to the inbox as a CreateEvent
 * with a fresh Idempotency-Key. The table's ceiling column holds POST /api/v1/inbox here.
 */
export async function captureScenario(service: Child): Promise<void> {
  const push = githubPush();
  const inbox = await createAddress(service.url);
  const hook = await createAddress(service.url);
  let n = 0;
  const inboxBody = `{"type":"github.push","source":"github","data":${push}}`;
  const inboxReq: CannonRequest = {
    method: 'POST',
    path: inbox.inboxPath,
    headers: JSON_HEADERS,
    body: inboxBody,
    setupRequest: (req) => ({ ...req, headers: { ...JSON_HEADERS, 'idempotency-key': `bench-${++n}` } }),
  };
  const githubHeaders = {
    'content-type': 'application/json',
    'user-agent': 'GitHub-Hookshot/044aadd',
    'x-github-event': 'push',
    'x-github-hook-id': '292430182',
  };
  const hookReq: CannonRequest = {
    method: 'POST',
    path: `${hook.hookPath}/github`,
    headers: githubHeaders,
    body: push,
    setupRequest: (req) => ({ ...req, headers: { ...githubHeaders, 'x-github-delivery': `72d3162e-cc78-11e3-81ab-${String(++n).padStart(12, '0')}` } }),
  };
  const label = `Capture URL vs POST /api/v1/inbox, ${push.length} B GitHub push`;
  log(`${label}: ${CONNECTIONS} connections, ${ROUNDS} alternating rounds of ~${SECONDS} s`);
  const r = await sideBySide(
    label,
    (k) => cannon('ceiling', [service.url], inboxReq, k, [service.pid]),
    (k) => cannon('service', [service.url], hookReq, k, [service.pid]),
  );
  const back = await readBack(service.url, [hook]);
  const lossless = back.stored === r.serviceOk && back.gapless && r.serviceErrors === 0;
  const cpu = (runs: Run[]) => median(runs.map((x) => x.cpuUsPerRequest));
  const ratio = r.serviceRps / r.ceilingRps;
  log(
    `  verified: ${fmt(r.serviceOk)} captures answered 2xx, ${fmt(back.stored)} stored, ${back.gapless ? 'gapless' : 'NOT GAPLESS'}; ` +
      `CPU per request: capture ${cpu(r.service).toFixed(0)} µs, inbox ${cpu(r.ceiling).toFixed(0)} µs`,
  );
  rows.push({
    key: 'capture',
    label: `${label} (ceiling column: POST /api/v1/inbox)`,
    unit: 'req/s',
    ceiling: r.ceilingRps,
    service: r.serviceRps,
    ratio,
    target: '>= 1.0x POST /api/v1/inbox (noise ±10%)',
    met: ratio >= 0.9 && lossless,
    note:
      `${fmt(r.serviceOk)} 2xx = ${fmt(back.stored)} stored, ${back.gapless ? 'gapless' : 'GAPS'}, ${r.serviceErrors} errors; ` +
      `CPU/request ${cpu(r.service).toFixed(0)} µs vs ${cpu(r.ceiling).toFixed(0)} µs; p99 ${median(r.service.map((x) => x.p99))} ms vs ${median(r.ceiling.map((x) => x.p99))} ms`,
  });
  details.capture = { ...r, stored: back.stored, gapless: back.gapless };
}
