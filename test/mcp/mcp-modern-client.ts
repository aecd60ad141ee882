// A revision 2026-07-28 MCP client in raw JSON-RPC over HTTP, for the tests: no SDK and no state
// between calls, just the per-request _meta and the headers the revision requires, and a reader
// for events/stream's SSE answer that keeps every JSON-RPC message in order.
import { request } from 'node:http';
import { api, type Res } from '../helpers.js';

export const MODERN = '2026-07-28';
export const META = {
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientInfo': { name: 'raw-test-client', version: '0.0.0' },
  'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/events': {} } },
};
export const ACCEPT = { accept: 'application/json, text/event-stream', 'content-type': 'application/json' };

/** The headers a conforming client sends with `method` (and, for tools/call, the tool's name). */
export function modernHeaders(method: string, name?: string): Record<string, string> {
  return { ...ACCEPT, 'mcp-protocol-version': MODERN, 'mcp-method': method, ...(name === undefined ? {} : { 'mcp-name': name }) };
}

/** One request of the revision: params get the _meta envelope. */
export function call(mcpUrl: string, token: string, method: string, params: Record<string, unknown> = {}, id: string | number = 1): Promise<Res> {
  const body = JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: { ...META, ...((params._meta as object) ?? {}) } } });
  const name = method === 'tools/call' ? (params.name as string) : undefined;
  return api('', 'POST', mcpUrl, { body, headers: modernHeaders(method, name), token });
}

/** A result that must be a success; returns it. */
export async function result(mcpUrl: string, token: string, method: string, params: Record<string, unknown> = {}): Promise<any> {
  const r = await call(mcpUrl, token, method, params);
  if (r.status !== 200 || r.json?.error) throw new Error(`${method}: ${r.status} ${r.text.slice(0, 500)}`);
  return r.json.result;
}

export interface PushStream {
  status: number;
  body: string;
  messages: any[];
  ended: Promise<void>;
  /** Resolves with the first message (from index `from`) that passes `pred`. */
  next(pred: (m: any) => boolean, timeoutMs?: number, from?: number): Promise<any>;
  close(): void;
}

/** Opens events/stream and reads its SSE frames as JSON-RPC messages. */
export function openPush(mcpUrl: string, token: string, params: Record<string, unknown>, id: string | number = 'sub-1'): Promise<PushStream> {
  const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'events/stream', params: { ...params, _meta: META } });
  return new Promise((resolve, reject) => {
    const req = request(mcpUrl, { method: 'POST', agent: false, headers: { ...modernHeaders('events/stream'), authorization: `Bearer ${token}` } }, (res) => {
      res.setEncoding('utf8');
      const messages: any[] = [];
      const waiters = new Set<() => void>();
      let buffer = '';
      let text = '';
      let endedFlag = false;
      const ended = new Promise<void>((done) => {
        const finish = () => {
          endedFlag = true;
          for (const w of waiters) w();
          done();
        };
        res.on('end', finish);
        res.on('close', finish);
        res.on('error', finish);
      });
      res.on('data', (chunk: string) => {
        text += chunk;
        buffer += chunk;
        for (;;) {
          const cut = buffer.indexOf('\n\n');
          if (cut < 0) break;
          const frame = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const data = frame
            .split('\n')
            .filter((l) => l.startsWith('data: '))
            .map((l) => l.slice(6))
            .join('\n');
          if (data) messages.push(JSON.parse(data));
        }
        for (const w of waiters) w();
      });
      const stream: PushStream = {
        status: res.statusCode ?? 0,
        get body() {
          return text;
        },
        messages,
        ended,
        next(pred, timeoutMs = 10_000, from = 0) {
          return new Promise((ok, fail) => {
            const check = () => {
              const found = messages.slice(from).find(pred);
              if (found !== undefined) {
                done();
                ok(found);
              } else if (endedFlag) {
                done();
                fail(new Error(`stream ended without the message; got ${JSON.stringify(messages).slice(0, 800)}`));
              }
            };
            const timer = setTimeout(() => {
              done();
              fail(new Error(`no such message within ${timeoutMs} ms; got ${JSON.stringify(messages).slice(0, 800)}`));
            }, timeoutMs);
            const done = () => {
              clearTimeout(timer);
              waiters.delete(check);
            };
            waiters.add(check);
            check();
          });
        },
        close: () => req.destroy(),
      };
      resolve(stream);
    });
    req.on('error', reject);
    req.end(body);
  });
}

export const isEvent = (m: any) => m.method === 'notifications/events/event';
export const isHeartbeat = (m: any) => m.method === 'notifications/events/heartbeat';

/** The sequence of an Events cursor ("42@<epoch>": design.md, "Store epoch"). */
export const seqOf = (cursor: string): string => cursor.split('@')[0]!;
