import { pino } from "pino";

export type Logger = pino.Logger;

// Secrets are redacted by path, so a credential that reaches a log call by accident is
// censored rather than written (test/unit/log.test.ts).
export const REDACTED_PATHS = [
  "authorization",
  "cookie",
  "token",
  "secret",
  "password",
  "*.authorization",
  "*.cookie",
  "*.token",
  "*.secret",
  "*.password",
  "*.clientSecret",
  "*.*.authorization",
  "*.*.cookie",
  "*.*.token",
  "*.*.secret",
  "*.*.password",
  "*.*.clientSecret",
  "headers.authorization",
  "headers.cookie",
  "req.headers.authorization",
  "req.headers.cookie",
];

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    { level, base: { service: "atrium" }, redact: { paths: REDACTED_PATHS, censor: "[redacted]" } },
    destination,
  );
}
