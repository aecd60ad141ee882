// The MCP webhook tests' receiver and calls: a real local hook that answers the Events extension's
// verification handshake and verifies every later POST's Standard Webhooks signature, the
// events/subscribe call with webhook delivery, and one delivery to an address's inbox.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Addr, deliver, type TestService } from '../helpers.js';
import { type Delivery, verify } from '../push/receiver.js';
import { result } from './mcp-modern-client.js';

export const NAME = 'return_address.event';
export const SECRET = `whsec_${Buffer.alloc(32, 3).toString('base64')}`;

export interface Post extends Delivery {
  /** The status the hook answered. */
  status: number;
  body: string;
}

export interface Hook {
  url: string;
  /** Every POST after the handshake, in arrival order: occurrences and control bodies. */
  posts: Post[];
  close(): Promise<void>;
}

export const parsed = (d: Delivery): any => JSON.parse(d.body);
export const isControl = (p: Post, type: string) => parsed(p).type === type;
export const occurrences = (h: Hook) => h.posts.filter((p) => parsed(p).type === undefined);
export const delivered = (h: Hook) => occurrences(h).filter((p) => p.status < 300);

/** A real receiver: echoes the handshake, verifies every later POST with one of `secrets()` (401 otherwise), answers events with `status`. */
export async function startHook(secrets: () => string[], status: (o: any) => number = () => 200): Promise<Hook> {
  const posts: Post[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      const o = JSON.parse(body);
      if (o.type === 'verification') return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ challenge: o.challenge }));
      const d: Delivery = { headers: req.headers, body, event: o };
      const verifies = secrets().some((s) => {
        try {
          verify(d, s);
          return true;
        } catch {
          return false;
        }
      });
      const answer = !verifies ? 401 : o.type === undefined ? status(o) : 200;
      posts.push({ ...d, status: answer });
      res.writeHead(answer).end('');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    posts,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Throws unless `p` is a control body of `type`, signed with `secret`, headed for `subscriptionId`. */
export function assertControl(p: Post, type: string, secret: string, subscriptionId: string): any {
  verify(p, secret);
  assert.equal(p.headers['x-mcp-subscription-id'], subscriptionId);
  assert.match(String(p.headers['webhook-id']), new RegExp(`^msg_${type}_[0-9a-f]{24,32}$`));
  assert.equal(parsed(p).type, type);
  return parsed(p);
}

export async function subscribeOn(svc: TestService, a: Addr, url: string, secret: string) {
  const mcpUrl = a.mcpUrl.replace(/^http:\/\/[^/]+/, svc.baseUrl);
  return result(mcpUrl, a.token, 'events/subscribe', { name: NAME, arguments: {}, cursor: null, delivery: { mode: 'webhook', url, secret }, ttlMs: 3_600_000 });
}

export async function send(base: string, a: Addr, i: number) {
  const r = await deliver(base, a, { data: { i } });
  assert.equal(r.status, 202, r.text);
  return r.json.event as { id: string; sequence: number };
}
