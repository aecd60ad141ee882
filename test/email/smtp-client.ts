// A deliberately dumb SMTP client for tests: raw lines over a socket, so tests can do what real
// MTAs do and polite libraries do not (pipelining, garbage, hanging up in the middle of DATA).
import { randomUUID } from 'node:crypto';
import { connect, type Socket } from 'node:net';

export interface Reply {
  code: number;
  lines: string[];
  text: string;
}

export class RawSmtp {
  private buf = '';
  private pending: string[] = [];
  private readonly replies: Reply[] = [];
  private readonly waiters: Array<{ resolve: (r: Reply) => void; reject: (e: Error) => void }> = [];
  closed = false;

  private constructor(
    readonly socket: Socket,
    private readonly timeoutMs: number,
  ) {
    socket.setNoDelay(true);
    socket.on('data', (d: Buffer) => {
      this.buf += d.toString('latin1');
      this.parse();
    });
    socket.on('error', () => {
      /* surfaced as `closed` */
    });
    socket.on('close', () => {
      this.closed = true;
      this.flush();
    });
  }

  static open(port: number, host = '127.0.0.1', timeoutMs = 10_000): Promise<RawSmtp> {
    return new Promise((resolve, reject) => {
      const socket = connect({ port, host });
      socket.once('error', reject);
      socket.once('connect', () => {
        socket.off('error', reject);
        resolve(new RawSmtp(socket, timeoutMs));
      });
    });
  }

  /** Connects and reads the greeting; then EHLO. */
  static async ready(port: number, timeoutMs?: number): Promise<RawSmtp> {
    const s = await RawSmtp.open(port, '127.0.0.1', timeoutMs);
    const greeting = await s.reply();
    if (greeting.code !== 220) throw new Error(`greeting: ${greeting.text}`);
    const ehlo = await s.cmd('EHLO test.example');
    if (ehlo.code !== 250) throw new Error(`EHLO: ${ehlo.text}`);
    return s;
  }

  private parse(): void {
    let i: number;
    while ((i = this.buf.indexOf('\n')) >= 0) {
      const line = this.buf.slice(0, i).replace(/\r$/, '');
      this.buf = this.buf.slice(i + 1);
      this.pending.push(line);
      const m = /^(\d{3})([ -]?)/.exec(line);
      if (m && m[2] !== '-') {
        const lines = this.pending;
        this.pending = [];
        this.replies.push({ code: Number(m[1]), lines, text: lines.join('\n') });
      }
    }
    this.flush();
  }

  private flush(): void {
    while (this.waiters.length > 0 && (this.replies.length > 0 || this.closed)) {
      const w = this.waiters.shift()!;
      const r = this.replies.shift();
      if (r) w.resolve(r);
      else w.reject(new Error('connection closed while waiting for a reply'));
    }
  }

  reply(): Promise<Reply> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        const idx = this.waiters.indexOf(w);
        if (idx >= 0) this.waiters.splice(idx, 1);
        reject(new Error(`no SMTP reply within ${this.timeoutMs} ms`));
      }, this.timeoutMs);
      const w = {
        resolve: (r: Reply) => {
          clearTimeout(timer);
          resolve(r);
        },
        reject: (e: Error) => {
          clearTimeout(timer);
          reject(e);
        },
      };
      this.waiters.push(w);
      this.flush();
    });
  }

  write(data: string | Buffer): void {
    this.socket.write(data);
  }

  cmd(line: string): Promise<Reply> {
    this.socket.write(`${line}\r\n`);
    return this.reply();
  }

  /** DATA, then the dot-stuffed message and the final dot; the 354 and the final reply. */
  async data(message: string | Buffer): Promise<{ data: Reply; final: Reply | null }> {
    const data = await this.cmd('DATA');
    if (data.code !== 354) return { data, final: null };
    this.socket.write(dotStuff(message));
    return { data, final: await this.reply() };
  }

  async quit(): Promise<void> {
    try {
      if (!this.closed) await this.cmd('QUIT');
    } catch {
      /* already gone */
    }
    this.socket.destroy();
  }

  destroy(): void {
    this.socket.destroy();
  }
}

/** CRLF line ends, RFC 5321 dot-stuffing and the terminating <CRLF>.<CRLF>. */
export function dotStuff(message: string | Buffer): Buffer {
  const text = Buffer.isBuffer(message) ? message.toString('latin1') : Buffer.from(message, 'utf8').toString('latin1');
  const lines = text.replace(/\r?\n/g, '\n').split('\n');
  if (lines.at(-1) === '') lines.pop();
  return Buffer.from(`${lines.map((l) => (l.startsWith('.') ? `.${l}` : l)).join('\r\n')}\r\n.\r\n`, 'latin1');
}

/** One whole transaction on a fresh connection. */
export async function sendRaw(
  port: number,
  opts: { from: string; rcpts: string[]; message: string | Buffer; timeoutMs?: number },
): Promise<{ mail: Reply; rcpt: Reply[]; data: Reply | null; final: Reply | null }> {
  const s = await RawSmtp.ready(port, opts.timeoutMs);
  try {
    const mail = await s.cmd(`MAIL FROM:<${opts.from}>`);
    const rcpt: Reply[] = [];
    for (const r of opts.rcpts) rcpt.push(await s.cmd(`RCPT TO:<${r}>`));
    if (!rcpt.some((r) => r.code === 250)) return { mail, rcpt, data: null, final: null };
    const { data, final } = await s.data(opts.message);
    return { mail, rcpt, data, final };
  } finally {
    await s.quit();
  }
}

export function simpleMessage(opts: { to: string | string[]; subject?: string; messageId?: string | null; text?: string; from?: string }): string {
  const h = [
    `From: ${opts.from ?? 'Sender <sender@example.org>'}`,
    `To: ${([] as string[]).concat(opts.to).join(', ')}`,
    `Subject: ${opts.subject ?? 'hello'}`,
    'Date: Tue, 01 Oct 2024 10:00:00 +0000',
  ];
  if (opts.messageId !== null) h.push(`Message-ID: <${opts.messageId ?? `${randomUUID()}@test.example`}>`);
  h.push('MIME-Version: 1.0', 'Content-Type: text/plain; charset=utf-8');
  return `${h.join('\r\n')}\r\n\r\n${(opts.text ?? 'plain body').replace(/\r?\n/g, '\r\n')}\r\n`;
}
