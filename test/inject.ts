// Route contracts without a socket: the app that src/app.ts builds, over a real store (this test
// file's SQLite file or PostgreSQL database, as createTestStorage makes), answered through Fastify's
// `inject` (fastify/demo's habit). It never listens and starts no SMTP listener or sweeper, so a test
// file that needs none of them boots in a fraction of a service's time. Transport behaviour (slow
// clients, draining, SSE backpressure, pipelining, kill tests) keeps real sockets (startTestService).
//
// `startInjectedService` answers the shape of a TestService the route tests use: its `baseUrl` is an
// origin no socket serves (http://inject-N.test), and helpers.ts's `api` sends a request for that
// origin through `inject`, so a moved test keeps every call and assertion as it was.
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { buildApp } from '../src/app.js';
import { Capture } from '../src/capture/capture.js';
import { loadConfig } from '../src/config.js';
import type { Store } from '../src/domain/ports.js';
import { ReturnAddressService } from '../src/domain/return-address-service.js';
import { SigningSecrets } from '../src/domain/signing-secrets.js';
import { loggerOptions } from '../src/http/plugins/request-logging.js';
import { composePush } from '../src/push/push.js';
import { SenderPolicies } from '../src/sender-policy/sender-policies.js';
import { openStore } from '../src/storage/open-store.js';
import { InProcessWakeupHub } from '../src/wakeup/wakeup-hub.js';
import { createTestStorage, type Res, type TestStorage } from './helpers.js';

export interface InjectedService {
  /** An origin no socket serves; helpers.ts's `api` routes it to `app.inject`. */
  baseUrl: string;
  app: FastifyInstance;
  store: Store;
  hub: InProcessWakeupHub;
  service: ReturnAddressService;
  storage: TestStorage;
  /** Closes the app and the store; asserts no long-poll waiter leaked; drops the storage unless `keepStorage`. */
  stop(opts?: { keepStorage?: boolean }): Promise<void>;
}

const apps = new Map<string, FastifyInstance>();
let built = 0;

/** Builds the app over a fresh store (or `storage`), ready for `inject`. `env` overrides configuration. */
export async function startInjectedService(env: Record<string, string> = {}, storage?: TestStorage): Promise<InjectedService> {
  const st = storage ?? (await createTestStorage());
  const baseUrl = `http://inject-${++built}.test`;
  const config = loadConfig({
    HOST: '127.0.0.1',
    BASE_URL: baseUrl,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    CREATE_RATE_LIMIT: '100000',
    ...st.env,
    ...env,
  });
  const log = pino(loggerOptions(config.logLevel));
  let store: Store | undefined;
  try {
    // The same composition as startService (src/server.ts), without the listeners and the sweeper.
    const openedStore = await openStore(config, log.child({ component: 'store' }));
    store = openedStore;
    const hub = new InProcessWakeupHub();
    const service = new ReturnAddressService(store, hub, config);
    const signingSecrets = new SigningSecrets(store);
    const capture = new Capture(service, signingSecrets, { baseUrl: config.baseUrl, maxEventBytes: config.maxEventBytes });
    const senderPolicies = new SenderPolicies(openedStore.senderPolicies);
    service.screen = senderPolicies;
    // Webhook subscriptions' routes; their worker is not started here (startService starts it).
    const push = composePush({ config, store: openedStore, service, hub, log });
    const app = await buildApp({ config, store, service, capture, signingSecrets, senderPolicies, subscriptions: push.subscriptions }, { loggerInstance: log });
    if (store.capabilities.crossInstanceWakeups && store.subscribe) {
      await store.subscribe(
        (addressId) => hub.notify(addressId),
        () => hub.notifyAll(),
      );
    }
    await app.ready();
    apps.set(baseUrl, app);
    const opened = store;
    let stopping: Promise<void> | undefined;
    return {
      baseUrl,
      app,
      store,
      hub,
      service,
      storage: st,
      stop: (opts = {}) =>
        (stopping ??= (async () => {
          apps.delete(baseUrl);
          hub.shutdown();
          await app.close();
          await opened.close();
          assert.equal(hub.size(), 0, 'no long-poll waiter may outlive the app');
          if (!opts.keepStorage && storage === undefined) await st.drop();
        })()),
    };
  } catch (err) {
    await store?.close().catch(() => {});
    if (storage === undefined) await st.drop().catch(() => {});
    throw err;
  }
}

/** The app that answers `url`, when its origin is an injected service's. */
export function injectedAppFor(url: string): FastifyInstance | undefined {
  const m = /^https?:\/\/inject-\d+\.test/.exec(url);
  return m ? apps.get(m[0]) : undefined;
}

/** One request through `inject`, answered in the shape of helpers.ts's `api`. */
export async function injectRequest(
  app: FastifyInstance,
  method: string,
  url: string,
  headers: Record<string, string>,
  body: string | undefined,
): Promise<Res> {
  const u = new URL(url);
  const t0 = performance.now();
  const res = await app.inject({
    method: method as 'GET',
    url: u.pathname + u.search,
    // What fetch sends on its own; the Host of the service's own URLs.
    headers: { host: u.host, accept: '*/*', 'user-agent': 'node', ...headers },
    ...(body === undefined ? {} : { payload: body }),
  });
  const h = new Headers();
  for (const [name, value] of Object.entries(res.headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) h.append(name, String(v));
  }
  const text = res.body;
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.statusCode, headers: h, text, json, ms: performance.now() - t0 };
}
