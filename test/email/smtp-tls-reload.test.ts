// SMTP STARTTLS certificates reload on SIGHUP (design.md, "Running it"): after a renewal replaced the files,
// new STARTTLS handshakes present the new certificate while the listener and the sessions already
// open stay; a pair that does not load is refused with an error and the certificate in use stays.
// Two real certificates: the committed fixture and one made here with openssl.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { connect as netConnect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { type TLSSocket, connect as tlsConnect } from 'node:tls';
import { fileURLToPath } from 'node:url';
import nodemailer from 'nodemailer';
import { api, createAddress, createTestStorage, STORE, sleep, spawnService } from '../helpers.js';

const FIXTURES = fileURLToPath(new URL('../../../test/fixtures/tls/', import.meta.url));

function opensslMissing(): string | false {
  try {
    execFileSync('openssl', ['version']);
    return false;
  } catch {
    return 'openssl is not installed (needed to make the second certificate)';
  }
}

/** Line-oriented SMTP over a plain socket, then over TLS after STARTTLS. */
class Session {
  private buf = '';
  private waiting: ((reply: string) => void) | undefined;
  constructor(private sock: Socket | TLSSocket) {
    this.listen();
  }

  private listen(): void {
    this.sock.on('data', (d: Buffer) => {
      this.buf += d.toString('latin1');
      const m = /^\d{3} .*\r?\n/m.exec(this.buf);
      if (m && this.waiting) {
        const reply = this.buf.slice(0, m.index + m[0].length);
        this.buf = this.buf.slice(reply.length);
        const w = this.waiting;
        this.waiting = undefined;
        w(reply);
      }
    });
  }

