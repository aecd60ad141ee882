// A real local webhook receiver for the push tests: it records every POST (headers, exact body) and
// answers what the test says (a status and headers such as Retry-After or webhook-delivery: abort).
// It can listen on a given port, so a test can start it late (a receiver that was down comes back),
// hold every answer until the test lets go, and close a kept-alive connection under the next request
// sent on it (what a receiver that closed an idle connection looks like to the sender).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface Delivery {
  headers: http.IncomingHttpHeaders;
  body: string;
  /** The Event, parsed. */
  event: { id: string; address_id: string; sequence: number; type: string; data: any };
}

export type Answer = { status: number; headers?: Record<string, string> };

export interface ReceiverOptions {
  /** Every answer waits for this (a receiver that holds the request). */
  hold?: Promise<void>;
  /** A request on a connection that already carried one is not read: the connection is destroyed under it. */
  dropReused?: boolean;
}

export interface Receiver {
  url: string;
  port: number;
  received: Delivery[];
  /** Connections accepted, answered or not. */
  connections(): number;
  /** Requests whose connection was destroyed under them (dropReused). */
  dropped(): number;
  /** Closes every open connection now and goes on listening (a receiver restarted behind its load balancer). */
  dropConnections(): void;
  close(): Promise<void>;
}

export async function startReceiver(
  answer: (d: Delivery, index: number) => Answer = () => ({ status: 200 }),
  port = 0,
  delayMs = 0,
  opts: ReceiverOptions = {},
): Promise<Receiver> {
  const received: Delivery[] = [];
  let connections = 0;
  let dropped = 0;
  const carried = new WeakMap<object, number>();
  const server = http.createServer((req, res) => {
    const n = (carried.get(req.socket) ?? 0) + 1;
    carried.set(req.socket, n);
    if (opts.dropReused && n > 1) {
      dropped++;
      req.socket.destroy();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      const d: Delivery = { headers: req.headers, body, event: JSON.parse(body) };
      received.push(d);
      const a = answer(d, received.length - 1);
      const reply = () => res.writeHead(a.status, { 'content-type': 'text/plain', ...a.headers }).end(a.status < 300 ? 'ok' : 'failed');
      const later = () => (delayMs > 0 ? setTimeout(reply, delayMs) : reply());
      if (opts.hold) void opts.hold.then(later);
      else later();
    });
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${bound}/hooks`,
    port: bound,
    received,
    connections: () => connections,
    dropped: () => dropped,
    dropConnections: () => server.closeAllConnections(),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Throws unless the delivery's Standard Webhooks signature verifies with `secret`. */
export function verify(d: Delivery, secret: string): void {
  new Webhook(secret).verify(d.body, {
    'webhook-id': String(d.headers['webhook-id']),
    'webhook-timestamp': String(d.headers['webhook-timestamp']),
    'webhook-signature': String(d.headers['webhook-signature']),
  });
}

/** Resolves once `check()` holds, polling every 20 ms; fails with `what` after `ms`. */
export async function until(check: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
