// Fastify gives every request a child logger bound to its request id. Building a pino child costs
// more than some whole requests spend elsewhere (bench/README.md, "Where each µs of a delivery goes"),
// and at the usual levels most requests never log a line below warn: this child is built the first
// time a line is actually written at an enabled level, with the same bindings, so what is logged is
// unchanged.
import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions, Level } from 'pino';

class LazyChildLogger {
  private made: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
  ) {}

  private get log(): FastifyBaseLogger {
    if (this.made === undefined) this.made = this.parent.child(this.bindings);
    return this.made;
  }

  get level(): string {
    return (this.made ?? this.parent).level;
  }

  set level(level: string) {
    this.log.level = level;
  }

  isLevelEnabled(level: string): boolean {
    return ((this.made ?? this.parent) as FastifyBaseLogger & { isLevelEnabled(l: string): boolean }).isLevelEnabled(level);
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.log.child(bindings, options);
  }

  private write(level: Level, args: unknown[]): void {
    if (!this.isLevelEnabled(level)) return;
    (this.log[level] as (...a: unknown[]) => void)(...args);
  }

  // Methods on the prototype, not arrow fields: a request that never logs allocates only this object.
  fatal(...args: unknown[]): void {
    this.write('fatal', args);
  }
  error(...args: unknown[]): void {
    this.write('error', args);
  }
  warn(...args: unknown[]): void {
    this.write('warn', args);
  }
  info(...args: unknown[]): void {
    this.write('info', args);
  }
  debug(...args: unknown[]): void {
    this.write('debug', args);
  }
  trace(...args: unknown[]): void {
    this.write('trace', args);
  }
  silent(): void {}
}

/**
 * Fastify's childLoggerFactory: a lazy child unless the route asks for its own level or serializers
 * (then the child is needed at once to apply them).
 */
export function lazyRequestLogger(logger: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  if (Object.keys(options).length > 0) return logger.child(bindings, options);
  return new LazyChildLogger(logger, bindings) as unknown as FastifyBaseLogger;
}
