import type { IncomingMessage } from "node:http";

/**
 * A Node request's headers read as a web `Headers` reads them: by case-insensitive name, every
 * occurrence of a repeated header joined with ", " (Node's own `headers` object keeps only the
 * first Authorization or Host, which would let one request read differently on the two paths).
 * It scans `rawHeaders`, a dozen strings, instead of building a `Headers` per request.
 */
export class NodeHeaders {
  constructor(private readonly request: IncomingMessage) {}

  /** The value, or null when the header is absent (as `Headers.get`). `name` is lower case. */
  get(name: string): string | null {
    const raw = this.request.rawHeaders;
    let value: string | null = null;
    for (let i = 0; i < raw.length; i += 2) {
      const key = raw[i] as string;
      if (key.length !== name.length || key.toLowerCase() !== name) continue;
      value = value === null ? (raw[i + 1] as string) : `${value}, ${raw[i + 1]}`;
    }
    return value;
  }

  has(name: string): boolean {
    return this.get(name) !== null;
  }

  /** As `get`, with undefined for absent (as hono's `c.req.header`). */
  value(name: string): string | undefined {
    return this.get(name) ?? undefined;
  }
}

/**
 * The request as a web `Request`, for the rare answer only the SDK's web transport gives (a 2025
 * call that streams progress). The body is the text already read.
 */
export function webRequestOf(request: IncomingMessage, body: string): Request {
  const headers = new Headers();
  const raw = request.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) headers.append(raw[i] as string, raw[i + 1] as string);
  const host = request.headers.host ?? "localhost";
  return new Request(`http://${host}${request.url ?? "/"}`, { method: "POST", headers, body });
}
