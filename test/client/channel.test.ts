// `return-address channel` as Claude Code runs it: the bin shim spawned as a stdio MCP server, spoken
// to in raw JSON-RPC lines: it declares the claude/channel capability, pushes one
// notifications/claude/channel per new event within milliseconds of the delivery, acks through
// its tool, and resumes after kill -9 from its named consumer's position without losing an event.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Addr, api, createAddress, deliver, startTestService, type TestService } from '../helpers.js';

interface Channel {
  proc: ChildProcess;
  messages: { at: number; msg: any }[];
  request(method: string, params?: object): Promise<any>;
  next(pred: (m: any) => boolean, timeoutMs?: number): Promise<{ at: number; msg: any }>;
  stderr: () => string;
}

function startChannel(file: string, args: string[] = []): Promise<Channel> {
  const proc = spawn(process.execPath, ['bin/return-address.js', 'channel', '--save', file, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  const messages: { at: number; msg: any }[] = [];
  const waiters = new Set<() => void>();
  let err = '';
  let buf = '';
  let nextId = 1;
  proc.stderr!.on('data', (d) => {
    err += d;
  });
  proc.stdout!.setEncoding('utf8');
  proc.stdout!.on('data', (chunk: string) => {
    const at = performance.now();
    buf += chunk;
    let nl = buf.indexOf('\n');
    while (nl >= 0) {
      const line = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 1);
      if (line) messages.push({ at, msg: JSON.parse(line) });
      nl = buf.indexOf('\n');
    }
    for (const w of waiters) w();
  });
  const send = (m: object) => proc.stdin!.write(`${JSON.stringify(m)}\n`);
  const ch: Channel = {
    proc,
    messages,
    stderr: () => err,
    next(pred, timeoutMs = 10_000) {
      return new Promise((ok, fail) => {
        let seen = 0;
        const check = () => {
          for (; seen < messages.length; seen++) {
            const m = messages[seen]!;
            if (pred(m.msg)) {
              messages.splice(seen, 1);
              done();
              ok(m);
              return;
            }
          }
        };
        const timer = setTimeout(() => {
          done();
          fail(new Error(`no such message within ${timeoutMs} ms; stdout ${JSON.stringify(messages).slice(0, 600)}; stderr ${err}`));
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    async request(method, params = {}) {
      const id = nextId++;
      send({ jsonrpc: '2.0', id, method, params });
      return (await ch.next((m) => m.id === id)).msg;
    },
  };
  return (async () => {
    const init = await ch.request('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'claude-code-test', version: '0' } });
    send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    (ch as Channel & { init: any }).init = init;
    return ch;
  })();
}

const isChannel = (m: any) => m.method === 'notifications/claude/channel';

describe('return-address channel (a Claude Code channel)', () => {
  let svc: TestService;
  let a: Addr;
  let file: string;
  const procs: ChildProcess[] = [];
  before(async () => {
    svc = await startTestService();
    a = await createAddress(svc.baseUrl);
    file = join(mkdtempSync(join(tmpdir(), 'ra-channel-')), 'addr.json');
    writeFileSync(file, JSON.stringify({ ...a.body, cursor: 0, url: svc.baseUrl }), { mode: 0o600 });
  });
  after(async () => {
    for (const p of procs) p.kill('SIGKILL');
    await svc.stop();
  });

  it('declares the capability, pushes each event within milliseconds, acks, and resumes after kill -9 without loss', async () => {
    const ch = await startChannel(file);
    procs.push(ch.proc);
    const init = (ch as Channel & { init: any }).init;
    assert.deepEqual(init.result.capabilities.experimental, { 'claude/channel': {} });
    assert.match(init.result.instructions, /never instructions/);
    const tools = await ch.request('tools/list');
    assert.deepEqual(
      tools.result.tools.map((t: any) => t.name),
      ['ack'],
    );

    // A backlog delivered before the session: pushed at once, in order.
    const early = (await deliver(svc.baseUrl, a, { type: 'ci.done', data: { ok: true } })).json.event;
    const first = await ch.next(isChannel);
    assert.equal(first.msg.params.meta.event_id, early.id);
    assert.equal(first.msg.params.meta.sequence, '1');
    assert.equal(first.msg.params.meta.address_id, a.id);
    assert.match(first.msg.params.content, /^ci\.done \(event 1, ingress inbox, trust\.verified null\): \{"ok":true\}/);

    // Latency: from the moment the delivery is sent to the notification on stdout.
    const latencies: number[] = [];
    for (let i = 0; i < 5; i++) {
      await new Promise((r) => setTimeout(r, 100)); // the channel is waiting again
      const t0 = performance.now();
      const r = await deliver(svc.baseUrl, a, { type: 'tick', data: { i } });
      const got = await ch.next((m) => isChannel(m) && m.params.meta.event_id === r.json.event.id);
      latencies.push(got.at - t0);
    }
    latencies.sort((x, y) => x - y);
    console.log(`channel notification after delivery: median ${latencies[2]!.toFixed(1)} ms, max ${latencies[4]!.toFixed(1)} ms`);
    // 100 ms is the target; the bound is loose because this machine is shared.
    assert.ok(latencies[2]! < 1000, `median ${latencies[2]} ms`);

    const acked = await ch.request('tools/call', { name: 'ack', arguments: { event_id: early.id } });
    assert.notEqual(acked.result.isError, true, JSON.stringify(acked));
    const page = await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/events?after=0&limit=1`, { token: a.token });
    assert.ok(page.json.events[0].acknowledged_at, 'the ack reached the service');
    const bad = await ch.request('tools/call', { name: 'ack', arguments: { event_id: 'evt_nope' } });
    assert.equal(bad.result.isError, true);

    // kill -9 once the channel has asked for the next page (which stored its position); deliver while it is down.
    await new Promise((r) => setTimeout(r, 300));
    ch.proc.kill('SIGKILL');
    await new Promise((r) => ch.proc.once('exit', r));
    const whileDown = (await deliver(svc.baseUrl, a, { type: 'while.down' })).json.event;
    const again = await startChannel(file);
    procs.push(again.proc);
    const resumed = await again.next(isChannel);
    assert.equal(resumed.msg.params.meta.event_id, whileDown.id, 'the first event after the restart is the one it missed, not one it had pushed');
    const later = (await deliver(svc.baseUrl, a, { type: 'later' })).json.event;
    const l = await again.next(isChannel);
    assert.equal(l.msg.params.meta.event_id, later.id);

    // A capture whose GitHub signature failed (trust.verified false) is not pushed: the next event is.
    const put = await api(svc.baseUrl, 'PUT', `/api/v1/addresses/${a.id}/signing-secrets`, { token: a.token, json: { github: 'the-real-secret' } });
    assert.equal(put.status, 200, put.text);
    const forged = await api(svc.baseUrl, 'POST', `/api/v1/hooks/${a.id}/${a.secret}`, {
      body: '{"action":"closed"}',
      headers: { 'content-type': 'application/json', 'x-github-event': 'pull_request', 'x-hub-signature-256': `sha256=${'0'.repeat(64)}` },
    });
    assert.equal(forged.status, 202, forged.text);
    const stored = await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/events?after=${forged.json.event.sequence - 1}&limit=1`, { token: a.token });
    assert.equal(stored.json.events[0].trust.verified, false, 'the capture is stored, its signature failed');
    const genuine = (await deliver(svc.baseUrl, a, { type: 'after.forgery' })).json.event;
    const next = await again.next(isChannel);
    assert.equal(next.msg.params.meta.event_id, genuine.id, 'the forged capture was skipped, the next event pushed');
    // The position is the named consumer's on the service.
    const consumers = await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/events?consumer=channel:claude&limit=1`, { token: a.token });
    assert.equal(consumers.status, 200);
    again.proc.kill('SIGTERM');
  });

  it('refuses a bad --name or --match before it starts', async () => {
    for (const args of [
      ['--name', 'Bad Name'],
      ['--match', 'nopath'],
    ]) {
      const proc = spawn(process.execPath, ['bin/return-address.js', 'channel', '--save', file, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
      let err = '';
      proc.stderr.on('data', (d) => {
        err += d;
      });
      const code = await new Promise((r) => proc.once('exit', r));
      assert.equal(code, 1, err);
      assert.match(err, /return-address: /);
    }
  });
});
