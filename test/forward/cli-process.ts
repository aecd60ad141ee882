// The `return-address` CLI spawned as a user runs it (the bin shim), for tests that need its exact
// stdout, its stderr lines while it runs, and its process (to signal or kill it).
import { type ChildProcess, spawn } from 'node:child_process';

export interface CliRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliProcess extends Promise<CliRun> {
  proc: ChildProcess;
  /** stderr so far. */
  stderr(): string;
  /** Resolves when stderr holds `count` lines matching `re` (rejects after `ms`). */
  waitForLines(re: RegExp, count: number, ms?: number): Promise<string[]>;
}

export function runCli(args: string[], env: Record<string, string> = {}): CliProcess {
  const proc = spawn(process.execPath, ['bin/return-address.js', ...args], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  const waiters = new Set<() => void>();
  proc.stdout!.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  proc.stderr!.on('data', (d: Buffer) => {
    stderr += d.toString();
    for (const w of waiters) w();
  });
  const done = new Promise<CliRun>((resolve) => proc.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
  const lines = (re: RegExp) => stderr.split('\n').filter((l) => re.test(l));
  const waitForLines = (re: RegExp, count: number, ms = 60_000) =>
    new Promise<string[]>((resolve, reject) => {
      const check = () => {
        const found = lines(re);
        if (found.length >= count) {
          waiters.delete(check);
          clearTimeout(timer);
          resolve(found);
        }
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`timed out waiting for ${count} stderr lines matching ${re}; stderr so far:\n${stderr}`));
      }, ms);
      waiters.add(check);
      void done.then(() => setTimeout(check, 0));
      check();
    });
  return Object.assign(done, { proc, stderr: () => stderr, waitForLines });
}
