// Environment variables -> one typed, frozen Config, validated once at boot. A bad value stops the
// process with a message naming the variable, before anything listens.
import { isIP } from 'node:net';
import { parseBlockCidrs } from './abuse/block-list.js';
import { MAX_WAIT_SECONDS } from './domain/long-poll.js';
import { MAX_RATE_WINDOW_MS } from './domain/rate-window.js';

export interface Config {
  /** Webhook subscriptions' delivery (src/push/: PUSH_*, MAX_SUBSCRIPTIONS_PER_ADDRESS). */
  readonly push: PushConfig;
  readonly port: number;
  readonly host: string;
  /** Public base URL, without a trailing slash; every URL the API hands out starts with it. */
  readonly baseUrl: string;
  /** Whether BASE_URL was set: unset behind a proxy, every URL handed out names localhost (warned at start). */
  readonly baseUrlConfigured: boolean;
  readonly dataDir: string;
  /** postgres://… selects the PostgreSQL store; undefined means embedded SQLite under dataDir. */
  readonly databaseUrl: string | undefined;
  readonly emailDomain: string;
  readonly smtpPort: number;
  readonly smtpHost: string;
  readonly smtpTlsCert: string | undefined;
  readonly smtpTlsKey: string | undefined;
  readonly logLevel: string;
  readonly defaultTtlSeconds: number;
  readonly expiredGraceSeconds: number;
  readonly sweepIntervalSeconds: number;
  readonly createRateLimit: number;
  readonly createRateWindowSeconds: number;
  readonly maxEventsPerAddress: number;
  /** Bytes of stored data and metadata one address may hold; the oldest acknowledged events make room. */
  readonly maxBytesPerAddress: number;
  readonly maxPayloadBytes: number;
  /** Largest body the capture URL takes (design.md, "Capture URL"). */
  readonly maxCaptureBytes: number;
  /** Stored JSON bytes one page of events may hold; at least MAX_EVENT_BYTES, so every event fits a page. */
  readonly maxPageBytes: number;
  /**
   * MAX_EVENT_BYTES: an event's stored JSON (data and metadata) is at most this (design.md, "Bounded work");
   * a body or attachment that does not fit is stored beside the event (src/blobs/event-blob.ts).
   */
  readonly maxEventBytes: number;
  /** Event streams one address may have open at once (MAX_STREAMS_PER_ADDRESS); more get 429. */
  readonly maxStreamsPerAddress: number;
  /** Event streams one client (IP) may have open at once, all addresses together (MAX_STREAMS_PER_CLIENT); more get 429. */
  readonly maxStreamsPerClient: number;
  readonly maxEmailBytes: number;
  /** Body bytes read and dropped after an early error answer (413, 404, 401...) before the socket is closed. */
  readonly maxDiscardBytes: number;
  /** Email bytes held in memory by all SMTP sessions together; past it, 452 (try later). */
  readonly smtpMaxBufferedBytes: number;
  /** SMTP connections one client IP may hold at once. */
  readonly smtpMaxConnectionsPerIp: number;
  /**
   * Which proxies may set X-Forwarded-For: false (none), a hop count, or addresses/CIDRs. Never
   * "every hop": then any client could name its own IP and dodge the create rate limit.
   */
  readonly trustProxy: false | number | string[];
  /** PG_POOL_SIZE: connections for deliveries, acks and lookups (short statements). */
  readonly pgPoolSize: number;
  /** PG_READ_POOL_SIZE: connections for pages, filtered reads, claims, blob reads and totals, apart so they never hold a delivery up. */
  readonly pgReadPoolSize: number;
  readonly pgStatementTimeoutMs: number;
  /** How long a client may take to send a whole request (headers and body); not the answer's wait. */
  readonly requestTimeoutMs: number;
  readonly headersTimeoutMs: number;
  readonly keepAliveTimeoutMs: number;
  /** A connection idle this long between requests is dropped (SOCKET_TIMEOUT_MS); never while a request is handled. */
  readonly socketTimeoutMs: number;
  /** An event stream sends a comment line after this long without an event (SSE_HEARTBEAT_MS). */
  readonly sseHeartbeatMs: number;
  /** An event stream whose client has not read its buffered events within this long is dropped (SSE_DRAIN_TIMEOUT_MS). */
  readonly sseDrainTimeoutMs: number;
  /** The shortest approval a client may ask for (MIN_APPROVAL_SECONDS, default 60; an operator may lower it to 1 for tests). */
  readonly minApprovalSeconds: number;
  /** Pending approvals one address may hold (MAX_PENDING_APPROVALS, default 100); one more is 429 too_many_approvals. */
  readonly maxPendingApprovals: number;
  /** Worker threads that parse, authenticate and extract received mail (MAIL_PARSE_WORKERS); none runs on the event loop. */
  readonly mailParseWorkers: number;
  /** Wall-clock budget of one mail's parse, and of its sender authentication beyond the DNS budget (MAIL_PARSE_TIMEOUT_MS). */
  readonly mailParseTimeoutMs: number;
  /** Heap of one mail-parsing worker (MAIL_PARSE_MAX_HEAP_MB); a worker past it is ended and the mail stored unparsed. */
  readonly mailParseMaxHeapMb: number;
  /** Capture body bytes being received by all requests together (MAX_INFLIGHT_CAPTURE_BYTES); past it, 503 with Retry-After. */
  readonly maxInflightCaptureBytes: number;
  /** Per-client limits key an IPv6 client on this many leading bits of its address (IPV6_PREFIX_BITS). */
  readonly ipv6PrefixBits: number;
  /** RA_DEBUG_GROUP_COMMIT: log the SQLite group commit's counters every second while it works. */
  readonly logGroupCommitStats: boolean;
  /** METRICS_PORT: Prometheus /metrics on its own listener (never the public port); undefined = off. */
  readonly metricsPort: number | undefined;
  /** METRICS_HOST: where the metrics listener binds (default 127.0.0.1: scraped from this host or a sidecar). */
  readonly metricsHost: string;
  /** RETAIN_ACKED_SECONDS: acknowledged events older than this (since their ack) are deleted; undefined = kept. */
  readonly retainAckedSeconds: number | undefined;
  /** CREATE_TOKENS: when not empty, creating an address requires Authorization: Bearer <one of them>. */
  readonly createTokens: readonly string[];
  /** MAX_TTL_SECONDS: the longest expires_in_seconds a create may ask for; undefined = the schema's own limit. */
  readonly maxTtlSeconds: number | undefined;
  /** DELIVERY_RATE_LIMIT: deliveries per address per window over inbox, capture and mail; undefined = no limit. */
  readonly deliveryRateLimit: number | undefined;
  readonly deliveryRateWindowSeconds: number;
  /** BLOCK_CIDRS: IPs and prefixes whose creates and deliveries are refused (403 blocked; SMTP 550). */
  readonly blockCidrs: readonly string[];
  /** DELIVERY_RATE_LIMIT_PER_IP per DELIVERY_RATE_PER_IP_WINDOW_SECONDS: deliveries per client key across addresses. */
  readonly deliveryRateLimitPerIp: number | undefined;
  readonly deliveryRatePerIpWindowSeconds: number;
}

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    detail: string,
  ) {
    super(`${variable}: ${detail}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

function raw(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

function int(env: Env, name: string, dflt: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const v = raw(env, name);
  if (v === undefined) return dflt;
  if (!/^\d+$/.test(v)) throw new ConfigError(name, `must be a whole number, got ${JSON.stringify(v)}`);
  const n = Number(v);
  if (n < min || n > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${n}`);
  return n;
}

