// A small Server-Sent Events reader over a raw node:http request, for the stream tests: it keeps
// every message and comment as received, in order, and says when the server ended the response.
import { type IncomingMessage, request } from 'node:http';

export interface SseMessage {
  id: string | undefined;
  event: string;
  data: string;
}

export interface SseStream {
  status: number;
  headers: IncomingMessage['headers'];
  /** The body of a non-200 answer. */
  body: string;
  messages: SseMessage[];
  comments: string[];
  /** Resolves when the response ends or the connection closes (the server ended the stream). */
  ended: Promise<void>;
  isEnded(): boolean;
  /** Resolves once `n` messages have arrived (rejects after `timeoutMs`). */
  waitForMessages(n: number, timeoutMs?: number): Promise<SseMessage[]>;
  /** Resolves once `n` comments have arrived. */
  waitForComments(n: number, timeoutMs?: number): Promise<string[]>;
  close(): void;
  /** The events carried by the messages named "event", parsed. */
  events(): { sequence: number; id: string; [k: string]: unknown }[];
}

export function openStream(url: string, headers: Record<string, string> = {}): Promise<SseStream> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { accept: 'text/event-stream', ...headers } });
    req.on('error', reject);
    req.on('response', (res) => {
      const messages: SseMessage[] = [];
      const comments: string[] = [];
      let body = '';
      let buffer = '';
      let ended = false;
      const waiters = new Set<() => void>();
      const check = () => {
        for (const w of [...waiters]) w();
      };
      const ended$ = new Promise<void>((done) => {
        const finish = () => {
          if (ended) return;
          ended = true;
          done();
          check();
        };
        res.on('end', finish);
        res.on('close', finish);
        res.on('error', finish);
      });
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (res.statusCode !== 200) {
          body += chunk;
          return;
        }
        buffer += chunk;
        const blocks = buffer.split('\n\n');
        buffer = blocks.pop() ?? '';
        for (const block of blocks) {
          const msg: SseMessage = { id: undefined, event: 'message', data: '' };
          const data: string[] = [];
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) comments.push(line.slice(1).trim());
            else if (line.startsWith('id: ')) msg.id = line.slice(4);
            else if (line.startsWith('event: ')) msg.event = line.slice(7);
            else if (line.startsWith('data: ')) data.push(line.slice(6));
          }
          if (data.length > 0) {
            msg.data = data.join('\n');
            messages.push(msg);
          }
        }
        check();
      });
      const waitFor = <T>(ready: () => T | undefined, timeoutMs: number, what: string) =>
        new Promise<T>((ok, fail) => {
          const w = () => {
            const v = ready();
            if (v !== undefined) {
              waiters.delete(w);
              clearTimeout(timer);
              ok(v);
            } else if (ended) {
              waiters.delete(w);
              clearTimeout(timer);
              fail(new Error(`the stream ended before ${what} (${messages.length} messages, ${comments.length} comments)`));
            }
          };
          const timer = setTimeout(() => {
            waiters.delete(w);
            fail(new Error(`timed out waiting for ${what} (${messages.length} messages, ${comments.length} comments)`));
          }, timeoutMs);
          waiters.add(w);
          w();
        });
      const stream: SseStream = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        get body() {
          return body;
        },
        messages,
        comments,
        ended: ended$,
        isEnded: () => ended,
        waitForMessages: (n, timeoutMs = 10_000) => waitFor(() => (messages.length >= n ? messages.slice(0, n) : undefined), timeoutMs, `${n} messages`),
        waitForComments: (n, timeoutMs = 10_000) => waitFor(() => (comments.length >= n ? comments.slice(0, n) : undefined), timeoutMs, `${n} comments`),
        close: () => req.destroy(),
        events: () => messages.filter((m) => m.event === 'event').map((m) => JSON.parse(m.data)),
      };
      if (res.statusCode !== 200) res.on('end', () => resolve(stream));
      else resolve(stream);
    });
    req.end();
  });
}
