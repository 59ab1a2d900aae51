/**
 * Each request's logger, made only when the request logs something. Fastify gives every request
 * a pino child bound to its id; building it (bindings serialised, serializers copied) cost
 * ~5 us a request in the profile of `GET /tools/{name}` under npm run bench, for requests
 * that mostly log nothing (LOG_LEVEL above `info` leaves even "incoming request" unwritten).
 * A call at an enabled level builds the same child Fastify would have built, once, and logs
 * through it, so what is written does not change.
 */
import type { FastifyBaseLogger, FastifyServerOptions } from 'fastify';

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
type Bindings = Parameters<FastifyBaseLogger['child']>[0];
type ChildOptions = Parameters<FastifyBaseLogger['child']>[1];
/** pino's loggers, which Fastify's are. */
type PinoLike = FastifyBaseLogger & { isLevelEnabled(level: string): boolean };

class RequestLogger implements FastifyBaseLogger {
  readonly #parent: PinoLike;
  readonly #bindings: Bindings;
  readonly #options: ChildOptions;
  #child: PinoLike | undefined;

  constructor(parent: PinoLike, bindings: Bindings, options: ChildOptions) {
    this.#parent = parent;
    this.#bindings = bindings;
    this.#options = options;
  }

  #logger(): PinoLike {
    return (this.#child ??= this.#parent.child(this.#bindings, this.#options) as PinoLike);
  }

  #log(level: Level, args: unknown[]): void {
    if (!(this.#child ?? this.#parent).isLevelEnabled(level)) return;
    (this.#logger()[level] as (...a: unknown[]) => void)(...args);
  }

  get level(): string {
    return (this.#child ?? this.#parent).level;
  }

  set level(level: string) {
    this.#logger().level = level;
  }

  fatal(...args: unknown[]): void {
    this.#log('fatal', args);
  }

  error(...args: unknown[]): void {
    this.#log('error', args);
  }

  warn(...args: unknown[]): void {
    this.#log('warn', args);
  }

  info(...args: unknown[]): void {
    this.#log('info', args);
  }

  debug(...args: unknown[]): void {
    this.#log('debug', args);
  }

  trace(...args: unknown[]): void {
    this.#log('trace', args);
  }

  silent(): void {}

  isLevelEnabled(level: string): boolean {
    return (this.#child ?? this.#parent).isLevelEnabled(level);
  }

  child(bindings: Bindings, options?: ChildOptions): FastifyBaseLogger {
    return this.#logger().child(bindings, options);
  }
}

/** Fastify's `childLoggerFactory`: a route with a log level of its own gets its child at once. */
export const lazyChildLogger: NonNullable<FastifyServerOptions['childLoggerFactory']> = (logger, bindings, options) =>
  options.level !== undefined ? logger.child(bindings, options) : new RequestLogger(logger as PinoLike, bindings, options);