/** A whole number, or undefined when the variable is unset (the control it sets is off). */
function optionalInt(env: Env, name: string, min: number, max = Number.MAX_SAFE_INTEGER): number | undefined {
  return raw(env, name) === undefined ? undefined : int(env, name, 0, min, max);
}

function blockCidrs(env: Env): string[] {
  const v = raw(env, 'BLOCK_CIDRS');
  if (v === undefined) return [];
  const parsed = parseBlockCidrs(v);
  if ('error' in parsed) throw new ConfigError('BLOCK_CIDRS', `${parsed.error}; list IPs or prefixes separated by commas`);
  return parsed.entries;
}

/**
 * CREATE_TOKENS: comma-separated bearer tokens, each 16 to 256 visible ASCII characters (no space or
 * comma), so a token is a header value as-is and too long to guess.
 */
function createTokens(env: Env): string[] {
  const v = raw(env, 'CREATE_TOKENS');
  if (v === undefined) return [];
  const tokens = v.split(',').map((t) => t.trim());
  for (const [i, t] of tokens.entries()) {
    if (!/^[\x21-\x2b\x2d-\x7e]{16,256}$/.test(t)) {
      throw new ConfigError('CREATE_TOKENS', `token ${i + 1} must be 16 to 256 visible ASCII characters without spaces or commas (got ${t.length} characters)`);
    }
  }
  return tokens;
}

