import { pino, destination, type Logger } from 'pino';

export type { Logger };

/** Structured JSON logs to stderr (stdout is reserved for command output such as `steward eval`). */
export function createLogger(opts: { level?: string; name?: string } = {}): Logger {
  return pino(
    { name: opts.name ?? 'steward', level: opts.level ?? process.env.STEWARD_LOG_LEVEL ?? 'info' },
    destination(2),
  );
}
