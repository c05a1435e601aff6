import { pino } from "pino";

export type Logger = pino.Logger;

/**
 * Field names whose value is a credential wherever they appear in a logged object: Atrium's own
 * names and the OAuth wire names, so an OAuth response or request body logged by accident is
 * censored too. `code` is not among them: errors carry their `code` (ENOENT), which operators need.
 */
export const SECRET_FIELDS: ReadonlySet<string> = new Set([
  "authorization",
  "proxy-authorization",
  "cookie",
  "set-cookie",
  "token",
  "secret",
  "password",
  "clientSecret",
  "client_secret",
  "accessToken",
  "access_token",
  "refreshToken",
  "refresh_token",
  "idToken",
  "id_token",
  "codeVerifier",
  "code_verifier",
  "apiKey",
  "api_key",
  "x-api-key",
]);
export const CENSOR = "[redacted]";
/**
 * How far below a logged object's top level a secret field is looked for: `headers.authorization`
 * and `req.headers.authorization` are two levels down. Deeper objects are logged as they are.
 */
const MAX_CENSOR_DEPTH = 3;

/**
 * Secrets are censored by one walk over the logged object's keys, so a credential that reaches a
 * log call by accident is written as "[redacted]" (test/unit/log.test.ts). This replaced pino's
 * `redact` paths (ADR 0049): their wildcards wrapped the stringifying of every value of every
 * line, ≈ 7% of a ping. The walk reads keys and descends only into objects, and copies an object
 * only when it holds a secret: the caller's object is never changed.
 */
export function censorSecrets<T>(value: T, depth = 0): T {
  if (value === null || typeof value !== "object") return value;
  const source = value as Record<string, unknown>;
  let copy: Record<string, unknown> | undefined;
  for (const key in source) {
    const field = source[key];
    let censored = field;
    if (SECRET_FIELDS.has(key)) censored = CENSOR;
    else if (depth < MAX_CENSOR_DEPTH && field !== null && typeof field === "object") {
      censored = censorSecrets(field, depth + 1);
    }
    if (censored === field) continue;
    copy ??= plainCopy(source);
    copy[key] = censored;
  }
  return (copy ?? value) as T;
}

/** An object's enumerable fields; an error keeps its type, message and stack as pino writes them. */
function plainCopy(source: Record<string, unknown>): Record<string, unknown> {
  if (Array.isArray(source)) return [...source] as unknown as Record<string, unknown>;
  if (source instanceof Error) return { ...pino.stdSerializers.err(source) };
  return { ...source };
}

/**
 * A logger that censors secrets. Without a destination, lines go to stdout through an
 * asynchronous pino destination: a line is queued, not written before the request answers.
 * `flushLog` empties the queue at shutdown, and pino flushes it synchronously on process exit, a
 * fatal one included (test/unit/log-exit.test.ts).
 */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  const log = pino(
    {
      level,
      base: { service: "atrium" },
      // The error serializer runs after the log formatter, so an error's own fields are
      // censored after pino has made them a plain object.
      serializers: {
        err: (error: unknown) =>
          censorSecrets(error instanceof Error ? pino.stdSerializers.err(error) : error),
      },
      formatters: {
        log: (object) => censorSecrets(object),
        bindings: (bindings) => censorSecrets(bindings),
      },
    },
    destination ?? pino.destination({ dest: 1, sync: false }),
  );
  // pino formats only the root's bindings, not a child's: a child's are censored here, once when
  // the child is made. Children inherit this `child` (a pino child is made with Object.create).
  const makeChild = log.child;
  log.child = function child(this: Logger, bindings, options) {
    return makeChild.call(this, censorSecrets(bindings), options);
  } as typeof log.child;
  return log;
}

/**
 * Writes out every queued line (at shutdown, ADR 0023). A failed write is not an error here:
 * there is nowhere left to report it.
 */
export function flushLog(log: Logger): Promise<void> {
  return new Promise((resolve) => log.flush(() => resolve()));
}
