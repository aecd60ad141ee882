// GET /metrics on its own listener (METRICS_PORT), apart from the public port: what an operator
// scrapes is not served to the internet, and a scrape never queues behind public traffic's
// connection limits. Only GET/HEAD /metrics; anything else is 404 or 405.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Log } from '../domain/ports.js';
import type { ServiceMetrics } from './service-metrics.js';

export interface MetricsListener {
  url: string;
  close(): Promise<void>;
}

export async function startMetricsListener(metrics: ServiceMetrics, port: number, host: string, log: Log): Promise<MetricsListener> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('Not found: metrics are at /metrics\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end('Method not allowed\n');
      return;
    }
    metrics.registry.metrics().then(
      (text) => {
        res.writeHead(200, { 'content-type': metrics.registry.contentType, 'cache-control': 'no-store' });
        res.end(req.method === 'HEAD' ? undefined : text);
      },
      (err: unknown) => {
        log.error({ err }, 'collecting metrics failed');
        res.writeHead(503, { 'content-type': 'text/plain; charset=utf-8' }).end('Metrics could not be collected; see the service log\n');
      },
    );
  });
  server.keepAliveTimeout = 5_000;
  server.requestTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port: bound } = server.address() as AddressInfo;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${bound}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
