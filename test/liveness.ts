// A liveness probe to run beside an attack: GET /healthz every `intervalMs`, each answer timed.
// An attack that stalls the event loop shows up as a slow (or missing) answer.
export interface Liveness {
  /** Stops probing; the slowest answer in ms and how many were made. */
  stop(): Promise<{ maxMs: number; count: number; failures: number }>;
}

export function livenessProbe(baseUrl: string, intervalMs = 100): Liveness {
  let maxMs = 0;
  let count = 0;
  let failures = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const t0 = performance.now();
      try {
        const r = await fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(5000) });
        await r.arrayBuffer();
        if (r.status !== 200) failures++;
      } catch {
        failures++;
      }
      maxMs = Math.max(maxMs, performance.now() - t0);
      count++;
      await new Promise((r) => setTimeout(r, intervalMs));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { maxMs, count, failures };
    },
  };
}