  reply(): Promise<string> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no SMTP reply; buffered: ${this.buf}`)), 10_000);
      this.waiting = (r) => {
        clearTimeout(timer);
        resolve(r);
      };
      this.sock.emit('data', Buffer.alloc(0)); // a reply already buffered
    });
  }

  async cmd(line: string): Promise<string> {
    const r = this.reply();
    this.sock.write(`${line}\r\n`);
    return r;
  }

  /** STARTTLS, then the handshake; returns the certificate's CN the server presented. */
  async starttls(): Promise<string> {
    assert.match(await this.cmd('STARTTLS'), /^220 /);
    this.sock.removeAllListeners('data');
    const tls = tlsConnect({ socket: this.sock as Socket, rejectUnauthorized: false });
    await new Promise<void>((resolve, reject) => {
      tls.once('secureConnect', resolve);
      tls.once('error', reject);
    });
    this.sock = tls;
    this.listen();
    return this.peerCn();
  }

  peerCn(): string {
    return String((this.sock as TLSSocket).getPeerCertificate().subject?.CN);
  }

  static async open(port: number): Promise<Session> {
    const sock = netConnect({ port, host: '127.0.0.1' });
    await new Promise<void>((resolve, reject) => {
      sock.once('connect', resolve);
      sock.once('error', reject);
    });
    const s = new Session(sock);
    assert.match(await s.reply(), /^220 /);
    assert.match(await s.cmd('EHLO reload.test'), /STARTTLS/);
    return s;
  }

  close(): void {
    this.sock.destroy();
  }
}

async function newHandshakeCn(port: number): Promise<string> {
  const s = await Session.open(port);
  try {
    return await s.starttls();
  } finally {
    s.close();
  }
}

it(`SIGHUP reloads the STARTTLS certificate without dropping the listener or open sessions (${STORE})`, {
  skip: opensslMissing(),
  timeout: 90_000,
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ra-tls-'));
  const certFile = join(dir, 'cert.pem');
  const keyFile = join(dir, 'key.pem');
  copyFileSync(join(FIXTURES, 'cert.pem'), certFile);
  copyFileSync(join(FIXTURES, 'key.pem'), keyFile);
  // The renewed certificate: another key and another name, so the two cannot be mistaken.
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '2',
      '-subj',
      '/CN=renewed.example.test',
      '-keyout',
      join(dir, 'key2.pem'),
      '-out',
      join(dir, 'cert2.pem'),
    ],
    { stdio: 'ignore' },
  );
  const storage = await createTestStorage();
  const svc = await spawnService({ EMAIL_DOMAIN: 'mail.example.test', SMTP_TLS_CERT: certFile, SMTP_TLS_KEY: keyFile }, storage);
  const reloads = () =>
    svc
      .output()
      .split('\n')
      .filter((l) => l.includes('"msg":"SMTP TLS certificate reloaded"')).length;
  const refusals = () =>
    svc
      .output()
      .split('\n')
      .filter((l) => l.includes('"msg":"SMTP TLS certificate not reloaded; the one in use stays"')).length;
  const until = async (what: () => boolean, label: string) => {
    for (let i = 0; i < 200 && !what(); i++) await sleep(25);
    assert.ok(what(), `${label}; log:\n${svc.output().slice(-2000)}`);
  };
  try {
    assert.equal(await newHandshakeCn(svc.smtpPort), 'mail.example.test');
    const open = await Session.open(svc.smtpPort);
    assert.equal(await open.starttls(), 'mail.example.test');
    assert.match(await open.cmd('EHLO still.here'), /^250/);

    // A renewal replaces the files (as certbot does: new content under the same names), then SIGHUP.
    copyFileSync(join(dir, 'cert2.pem'), certFile);
    copyFileSync(join(dir, 'key2.pem'), keyFile);
    svc.proc.kill('SIGHUP');
    await until(() => reloads() === 1, 'the reload is logged');
    assert.match(svc.output(), /"certificate":\{"subject":"CN=renewed\.example\.test"/);

    assert.equal(await newHandshakeCn(svc.smtpPort), 'renewed.example.test', 'new handshakes present the new certificate');
    assert.match(await open.cmd('NOOP'), /^250/, 'the session opened before the reload goes on');
    assert.equal(open.peerCn(), 'mail.example.test');
    open.close();

    // Mail goes through over the new certificate.
    const a = await createAddress(svc.baseUrl);
    const transport = nodemailer.createTransport({
      host: '127.0.0.1',
      port: svc.smtpPort,
      secure: false,
      requireTLS: true,
      tls: { rejectUnauthorized: false },
    });
    const info = await transport.sendMail({ from: 'renewal@example.org', to: a.email, subject: 'after the renewal', text: 'x' });
    transport.close();
    assert.match(info.response, /^250 /);
    const page = await api(svc.baseUrl, 'GET', `/api/v1/addresses/${a.id}/events`, { token: a.token });
    assert.equal(page.json.events[0]?.data.subject, 'after the renewal');

    // A broken renewal (the old key beside the new certificate) is refused; the new one stays.
    copyFileSync(join(FIXTURES, 'key.pem'), keyFile);
    svc.proc.kill('SIGHUP');
    await until(() => refusals() === 1, 'the refused reload is logged');
    assert.match(svc.output(), /SMTP_TLS_KEY: .*key\.pem does not load with .*cert\.pem/);
    assert.equal(reloads(), 1);
    assert.equal(await newHandshakeCn(svc.smtpPort), 'renewed.example.test');
    assert.equal((await fetch(`${svc.baseUrl}/readyz`)).status, 200, 'the service is unaffected');
  } finally {
    svc.proc.kill('SIGTERM');
    const exit = await svc.exited;
    await storage.drop();
    rmSync(dir, { recursive: true, force: true });
    assert.deepEqual(exit, { code: 0, signal: null });
  }
});

it(`without SMTP_TLS_* a SIGHUP keeps its default and ends the process (a closed terminal) (${STORE})`, { timeout: 60_000 }, async () => {
  const storage = await createTestStorage();
  const svc = await spawnService({}, storage);
  try {
    svc.proc.kill('SIGHUP');
    assert.deepEqual(await svc.exited, { code: null, signal: 'SIGHUP' });
    assert.equal(
      await fetch(`${svc.baseUrl}/healthz`).then(
        () => 'answered',
        () => 'gone',
      ),
      'gone',
    );
  } finally {
    if (svc.proc.exitCode === null && svc.proc.signalCode === null) svc.proc.kill('SIGKILL');
    await storage.drop();
  }
});
