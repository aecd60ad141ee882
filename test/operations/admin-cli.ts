// The operator's CLI as the admin tests run it: the bin shim spawned with only PATH and the given
// environment (the store's settings), its output collected and its stdout read as JSON when it is.
import { spawn } from 'node:child_process';

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  json: any;
}

export function cli(args: string[], env: Record<string, string>): Promise<Run> {
  const proc = spawn(process.execPath, ['bin/return-address.js', ...args], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  proc.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  return new Promise<Run>((resolve) =>
    proc.on('close', (code) => {
      let json: unknown;
      try {
        json = stdout ? JSON.parse(stdout) : undefined;
      } catch {
        json = undefined;
      }
      resolve({ code, stdout, stderr, json });
    }),
  );
}
