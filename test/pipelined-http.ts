// HTTP/1.1 pipelining over one raw socket: every request is written in a single write, so the
// server reads and parses them all in one I/O turn. That is the deterministic way to make many
// deliveries arrive "together" (fetch on many connections leaves it to the scheduler, and on a busy
// 2-core machine each request may well arrive in a turn of its own).
import { connect } from 'node:net';

export interface PipelinedRequest {
  method: string;
  path: string;
  headers?: Record<string, string>;
  json?: unknown;
}

export interface PipelinedResponse {
  status: number;
  json: any;
}

/**
 * Sends `requests` in order over one connection and calls `onResponse` for each answer, in order.
 * Resolves with the answers received when the last one arrives or the connection ends (a killed
 * server leaves the rest unanswered, which is not an error here).
 */
export function sendPipelined(
  port: number,
  requests: readonly PipelinedRequest[],
  onResponse: (r: PipelinedResponse, index: number) => void = () => {},
): Promise<PipelinedResponse[]> {
  const wire = requests
    .map((r) => {
      const body = r.json === undefined ? '' : JSON.stringify(r.json);
      const headers = {
        host: `127.0.0.1:${port}`,
        ...(r.json === undefined ? {} : { 'content-type': 'application/json' }),
        'content-length': String(Buffer.byteLength(body)),
        ...r.headers,
      };
      return `${r.method} ${r.path} HTTP/1.1\r\n${Object.entries(headers)
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join('')}\r\n${body}`;
    })
    .join('');
  return new Promise((resolve, reject) => {
    const answers: PipelinedResponse[] = [];
    let buf = Buffer.alloc(0);
    const socket = connect(port, '127.0.0.1', () => socket.write(wire));
    socket.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      for (;;) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buf.subarray(0, end).toString('latin1');
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? NaN);
        if (!Number.isInteger(length)) {
          socket.destroy();
          reject(new Error(`a pipelined answer without content-length:\n${head}`));
          return;
        }
        if (buf.length < end + 4 + length) return;
        const text = buf.subarray(end + 4, end + 4 + length).toString('utf8');
        buf = buf.subarray(end + 4 + length);
        const answer = { status: Number(head.slice(9, 12)), json: text === '' ? undefined : JSON.parse(text) };
        answers.push(answer);
        onResponse(answer, answers.length - 1);
        if (answers.length === requests.length) {
          socket.end();
          resolve(answers);
          return;
        }
      }
    });
    socket.on('error', () => resolve(answers));
    socket.on('close', () => resolve(answers));
  });
}
