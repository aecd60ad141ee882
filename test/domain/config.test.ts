import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.js';

describe('loadConfig', () => {
  it('has the documented defaults', () => {
    const c = loadConfig({});
    assert.equal(c.port, 3000);
    assert.equal(c.baseUrl, 'http://localhost:3000');
    assert.equal(c.emailDomain, 'localhost');
    assert.equal(c.smtpPort, 2525);
    assert.equal(c.defaultTtlSeconds, 604800);
    assert.equal(c.expiredGraceSeconds, 86400);
    assert.equal(c.createRateLimit, 30);
    assert.equal(c.createRateWindowSeconds, 60);
    assert.equal(c.maxEventsPerAddress, 10000);
    assert.equal(c.maxPayloadBytes, 1048576);
    assert.equal(c.maxEmailBytes, 10485760);
    assert.equal(c.databaseUrl, undefined);
    assert.equal(c.requestTimeoutMs, 30_000);
    assert.equal(c.headersTimeoutMs, 10_000);
    assert.equal(c.logGroupCommitStats, false);
    assert.equal(loadConfig({ RA_DEBUG_GROUP_COMMIT: '1' }).logGroupCommitStats, true);
    assert.ok(Object.isFrozen(c));
  });

  it('derives the email domain from BASE_URL and strips a trailing slash', () => {
    const c = loadConfig({ BASE_URL: 'https://Ra.Example.com:8443/' });
    assert.equal(c.baseUrl, 'https://ra.example.com:8443');
    assert.equal(c.emailDomain, 'ra.example.com');
  });

  it('refuses bad values, naming the variable', () => {
    const bad: Record<string, string>[] = [
      { PORT: 'eighty' },
      { PORT: '70000' },
      { BASE_URL: 'ftp://x' },
      { BASE_URL: 'not a url' },
      { DATABASE_URL: 'mysql://x' },
      { DEFAULT_TTL_SECONDS: '0' },
      { MAX_PAYLOAD_BYTES: '1.5' },
      { LOG_LEVEL: 'loud' },
      { TRUST_PROXY: 'maybe' },
      { TRUST_PROXY: '10.0.0.0/33' },
      { SMTP_TLS_CERT: '/tmp/cert.pem' },
      { CREATE_RATE_LIMIT: '-1' },
      { RA_DEBUG_GROUP_COMMIT: 'verbose' },
    ];
    for (const env of bad) {
      const name = Object.keys(env)[0]!;
      assert.throws(
        () => loadConfig(env),
        (e: unknown) => e instanceof ConfigError && e.message.includes(name === 'SMTP_TLS_CERT' ? 'SMTP_TLS_KEY' : name),
        JSON.stringify(env),
      );
    }
  });

  it('MAX_EVENT_BYTES: 4 MiB by default, MAX_PAGE_BYTES when that is smaller, never above it (every event fits a page)', () => {
    assert.equal(loadConfig({}).maxEventBytes, 4 * 1024 * 1024);
    assert.equal(loadConfig({ MAX_PAGE_BYTES: '65536' }).maxEventBytes, 65536);
    assert.throws(
      () => loadConfig({ MAX_PAGE_BYTES: '65536', MAX_EVENT_BYTES: '65537' }),
      (e: unknown) => e instanceof ConfigError && e.variable === 'MAX_EVENT_BYTES',
    );
    assert.equal(loadConfig({}).maxStreamsPerAddress, 100);
    assert.equal(loadConfig({}).maxStreamsPerClient, 200);
  });

  it('lets operators go below the client ranges so expiry can be watched', () => {
    const c = loadConfig({ DEFAULT_TTL_SECONDS: '1', EXPIRED_GRACE_SECONDS: '0' });
    assert.equal(c.defaultTtlSeconds, 1);
    assert.equal(c.expiredGraceSeconds, 0);
  });

  it('TRUST_PROXY takes a hop count or proxy addresses, never every hop', () => {
    assert.equal(loadConfig({}).trustProxy, false);
    assert.equal(loadConfig({ TRUST_PROXY: 'true' }).trustProxy, 1);
    assert.equal(loadConfig({ TRUST_PROXY: '2' }).trustProxy, 2);
    assert.deepEqual(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 192.168.1.5,::1' }).trustProxy, ['10.0.0.0/8', '192.168.1.5', '::1']);
  });

  it('untrusted-parsing settings: defaults, ranges, and an in-flight budget that holds one largest capture', () => {
    const c = loadConfig({});
    assert.deepEqual(
      [c.mailParseWorkers, c.mailParseTimeoutMs, c.mailParseMaxHeapMb, c.maxInflightCaptureBytes, c.ipv6PrefixBits, c.socketTimeoutMs],
      [2, 10_000, 256, 128 * 1024 * 1024, 64, 55_000],
    );
    assert.equal(
      loadConfig({ MAX_CAPTURE_BYTES: String(200 * 1024 * 1024) }).maxInflightCaptureBytes,
      200 * 1024 * 1024,
      'the default grows with MAX_CAPTURE_BYTES',
    );
    assert.throws(
      () => loadConfig({ MAX_INFLIGHT_CAPTURE_BYTES: '1024' }),
      (e: unknown) => e instanceof ConfigError && e.variable === 'MAX_INFLIGHT_CAPTURE_BYTES' && /MAX_CAPTURE_BYTES/.test(e.message),
    );
    assert.throws(
      () => loadConfig({ IPV6_PREFIX_BITS: '129' }),
      (e: unknown) => e instanceof ConfigError && e.variable === 'IPV6_PREFIX_BITS',
    );
    assert.throws(
      () => loadConfig({ MAIL_PARSE_WORKERS: '0' }),
      (e: unknown) => e instanceof ConfigError && e.variable === 'MAIL_PARSE_WORKERS',
    );
  });
});