function bool(env: Env, name: string, dflt: boolean): boolean {
  const v = raw(env, name);
  if (v === undefined) return dflt;
  if (/^(1|true|yes|on)$/i.test(v)) return true;
  if (/^(0|false|no|off)$/i.test(v)) return false;
  throw new ConfigError(name, `must be true or false, got ${JSON.stringify(v)}`);
}

/**
 * TRUST_PROXY: false (default), true (= 1: one load balancer in front), a hop count, or a comma
 * list of proxy addresses and CIDR ranges (Fastify's trustProxy takes all three forms).
 */
function trustProxy(env: Env): false | number | string[] {
  const v = raw(env, 'TRUST_PROXY');
  if (v === undefined || /^(0|false|no|off)$/i.test(v)) return false;
  if (/^(true|yes|on)$/i.test(v)) return 1;
  if (/^\d+$/.test(v)) return int(env, 'TRUST_PROXY', 0, 1, 32);
  const list = v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const item of list) {
    const [ip, bits, extra] = item.split('/');
    const isIp = isIP(ip ?? '');
    const maxBits = isIp === 6 ? 128 : 32;
    if (!isIp || extra !== undefined || (bits !== undefined && (!/^\d+$/.test(bits) || Number(bits) > maxBits))) {
      throw new ConfigError(
        'TRUST_PROXY',
        `must be false, true, a hop count, or a comma list of IP addresses or CIDR ranges; ${JSON.stringify(item)} is none of them`,
      );
    }
  }
  return list;
}

/** Svix's schedule: 8 attempts over about 27.5 h (immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h). */
export const SVIX_SCHEDULE_MS = [0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];

/** The push worker's settings (design.md, "Push subscriptions"). */
export interface PushConfig {
  /** PUSH_ALLOW_PRIVATE: targets may be http:// and resolve to loopback, private, link-local addresses (tests, a private network). */
  readonly allowPrivate: boolean;
  /** PUSH_RETRY_SCHEDULE_MS: the delay before each attempt at one event; its length is the number of attempts. */
  readonly retryScheduleMs: readonly number[];
  /** PUSH_TIMEOUT_MS (15 s), PUSH_CONCURRENCY (attempts in flight per instance), MAX_SUBSCRIPTIONS_PER_ADDRESS. */
  readonly timeoutMs: number;
  readonly concurrency: number;
  readonly maxPerAddress: number;
  /** PUSH_LEASE_MS: a dead instance's subscriptions are taken over after it; PUSH_SWEEP_MS: leases renewed, free ones taken. */
  readonly leaseMs: number;
  readonly sweepMs: number;
  /** PUSH_MAX_SUBSCRIPTIONS_PER_INSTANCE: subscriptions one instance delivers at once. */
  readonly maxPerInstance: number;
  /** PUSH_SEAL_KEY: base64 of 32 bytes sealing the subscriptions' secrets; unset, a key file in DATA_DIR (push-seal.key). */
  readonly sealSecret: Buffer | undefined;
  /** PUSH_ROTATION_GRACE_MS: after a refresh brings a new secret, how long requests are signed with the old one too (0: never). */
  readonly rotationGraceMs: number;
}

