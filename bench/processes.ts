// Child processes of the bench: the ceiling and the service, each on free ports, each started
// with `node` so the bench's own load generator never shares their event loop.
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface Child {
  name: string;
  url: string;
  proc: ChildProcess;
  pid: number;
  /** The last 64 KiB the process wrote (its logs), for error reports. */
  output(): string;
  /** SIGTERM, then SIGKILL after 10 s; resolves once it has exited. */
  stop(): Promise<void>;
}

export async function startChild(
  name: string,
  script: string,
  env: Record<string, string>,
  url: string,
  readyPath: string,
  nodeArgs: string[] = [],
): Promise<Child> {
  const proc = spawn(process.execPath, [...nodeArgs, script], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const keep = (d: Buffer) => {
    out = (out + d.toString()).slice(-65536);
  };
  proc.stdout?.on('data', keep);
  proc.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      const r = await fetch(url + readyPath);
      await r.arrayBuffer();
      if (r.ok) break;
    } catch {
      // not listening yet
    }
    if (proc.exitCode !== null || Date.now() > deadline) {
      proc.kill('SIGKILL');
      throw new Error(`${name} did not start:\n${out}`);
    }
    await sleep(50);
  }
  if (proc.pid === undefined) throw new Error(`${name} has no pid`);
  return {
    name,
    url,
    proc,
    pid: proc.pid,
    output: () => out,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
    },
  };
}

/** Resident set size of a process in bytes (VmRSS of /proc/<pid>/status). */
export function rssBytes(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : NaN;
}

/** This process's soft and hard limits on open files. */
export function openFileLimits(): { soft: number; hard: number } {
  const m = /^Max open files\s+(\S+)\s+(\S+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
  const n = (s: string | undefined) => (s === undefined || s === 'unlimited' ? Infinity : Number(s));
  return { soft: n(m?.[1]), hard: n(m?.[2]) };
}

/** CPU time a process has used so far, in milliseconds (utime + stime of /proc/<pid>/stat). */
export function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14 and 15 of the file, counted from the state field (3): indexes 11 and 12 here.
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}
