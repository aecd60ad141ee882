// Connections one client may hold at once (SMTP_MAX_CONNECTIONS_PER_IP); more get 421 at connect.

/** Enough for an MTA's parallel deliveries; one host alone cannot take all of maxClients. */
export const DEFAULT_MAX_CONNECTIONS_PER_IP = 20;

export class SmtpConnectionLimits {
  readonly #byClient = new Map<string, number>();
  /** Session ids counted at connect, with the key they were counted under. */
  readonly #counted = new Map<string, string>();

  constructor(
    readonly maxPerClient: number = DEFAULT_MAX_CONNECTIONS_PER_IP,
    private readonly keyOf: (ip: string) => string = (ip) => ip,
  ) {}

  /** Counts a new session; false (not counted) when its client already holds the maximum. */
  admit(sessionId: string, ip: string): { admitted: boolean; held: number } {
    const key = this.keyOf(ip);
    const held = this.#byClient.get(key) ?? 0;
    if (held >= this.maxPerClient) return { admitted: false, held };
    this.#byClient.set(key, held + 1);
    this.#counted.set(sessionId, key);
    return { admitted: true, held: held + 1 };
  }

  /** Forgets a closed session; a refused one was never counted. */
  release(sessionId: string): void {
    const key = this.#counted.get(sessionId);
    if (key === undefined) return;
    this.#counted.delete(sessionId);
    const left = (this.#byClient.get(key) ?? 1) - 1;
    if (left <= 0) this.#byClient.delete(key);
    else this.#byClient.set(key, left);
  }
}
