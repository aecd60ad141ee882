// The mail-parsing pool (src/email/mail-parse-pool.ts) with real worker threads: a task waits for a
// free worker at most its budget (then `busy`, which the SMTP listener answers 451), a worker past
// its budget is ended and replaced, DNS questions of the workers are answered by the main thread's
// resolver, and closing the pool fails what is left.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import { MailParseLimitError, MailParsePool } from '../../src/email/mail-parse-pool.js';
import { UNBOUNDED_EMAIL } from '../../src/email/mime-to-event.js';

const log = pino({ level: 'silent' });
const slowMail = Buffer.from(`From: a@x.example\r\nSubject: slow\r\n\r\n${'ab\r\n'.repeat(400_000)}`);
const quickMail = Buffer.from('From: a@x.example\r\nSubject: quick\r\nMessage-ID: <q@x.example>\r\n\r\nhello\r\n');
const parse = { kind: 'parse' as const, limits: UNBOUNDED_EMAIL };

describe('MailParsePool', () => {
  it('a task that waits past its budget for a worker fails as busy; the worker past its own budget is ended; the next task gets a new one', async () => {
    const pool = new MailParsePool({ workers: 1, timeoutMs: 10_000, maxHeapMb: 1024 }, log);
    try {
      const slow = pool.run(parse, slowMail, 1500);
      const queued = pool.run(parse, quickMail, 300);
      await assert.rejects(queued, (err: unknown) => err instanceof MailParseLimitError && err.limit === 'busy');
      await assert.rejects(slow, (err: unknown) => err instanceof MailParseLimitError && err.limit === 'time' && /1500 ms/.test(err.message));
      assert.equal(pool.terminations.time, 1);
      const after = await pool.run(parse, quickMail);
      assert.equal(after.kind, 'parse');
      assert.equal(after.kind === 'parse' && after.parsed.data.subject, 'quick');
    } finally {
      await pool.close();
    }
  });

  it("answers the workers' DNS questions with the main thread's resolver", async () => {
    const asked: string[] = [];
    const pool = new MailParsePool(
      {
        workers: 1,
        dnsResolver: async (name, rrtype) => {
          asked.push(`${rrtype} ${name}`);
          throw Object.assign(new Error(`ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
        },
      },
      log,
    );
    try {
      const result = await pool.run(
        {
          kind: 'authenticate',
          facts: { ip: '192.0.2.1', helo: 'mx.x.example', sender: 'a@x.example', mta: 'mx.test' },
          lookupTimeoutMs: 1000,
          budgetMs: 3000,
        },
        quickMail,
      );
      assert.equal(result.kind, 'authenticate');
      assert.ok(
        asked.some((q) => q.endsWith('x.example')),
        `the resolver was asked: ${asked.join(', ')}`,
      );
      assert.equal(result.kind === 'authenticate' && result.proof.authentication.spf, 'none');
    } finally {
      await pool.close();
    }
  });

  it('close fails queued and running tasks as closed', async () => {
    const pool = new MailParsePool({ workers: 1, timeoutMs: 10_000 }, log);
    const closedError = (err: unknown) => err instanceof MailParseLimitError && err.limit === 'closed';
    const running = assert.rejects(pool.run(parse, slowMail), closedError);
    const queued = assert.rejects(pool.run(parse, quickMail), closedError);
    await new Promise((r) => setTimeout(r, 100));
    await pool.close();
    await running;
    await queued;
    await assert.rejects(pool.run(parse, quickMail), (err: unknown) => err instanceof MailParseLimitError && err.limit === 'closed');
  });
});
