import { pino, destination, stdSerializers, type DestinationStream, type Logger } from 'pino';
import { redactSecrets } from './observability/redact.js';

export type { Logger };

/**
 * Config fields that hold secrets, wherever a log call passes a config object (or part of one):
 * censored by pino before serialisation.
 */
export const REDACTED_LOG_PATHS = [
  'password',
  '*.password',
  'sasl.password',
  '*.sasl.password',
  'apiKey',
  '*.apiKey',
  'api_key',
  '*.api_key',
  'ssl.key',
  '*.ssl.key',
  'signing.key',
  '*.signing.key',
];

/** Error serialiser that drops URL passwords from the message and stack (and their causes'). */
function errSerializer(e: unknown): unknown {
  const s = stdSerializers.err(e as Error) as unknown;
  if (!s || typeof s !== 'object') return typeof s === 'string' ? redactSecrets(s) : s;
  const o = s as Record<string, unknown>;
  for (const k of ['message', 'stack']) if (typeof o[k] === 'string') o[k] = redactSecrets(o[k] as string);
  return o;
}

/**
 * Structured JSON logs to stderr (stdout is reserved for command output such as `steward eval`).
 * Secrets stay out: REDACTED_LOG_PATHS are censored, and `scheme://user:password@` in the message,
 * in top-level string fields and in serialised errors loses its password.
 */
export function createLogger(opts: { level?: string; name?: string; destination?: DestinationStream } = {}): Logger {
  return pino(
    {
      name: opts.name ?? 'steward',
      level: opts.level ?? process.env.STEWARD_LOG_LEVEL ?? 'info',
      redact: { paths: REDACTED_LOG_PATHS, censor: '[redacted]' },
      serializers: { err: errSerializer, error: errSerializer },
      formatters: {
        log(obj) {
          let out = obj;
          for (const [k, v] of Object.entries(obj)) {
            if (typeof v === 'string' && v.includes('://')) {
              if (out === obj) out = { ...obj };
              out[k] = redactSecrets(v);
            }
          }
          return out;
        },
      },
      hooks: {
        logMethod(args, method) {
          for (let i = 0; i < args.length; i++) if (typeof args[i] === 'string') (args as unknown[])[i] = redactSecrets(args[i] as string);
          return method.apply(this, args);
        },
      },
    },
    opts.destination ?? destination(2),
  );
}
