// Process entry: configuration, the composition (compose.ts), the HTTP, SMTP and metrics listeners, the sweeper, graceful shutdown.
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { compose } from './compose.js';
import { type Config, ConfigError, loadConfig } from './config.js';
import type { ReturnAddressService } from './domain/return-address-service.js';
import type { DnsResolver } from './email/sender-authentication.js';
import { type SmtpListener, startSmtpListener } from './email/smtp-listener.js';
import { loggerOptions } from './http/plugins/request-logging.js';
import { type MetricsListener, startMetricsListener } from './metrics/metrics-listener.js';
import type { ServiceMetrics } from './metrics/service-metrics.js';
import type { Push } from './push/push.js';
import type { Resolve } from './push/target-guard.js';
import { logStartupSettings } from './startup-settings.js';
import { SchemaTooNewError } from './storage/migration-files.js';
import type { OpenedStore } from './storage/open-store.js';
import type { InProcessWakeupHub } from './wakeup/wakeup-hub.js';

export interface RunningService {
  config: Config;
  httpUrl: string;
  app: FastifyInstance;
  store: OpenedStore;
  hub: InProcessWakeupHub;
  service: ReturnAddressService;
  /** Webhook subscriptions: their rules and the worker delivering them (started with the listeners). */
  push: Push;
  /** The Prometheus series and their listener's URL, when METRICS_PORT is set. */
  metrics?: { series: ServiceMetrics; url: string };
  stop(): Promise<void>;
  /** SIGHUP: reload SMTP_TLS_CERT/KEY (a renewed certificate) without dropping the SMTP listener. */
  reloadTls(): void;
}

export interface StartOptions {
  /** A logger to use instead of building one from config.logLevel (tests capture logs with it). */
  logger?: FastifyBaseLogger;
  /** DNS for the SMTP listener's SPF/DKIM/DMARC checks, and its bounds (tests run offline with these). */
  dnsResolver?: DnsResolver;
  dnsLookupTimeoutMs?: number;
  authenticationBudgetMs?: number;
  /** DNS for webhook targets' address check (tests make a name resolve to a private address). */
  pushResolve?: Resolve;
}

export async function startService(config: Config, opts: StartOptions = {}): Promise<RunningService> {
  // One logger for the process, made before the store so that the store's background failures
  // (a lost connection, a reconnect) reach the same log as the requests.
  const log: FastifyBaseLogger = opts.logger ?? pino(loggerOptions(config.logLevel));
  logStartupSettings(config, log);
  const { app, store, hub, service, metrics, sweeper, blockList, deliveryLimit, push } = await compose(config, log, { pushResolve: opts.pushResolve });
  let smtp: SmtpListener | undefined;
  let metricsListener: MetricsListener | undefined;
  try {
    // A deep accept queue: webhook bursts and thousands of long-polls connect at once.
    const httpUrl = await app.listen({ port: config.port, host: config.host, backlog: 4096 });
    smtp = await startSmtpListener(
      service,
      {
        port: config.smtpPort,
        host: config.smtpHost,
        emailDomain: config.emailDomain,
        maxEmailBytes: config.maxEmailBytes,
        baseUrl: config.baseUrl,
        maxEventBytes: config.maxEventBytes,
        tlsCertFile: config.smtpTlsCert,
        tlsKeyFile: config.smtpTlsKey,
        maxBufferedBytes: config.smtpMaxBufferedBytes,
        maxConnectionsPerIp: config.smtpMaxConnectionsPerIp,
        blockList,
        deliveryLimit,
        dnsResolver: opts.dnsResolver,
        dnsLookupTimeoutMs: opts.dnsLookupTimeoutMs,
        authenticationBudgetMs: opts.authenticationBudgetMs,
        mailParseWorkers: config.mailParseWorkers,
        mailParseTimeoutMs: config.mailParseTimeoutMs,
        mailParseMaxHeapMb: config.mailParseMaxHeapMb,
        ipv6PrefixBits: config.ipv6PrefixBits,
      },
      app.log.child({ component: 'smtp' }),
    );
    if (metrics && config.metricsPort !== undefined) {
      metricsListener = await startMetricsListener(metrics, config.metricsPort, config.metricsHost, app.log.child({ component: 'metrics' }));
      app.log.info({ url: metricsListener.url }, 'metrics listening');
    }
    sweeper.start();
    push.worker.start();

    const started = { app, smtp };
    let stopping: Promise<void> | undefined;
    const stop = () =>
      (stopping ??= (async () => {
        started.app.log.info('shutting down: ending long-polls, draining requests');
        // Before the hub: an attempt under way is cut off (its event is sent again later), leases given up.
        await push.worker.stop();
        // Waiting reads answer with an empty page now, instead of being cut off.
        hub.shutdown();
        await sweeper.stop();
        // Before the store closes: messages being stored get their 250, then SMTP clients get 421.
        await started.smtp.close();
        // Fastify closes the connections idle when close() starts; a request answered after that
        // (a long-poll ended by the hub's shutdown, answered after a query on PostgreSQL) left its
        // keep-alive connection open until the socket timeout, and a proxy's pooled connections
        // held a stop for 55 s: closed as they become idle.
        const idle = setInterval(() => started.app.server.closeIdleConnections(), 100);
        await started.app.close().finally(() => clearInterval(idle));
        await metricsListener?.close();
        await store.close();
      })());
    const reloadTls = () => {
      try {
        started.smtp.reloadTls();
      } catch (err) {
        started.app.log.error({ err }, 'SMTP TLS certificate not reloaded; the one in use stays');
      }
    };
    return {
      config,
      httpUrl,
      app,
      store,
      hub,
      service,
      push,
      metrics: metrics && metricsListener && { series: metrics, url: metricsListener.url },
      stop,
      reloadTls,
    };
  } catch (err) {
    // A failed start (port taken, bad TLS file) must not leave pools, listeners or files open.
    await push.worker.stop().catch(() => {});
    await smtp?.close().catch(() => {});
    await metricsListener?.close().catch(() => {});
    await app.close().catch(() => {});
    await store.close().catch(() => {});
    throw err;
  }
}

/** The process entry, also `return-address serve`. */
export async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`return-address: invalid configuration: ${err.message}`);
      process.exit(1);
    }
    throw err;
  }
  // The handlers are in place before the service starts: it answers /readyz (HTTP listens) before
  // start-up has finished, and a SIGTERM in that gap must still stop it gracefully, never kill it.
  let running: RunningService | undefined;
  let signalled = false;
  const stop = (service: RunningService) =>
    service.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        console.error('return-address: shutdown failed', err);
        process.exit(1);
      },
    );
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      if (signalled) return;
      signalled = true;
      if (running !== undefined) void stop(running);
    });
  }
  try {
    running = await startService(config);
  } catch (err) {
    // A refusal is an operator's situation, not a crash: one line that says what to do.
    if (err instanceof SchemaTooNewError) {
      console.error(`return-address: refusing to start: ${err.message}`);
      process.exit(1);
    }
    throw err;
  }
  const service = running;
  // Asked to stop while it was starting: stop now that there is something to stop.
  if (signalled) void stop(service);
  // A renewal hook (certbot --deploy-hook, systemd ExecReload) sends SIGHUP after replacing the
  // files. Only with STARTTLS on: otherwise SIGHUP keeps its default, so closing the terminal a
  // foreground service runs in still ends it instead of leaving it holding the ports.
  if (config.smtpTlsCert !== undefined && config.smtpTlsKey !== undefined) process.on('SIGHUP', () => service.reloadTls());
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((err: unknown) => {
    console.error('return-address: failed to start', err);
    process.exit(1);
  });
}