function pushConfig(env: Env): PushConfig {
  const schedule =
    raw(env, 'PUSH_RETRY_SCHEDULE_MS')
      ?.split(',')
      .map((p) => p.trim()) ?? SVIX_SCHEDULE_MS.map(String);
  if (schedule.length > 20 || schedule.some((p) => !/^\d{1,10}$/.test(p))) {
    throw new ConfigError('PUSH_RETRY_SCHEDULE_MS', 'must be 1-20 comma-separated delays in milliseconds, e.g. 0,5000,300000');
  }
  const key = raw(env, 'PUSH_SEAL_KEY');
  const sealSecret = key === undefined ? undefined : Buffer.from(key, 'base64');
  if (sealSecret !== undefined && sealSecret.length !== 32)
    throw new ConfigError('PUSH_SEAL_KEY', 'must be base64 of 32 random bytes (openssl rand -base64 32)');
  return Object.freeze({
    allowPrivate: bool(env, 'PUSH_ALLOW_PRIVATE', false),
    retryScheduleMs: Object.freeze(schedule.map(Number)),
    timeoutMs: int(env, 'PUSH_TIMEOUT_MS', 15_000, 100, 300_000),
    concurrency: int(env, 'PUSH_CONCURRENCY', 16, 1, 10_000),
    maxPerAddress: int(env, 'MAX_SUBSCRIPTIONS_PER_ADDRESS', 10, 1, 1000),
    leaseMs: int(env, 'PUSH_LEASE_MS', 10_000, 500, 600_000),
    sweepMs: int(env, 'PUSH_SWEEP_MS', 2_000, 50, 600_000),
    maxPerInstance: int(env, 'PUSH_MAX_SUBSCRIPTIONS_PER_INSTANCE', 1000, 1, 1_000_000),
    sealSecret,
    rotationGraceMs: int(env, 'PUSH_ROTATION_GRACE_MS', 300_000, 0, 86_400_000),
  });
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
/** MCP wait_for_event's longest wait (design.md, "MCP"): agent clients cut a tool call at about 60 s. */
export const MAX_MCP_WAIT_SECONDS = 55;

/** What a client told it has too many event streams (MAX_STREAMS_PER_ADDRESS, MAX_STREAMS_PER_CLIENT) waits before retrying. */
export const TOO_MANY_STREAMS_RETRY_AFTER_SECONDS = 10;

/**
 * Bytes of SSE frames rendered once and shared by every stream that sends the same event (design.md,
 * "Bounded work": render once, share the bytes), least recently used out past it.
 */
export const FRAME_CACHE_BYTES = 64 * 1024 * 1024;

export function loadConfig(env: Env = process.env): Config {
  const port = int(env, 'PORT', 3000, 0, 65535);
  const host = raw(env, 'HOST') ?? '0.0.0.0';

  const baseUrlRaw = raw(env, 'BASE_URL') ?? `http://localhost:${port}`;
  let base: URL;
  try {
    base = new URL(baseUrlRaw);
  } catch {
    throw new ConfigError('BASE_URL', `must be an absolute http(s) URL, got ${JSON.stringify(baseUrlRaw)}`);
  }
  if (base.protocol !== 'http:' && base.protocol !== 'https:') {
    throw new ConfigError('BASE_URL', `must use http or https, got ${base.protocol}`);
  }
  if (base.search || base.hash) throw new ConfigError('BASE_URL', 'must not carry a query or fragment');
  const baseUrl = base.toString().replace(/\/+$/, '');

  const databaseUrl = raw(env, 'DATABASE_URL');
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL', 'must start with postgres:// or postgresql:// (leave it unset for embedded SQLite)');
  }

  const emailDomain = (raw(env, 'EMAIL_DOMAIN') ?? base.hostname).toLowerCase();
  if (!/^[a-z0-9.-]+$|^\[[0-9a-f:.]+\]$/i.test(emailDomain)) {
    throw new ConfigError('EMAIL_DOMAIN', `is not a domain name: ${JSON.stringify(emailDomain)}`);
  }

  const logLevel = raw(env, 'LOG_LEVEL') ?? 'info';
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}`);

  const smtpTlsCert = raw(env, 'SMTP_TLS_CERT');
  const smtpTlsKey = raw(env, 'SMTP_TLS_KEY');
  if ((smtpTlsCert === undefined) !== (smtpTlsKey === undefined)) {
    throw new ConfigError(smtpTlsCert === undefined ? 'SMTP_TLS_CERT' : 'SMTP_TLS_KEY', 'SMTP_TLS_CERT and SMTP_TLS_KEY go together');
  }

  const maxTtlSeconds = optionalInt(env, 'MAX_TTL_SECONDS', 1, 10 * 365 * 24 * 3600);
  // Unset, the default TTL follows the cap down; set explicitly above it, it is a contradiction.
  const defaultTtlSeconds = int(env, 'DEFAULT_TTL_SECONDS', Math.min(7 * 24 * 3600, maxTtlSeconds ?? Number.MAX_SAFE_INTEGER), 1, 10 * 365 * 24 * 3600);
  if (maxTtlSeconds !== undefined && defaultTtlSeconds > maxTtlSeconds) {
    throw new ConfigError('DEFAULT_TTL_SECONDS', `must not exceed MAX_TTL_SECONDS (${maxTtlSeconds}), got ${defaultTtlSeconds}`);
  }
  const metricsPort = optionalInt(env, 'METRICS_PORT', 0, 65535);
  if (metricsPort !== undefined && metricsPort !== 0 && metricsPort === port) {
    throw new ConfigError('METRICS_PORT', `must differ from PORT (${port}): /metrics is never served on the public port`);
  }

  const requestTimeoutMs = int(env, 'REQUEST_TIMEOUT_MS', 30_000, 1000);
  const headersTimeoutMs = int(env, 'HEADERS_TIMEOUT_MS', Math.min(10_000, requestTimeoutMs), 1000);
  if (headersTimeoutMs > requestTimeoutMs) throw new ConfigError('HEADERS_TIMEOUT_MS', `must not exceed REQUEST_TIMEOUT_MS (${requestTimeoutMs})`);

  const maxCaptureBytes = int(env, 'MAX_CAPTURE_BYTES', 25 * 1024 * 1024, 1024, 256 * 1024 * 1024);
  const maxInflightCaptureBytes = int(env, 'MAX_INFLIGHT_CAPTURE_BYTES', Math.max(128 * 1024 * 1024, maxCaptureBytes), 1024);
  // Otherwise a capture of the largest allowed size could never be received.
  if (maxInflightCaptureBytes < maxCaptureBytes) throw new ConfigError('MAX_INFLIGHT_CAPTURE_BYTES', `must be at least MAX_CAPTURE_BYTES (${maxCaptureBytes})`);
  const maxPageBytes = int(env, 'MAX_PAGE_BYTES', 8 * 1024 * 1024, 1024, 256 * 1024 * 1024);
  // Every event fits in a page, so no read path needs an "at least one event" exception.
  const maxEventBytes = int(env, 'MAX_EVENT_BYTES', Math.min(4 * 1024 * 1024, maxPageBytes), 1024, 64 * 1024 * 1024);
  if (maxEventBytes > maxPageBytes)
    throw new ConfigError('MAX_EVENT_BYTES', `must not exceed MAX_PAGE_BYTES (${maxPageBytes}): every event must fit in a page`);

  return Object.freeze({
    port,
    host,
    baseUrl,
    baseUrlConfigured: raw(env, 'BASE_URL') !== undefined,
    dataDir: raw(env, 'DATA_DIR') ?? './data',
    databaseUrl,
    emailDomain,
    smtpPort: int(env, 'SMTP_PORT', 2525, 0, 65535),
    smtpHost: raw(env, 'SMTP_HOST') ?? host,
    smtpTlsCert,
    smtpTlsKey,
    logLevel,
    defaultTtlSeconds,
    expiredGraceSeconds: int(env, 'EXPIRED_GRACE_SECONDS', 24 * 3600, 0),
    sweepIntervalSeconds: int(env, 'SWEEP_INTERVAL_SECONDS', 60, 1, 24 * 3600),
    createRateLimit: int(env, 'CREATE_RATE_LIMIT', 30, 1),
    createRateWindowSeconds: int(env, 'CREATE_RATE_WINDOW_SECONDS', 60, 1, MAX_RATE_WINDOW_MS / 1000),
    maxEventsPerAddress: int(env, 'MAX_EVENTS_PER_ADDRESS', 10_000, 1),
    maxBytesPerAddress: int(env, 'MAX_BYTES_PER_ADDRESS', 512 * 1024 * 1024, 1024),
    maxPayloadBytes: int(env, 'MAX_PAYLOAD_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    maxCaptureBytes,
    maxPageBytes,
    maxEventBytes,
    maxStreamsPerAddress: int(env, 'MAX_STREAMS_PER_ADDRESS', 100, 1, 1_000_000),
    maxStreamsPerClient: int(env, 'MAX_STREAMS_PER_CLIENT', 200, 1, 1_000_000),
    maxDiscardBytes: int(env, 'MAX_DISCARD_BYTES', 8 * 1024 * 1024, 0, 1024 * 1024 * 1024),
    maxEmailBytes: int(env, 'MAX_EMAIL_BYTES', 10 * 1024 * 1024, 1024, 256 * 1024 * 1024),
    smtpMaxBufferedBytes: int(env, 'SMTP_MAX_BUFFERED_BYTES', 256 * 1024 * 1024, 1024),
    smtpMaxConnectionsPerIp: int(env, 'SMTP_MAX_CONNECTIONS_PER_IP', 20, 1, 100_000),
    trustProxy: trustProxy(env),
    pgPoolSize: int(env, 'PG_POOL_SIZE', 10, 1, 1000),
    pgReadPoolSize: int(env, 'PG_READ_POOL_SIZE', 10, 1, 1000),
    pgStatementTimeoutMs: int(env, 'PG_STATEMENT_TIMEOUT_MS', 10_000, 0),
    requestTimeoutMs,
    headersTimeoutMs,
    keepAliveTimeoutMs: int(env, 'KEEP_ALIVE_TIMEOUT_MS', 5_000, 100),
    socketTimeoutMs: int(env, 'SOCKET_TIMEOUT_MS', (MAX_WAIT_SECONDS + 30) * 1000, 1000),
    // Below the 55 s idle-socket timeout, which a heartbeat resets.
    sseHeartbeatMs: int(env, 'SSE_HEARTBEAT_MS', 15_000, 50, 30_000),
    sseDrainTimeoutMs: int(env, 'SSE_DRAIN_TIMEOUT_MS', 10_000, 50, 300_000),
    mailParseWorkers: int(env, 'MAIL_PARSE_WORKERS', 2, 1, 64),
    mailParseTimeoutMs: int(env, 'MAIL_PARSE_TIMEOUT_MS', 10_000, 100, 300_000),
    mailParseMaxHeapMb: int(env, 'MAIL_PARSE_MAX_HEAP_MB', 256, 16, 16_384),
    maxInflightCaptureBytes,
    ipv6PrefixBits: int(env, 'IPV6_PREFIX_BITS', 64, 1, 128),
    logGroupCommitStats: bool(env, 'RA_DEBUG_GROUP_COMMIT', false),
    metricsPort,
    metricsHost: raw(env, 'METRICS_HOST') ?? '127.0.0.1',
    retainAckedSeconds: optionalInt(env, 'RETAIN_ACKED_SECONDS', 1, 10 * 365 * 24 * 3600),
    createTokens: createTokens(env),
    maxTtlSeconds,
    deliveryRateLimit: optionalInt(env, 'DELIVERY_RATE_LIMIT', 1, 1_000_000_000),
    deliveryRateWindowSeconds: int(env, 'DELIVERY_RATE_WINDOW_SECONDS', 60, 1, MAX_RATE_WINDOW_MS / 1000),
    blockCidrs: blockCidrs(env),
    deliveryRateLimitPerIp: optionalInt(env, 'DELIVERY_RATE_LIMIT_PER_IP', 1, 1_000_000_000),
    deliveryRatePerIpWindowSeconds: int(env, 'DELIVERY_RATE_PER_IP_WINDOW_SECONDS', 60, 1, MAX_RATE_WINDOW_MS / 1000),
    minApprovalSeconds: int(env, 'MIN_APPROVAL_SECONDS', 60, 1, 86_400),
    maxPendingApprovals: int(env, 'MAX_PENDING_APPROVALS', 100, 1, 100_000),
    push: pushConfig(env),
  });
}
