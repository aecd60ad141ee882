// The push worker's settings (design.md, "Push subscriptions"), read with the rest of the
// configuration (config.ts calls loadPushConfig): a bad value stops the process naming the variable.

/** Svix's schedule: 8 attempts over about 27.5 h (immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h). */
export const SVIX_SCHEDULE_MS = [0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];

export interface PushConfig {
  /** PUSH_ALLOW_PRIVATE: targets may be http:// and resolve to loopback, private, link-local addresses (tests, a private network). */
  readonly allowPrivate: boolean;
  /** PUSH_RETRY_SCHEDULE_MS: the delay before each attempt of one event, the first usually 0; its length is the number of attempts. */
  readonly retryScheduleMs: readonly number[];
  /** PUSH_TIMEOUT_MS: how long one attempt may take to get its answer (15 s, as Svix). */
  readonly timeoutMs: number;
  /** PUSH_CONCURRENCY: attempts this instance has in flight at once, all subscriptions together. */
  readonly concurrency: number;
  /** MAX_SUBSCRIPTIONS_PER_ADDRESS. */
  readonly maxPerAddress: number;
  /** PUSH_LEASE_MS: how long an instance holds a subscription without renewing it; a dead instance's are taken over after it. */
  readonly leaseMs: number;
  /** PUSH_SWEEP_MS: the safety sweep (leases renewed, free ones taken, expired ones deleted, due retries started). */
  readonly sweepMs: number;
  /** PUSH_MAX_SUBSCRIPTIONS_PER_INSTANCE: subscriptions one instance delivers at once (the rest wait for another instance or a free slot). */
  readonly maxPerInstance: number;
  /** PUSH_SEAL_KEY: base64 of 32 bytes sealing the subscriptions' secrets; unset, a key file in DATA_DIR (push-seal.key). */
  readonly sealSecret: Buffer | undefined;
}

type Env = Record<string, string | undefined>;
type Fail = (name: string, message: string) => never;

const raw = (env: Env, name: string) => {
  const v = env[name]?.trim();
  return v === undefined || v === '' ? undefined : v;
};

function int(env: Env, name: string, dflt: number, min: number, max: number, fail: Fail): number {
  const v = raw(env, name);
  if (v === undefined) return dflt;
  if (!/^\d+$/.test(v)) fail(name, `must be a whole number, got ${JSON.stringify(v)}`);
  const n = Number(v);
  if (n < min || n > max) fail(name, `must be between ${min} and ${max}, got ${n}`);
  return n;
}

function schedule(env: Env, fail: Fail): number[] {
  const v = raw(env, 'PUSH_RETRY_SCHEDULE_MS');
  if (v === undefined) return SVIX_SCHEDULE_MS;
  const parts = v.split(',').map((s) => s.trim());
  if (parts.length < 1 || parts.length > 20 || parts.some((p) => !/^\d{1,10}$/.test(p))) {
    fail('PUSH_RETRY_SCHEDULE_MS', 'must be 1-20 comma-separated delays in milliseconds, e.g. 0,5000,300000');
  }
  return parts.map(Number);
}

function sealSecret(env: Env, fail: Fail): Buffer | undefined {
  const v = raw(env, 'PUSH_SEAL_KEY');
  if (v === undefined) return undefined;
  const key = Buffer.from(v, 'base64');
  if (key.length !== 32) fail('PUSH_SEAL_KEY', 'must be base64 of 32 random bytes (openssl rand -base64 32)');
  return key;
}

export function loadPushConfig(env: Env, fail: Fail): PushConfig {
  const allow = raw(env, 'PUSH_ALLOW_PRIVATE');
  if (allow !== undefined && !/^(1|true|yes|on|0|false|no|off)$/i.test(allow))
    fail('PUSH_ALLOW_PRIVATE', `must be true or false, got ${JSON.stringify(allow)}`);
  return Object.freeze({
    allowPrivate: allow !== undefined && /^(1|true|yes|on)$/i.test(allow),
    retryScheduleMs: Object.freeze(schedule(env, fail)),
    timeoutMs: int(env, 'PUSH_TIMEOUT_MS', 15_000, 100, 300_000, fail),
    concurrency: int(env, 'PUSH_CONCURRENCY', 16, 1, 10_000, fail),
    maxPerAddress: int(env, 'MAX_SUBSCRIPTIONS_PER_ADDRESS', 10, 1, 1000, fail),
    leaseMs: int(env, 'PUSH_LEASE_MS', 10_000, 500, 600_000, fail),
    sweepMs: int(env, 'PUSH_SWEEP_MS', 2_000, 50, 600_000, fail),
    maxPerInstance: int(env, 'PUSH_MAX_SUBSCRIPTIONS_PER_INSTANCE', 1000, 1, 1_000_000, fail),
    sealSecret: sealSecret(env, fail),
  });
}
