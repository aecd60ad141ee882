// The `return-address` CLI as a user runs it: the bin shim spawned as a process, against the real
// service, checking stdout JSON, stderr messages, exit codes and the saved file.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { freePort, sleep, startTestService, type TestService } from '../helpers.js';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  json: any;
}

function cli(args: string[], env: Record<string, string> = {}): Promise<Run> & { proc: ReturnType<typeof spawn> } {
  const proc = spawn(process.execPath, ['bin/return-address.js', ...args], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  proc.stdout!.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  proc.stderr!.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const p = new Promise<Run>((resolve) =>
    proc.on('close', (code) => {
      let json: unknown;
      try {
        json = stdout ? JSON.parse(stdout) : undefined;
      } catch {
        json = undefined;
      }
      resolve({ code, stdout, stderr, json });
    }),
  );
  return Object.assign(p, { proc });
}

describe('return-address CLI', () => {
  let svc: TestService;
  let env: Record<string, string>;
  const dir = mkdtempSync(join(tmpdir(), 'ra-cli-'));
  before(async () => {
    svc = await startTestService();
    env = { RETURN_ADDRESS_URL: svc.baseUrl };
  });
  after(async () => {
    await svc.stop();
  });

  it('every command has --help on stdout with exit 0; an unknown command or option is exit 1 on stderr', async () => {
    for (const c of ['serve', 'create', 'wait', 'events', 'consume', 'get', 'ack', 'deliver', 'delete']) {
      const r = await cli([c, '--help']);
      assert.equal(r.code, 0, c);
      assert.match(r.stdout, new RegExp(`Usage: return-address ${c}`));
    }
    const top = await cli(['--help']);
    assert.equal(top.code, 0);
    assert.match(top.stdout, /Commands:/);
    const bad = await cli(['frobnicate']);
    assert.deepEqual([bad.code, bad.stdout], [1, '']);
    assert.match(bad.stderr, /unknown command "frobnicate"/);
    const badOpt = await cli(['create', '--colour', 'red'], env);
    assert.equal(badOpt.code, 1);
    assert.match(badOpt.stderr, /--colour/);
    const noSave = await cli(['wait'], env);
    assert.equal(noSave.code, 1);
    assert.match(noSave.stderr, /--save FILE is required/);
  });

  it('create --save, deliver, events, wait (--match, --ack, timeout), get, ack, delete', async () => {
    const file = join(dir, 'a.json');
    const created = await cli(['create', '--name', 'cli', '--task-id', 'T9', '--ttl', '3600', '--save', file], env);
    assert.equal(created.code, 0, created.stderr);
    assert.equal(created.json.address.name, 'cli');
    assert.equal(created.json.address.taskId, 'T9');
    assert.match(created.stderr, /saved to/);
    assert.equal(statSync(file).mode & 0o777, 0o600, 'the file holds secrets');
    // No credential on stdout (an agent's transcript): the address and where the file is.
    assert.deepEqual(Object.keys(created.json).sort(), ['address', 'endpoints', 'saved_to']);
    assert.equal(created.json.saved_to, file);
    assert.doesNotMatch(created.stdout + created.stderr, /aa_read_|aa_ingress_/);
    const savedFile = JSON.parse(readFileSync(file, 'utf8'));
    assert.equal(savedFile.credentials.read_token.slice(0, 8), 'aa_read_');
    assert.deepEqual(savedFile.address, created.json.address);
    assert.deepEqual([savedFile.cursor, savedFile.url], [0, svc.baseUrl], 'the create response, plus cursor and the service URL');
    const all = await cli(['create', '--save', join(dir, 'all.json'), '--print-credentials'], env);
    const { cursor: _c, url: _u, ...allSaved } = JSON.parse(readFileSync(join(dir, 'all.json'), 'utf8'));
    assert.deepEqual(all.json, allSaved);
    assert.match(all.json.credentials.read_token, /^aa_read_/, '--print-credentials prints the whole response');

    const d1 = await cli(['deliver', '--save', file, '--type', 'note', '--data', '{"n":1}', '--key', 'k'], env);
    assert.equal(d1.code, 0, d1.stderr);
    assert.deepEqual([d1.json.event.sequence, d1.json.duplicate], [1, false]);
    assert.equal((await cli(['deliver', '--save', file, '--type', 'note', '--data', '{"n":1}', '--key', 'k'], env)).json.duplicate, true);
    await cli(['deliver', '--save', file, '--type', 'pr', '--data', '{"pr":{"state":"merged"},"n":2}'], env);

    // wait without --ack finds the same event again: the saved cursor does not move.
    for (let i = 0; i < 2; i++) {
      const w = await cli(['wait', '--save', file, '--type', 'pr', '--match', 'data.pr.state=merged', '--timeout', '5'], env);
      assert.equal(w.code, 0, w.stderr);
      assert.equal(w.json.sequence, 2);
      assert.equal(JSON.parse(readFileSync(file, 'utf8')).cursor, 0);
    }
    const none = await cli(['wait', '--save', file, '--match', 'data.pr.state=closed', '--timeout', '1'], env);
    assert.deepEqual([none.code, none.stdout], [2, '']);
    assert.match(none.stderr, /timed out/);

    // A filtered wait never moves the saved cursor, even with --ack: it passed over other events.
    const filteredAck = await cli(['wait', '--save', file, '--type', 'pr', '--ack', '--timeout', '5'], env);
    assert.equal(filteredAck.code, 0, filteredAck.stderr);
    assert.equal(filteredAck.json.sequence, 2);
    assert.equal(JSON.parse(readFileSync(file, 'utf8')).cursor, 0, 'event 1 (a note) can still be found');
    const acked = await cli(['wait', '--save', file, '--ack', '--timeout', '5'], env);
    assert.equal(acked.code, 0, acked.stderr);
    assert.equal(acked.json.sequence, 1);
    assert.ok(acked.json.acknowledged_at, 'printed after the ack');
    assert.equal(JSON.parse(readFileSync(file, 'utf8')).cursor, 1, 'an unfiltered wait --ack moves the cursor to its event');

    // events moves the saved cursor only with --advance (once the page is handled).
    const page = await cli(['events', '--save', file], env);
    assert.equal(page.code, 0, page.stderr);
    assert.deepEqual(
      page.json.events.map((e: { sequence: number }) => e.sequence),
      [2],
    );
    assert.equal(JSON.parse(readFileSync(file, 'utf8')).cursor, 1, 'events alone does not move the cursor');
    assert.deepEqual(
      (await cli(['events', '--save', file, '--advance'], env)).json.events.map((e: { sequence: number }) => e.sequence),
      [2],
    );
    assert.equal(JSON.parse(readFileSync(file, 'utf8')).cursor, 2, 'events --advance does');
    assert.deepEqual((await cli(['events', '--save', file], env)).json.events, []);
    const filteredPage = await cli(['events', '--save', file, '--after', '0', '--type', 'pr', '--match', 'data.n=2'], env);
    assert.deepEqual([filteredPage.json.events.map((e: { sequence: number }) => e.sequence), filteredPage.json.next_cursor], [[2], 2]);

    const ack = await cli(['ack', '--save', file, page.json.events[0].id], env);
    assert.equal(ack.code, 0, ack.stderr);
    assert.ok(ack.json.event.acknowledged_at);
    const badAck = await cli(['ack', '--save', file, 'evt_nope'], env);
    assert.deepEqual([badAck.code, badAck.stdout], [1, '']);
    assert.match(badAck.stderr, /not_found \(HTTP 404\)/);

    const got = await cli(['get', '--save', file], env);
    assert.deepEqual(got.json, { address: created.json.address });
    const del = await cli(['delete', '--save', file], env);
    assert.deepEqual([del.code, del.json], [0, { deleted: created.json.address.id }]);
    const gone = await cli(['get', '--save', file], env);
    assert.equal(gone.code, 1);
    assert.match(gone.stderr, /not_found/);
  });

  it('create --save writes through an unpredictable temporary name created exclusively: a planted pid-named symlink is not followed', async () => {
    // The save file must not leak: the temporary file was `${file}.${pid}.tmp`, opened without O_EXCL, so another local
    // user could plant a symlink there and receive the read token in a file of their choosing.
    const file = join(dir, 'planted.json');
    const victim = join(dir, 'victim.txt');
    writeFileSync(victim, 'untouched');
    const run = cli(['create', '--save', file], env);
    symlinkSync(victim, `${file}.${run.proc.pid}.tmp`);
    const created = await run;
    assert.equal(created.code, 0, created.stderr);
    assert.equal(readFileSync(victim, 'utf8'), 'untouched', 'the symlink target was not written');
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(JSON.parse(readFileSync(file, 'utf8')).address.id, created.json.address.id);
    assert.deepEqual(
      readdirSync(dir).filter((f) => f.startsWith('planted.json.') && f !== `planted.json.${run.proc.pid}.tmp`),
      [],
      'no temporary file is left behind',
    );
  });

  it('wait returns when an event arrives during the wait; a fresh shell needs only the saved file; --url beats it', async () => {
    const file = join(dir, 'b.json');
    const deadUrl = `http://127.0.0.1:${await freePort()}`;
    assert.equal((await cli(['create', '--save', file, '--url', svc.baseUrl], { RETURN_ADDRESS_URL: deadUrl })).code, 0);
    // From here on no RETURN_ADDRESS_URL and no --url: the saved file knows the service.
    const waiting = cli(['wait', '--save', file, '--type', 'late', '--timeout', '30'], {});
    await sleep(500);
    assert.equal((await cli(['deliver', '--save', file, '--type', 'late', '--data', '"hi"'], {})).code, 0);
    const w = await waiting;
    assert.equal(w.code, 0, w.stderr);
    assert.equal(w.json.data, 'hi');
    assert.equal(w.stderr, '', 'no spinner when stderr is not a terminal');
    assert.equal((await cli(['events', '--save', file], {})).json.events.length, 1);
    assert.equal((await cli(['get', '--save', file], { RETURN_ADDRESS_URL: deadUrl })).code, 0, 'the saved URL beats the variable');
    const unreachable = await cli(['get', '--save', file, '--url', deadUrl], {});
    assert.equal(unreachable.code, 1);
    assert.match(unreachable.stderr, /network_error/);
  });

  it('serve runs the service like npm start and stops on SIGTERM', async () => {
    const port = await freePort();
    const smtpPort = await freePort();
    const server = cli(['serve'], {
      PORT: String(port),
      SMTP_PORT: String(smtpPort),
      HOST: '127.0.0.1',
      DATA_DIR: mkdtempSync(join(tmpdir(), 'ra-serve-')),
      LOG_LEVEL: 'warn',
    });
    const url = `http://127.0.0.1:${port}`;
    let ready = false;
    for (let i = 0; i < 200 && !ready; i++) {
      ready = await fetch(`${url}/readyz`).then(
        (r) => r.ok,
        () => false,
      );
      if (!ready) await sleep(100);
    }
    assert.ok(ready, 'serve answers /readyz');
    const file = join(dir, 'c.json');
    assert.equal((await cli(['create', '--save', file, '--url', url])).code, 0);
    server.proc.kill('SIGTERM');
    assert.equal((await server).code, 0);
  });
});

describe('return-address CLI help', () => {
  // A help text that names a setting the service does not read (it once named STORE) sends an
  // operator after a knob that is not there. Settings are read from config.ts's (env, 'NAME') calls;
  // the CLI's own variables from where the CLI and the client read or set them.
  const source = (path: string) => readFileSync(path, 'utf8');
  const settings = new Set([...source('src/config.ts').matchAll(/\(env, '([A-Z0-9_]+)'/g)].map((m) => m[1]));
  const clientFiles = readdirSync('packages/client/src')
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join('packages/client/src', f));
  const cliCode = [...readdirSync('src/cli').map((f) => join('src/cli', f)), ...clientFiles].map(source).join('\n');
  const cliVariables = new Set(
    [...cliCode.matchAll(/(?:process\.env\.|envVar\(')([A-Z][A-Z0-9_]+)|\b([A-Z][A-Z0-9_]+): (?:event|String)\b/g)].map((m) => m[1] ?? m[2]),
  );
  // Capitals that are no variable: metavariables of the usage lines, and words of the prose.
  const NOT_VARIABLES = new Set(['FILE', 'URL', 'JSON', 'CMD', 'VAR', 'SECRET', 'SCHEME', 'NAME', 'EVENT_ID', 'ADDRESS_ID', 'TYPE', 'TEXT']);
  for (const w of [
    'TARGET',
    'STATUS',
    'SPEC',
    'SECONDS',
    'REPLACES',
    'README',
    'POST',
    'PATH',
    'METHOD',
    'SIGTERM',
    'SIGINT',
    'SIGKILL',
    'PID',
    'TIME',
    'ISO',
    'SKIP',
    'REPLACE',
    'DOMAIN_OR_ADDRESS',
    'POLICY',
  ])
    NOT_VARIABLES.add(w);

  it('names only settings the service reads and variables the CLI uses', async () => {
    assert.ok(settings.size >= 30 && cliVariables.has('RETURN_ADDRESS_URL') && cliVariables.has('RA_EVENT_ID'), 'the lists were read');
    const commands = [
      '',
      'serve',
      'create',
      'wait',
      'events',
      'consume',
      'get',
      'ack',
      'deliver',
      'delete',
      'ask',
      'admin',
      'backup',
      'signing-secrets',
      'forward',
      'channel',
      'policy',
    ];
    let named = 0;
    for (const c of commands) {
      const r = await cli(c === '' ? ['--help'] : [c, '--help']);
      assert.equal(r.code, 0, `${c} --help: ${r.stderr}`);
      for (const [word] of r.stdout.matchAll(/\b[A-Z][A-Z0-9_]{2,}\b/g)) {
        if (NOT_VARIABLES.has(word)) continue;
        named++;
        assert.ok(
          settings.has(word) || cliVariables.has(word),
          `"${c} --help" names ${word}, which is neither a setting of config.ts nor a variable the CLI reads or sets`,
        );
      }
    }
    assert.ok(named >= 10, `only ${named} variables named in all help texts: has the check stopped seeing them?`);
  });
});
