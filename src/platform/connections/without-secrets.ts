const REDACTED = "[redacted]";

/**
 * A credential value shorter than this is not looked for: as a substring it is in ordinary text
 * (a one-letter value is in most words), so taking it out would garble every answer and protect
 * nothing. Such a credential is not kept out of an echo (docs/connections.md).
 */
export const MIN_REDACTED_CHARS = 8;

/** The values worth looking for: long enough that finding one is an echo, not a coincidence. */
function soughtOf(secrets: readonly string[]): string[] {
  return secrets.filter((secret) => secret.length >= MIN_REDACTED_CHARS);
}

/** The forms a credential value is sent in and a server most often echoes it in. */
function formsOf(secret: string): string[] {
  return [
    ...new Set([
      secret,
      // Inside a JSON string, and with "/" escaped as PHP's json_encode does by default.
      JSON.stringify(secret).slice(1, -1),
      JSON.stringify(secret).slice(1, -1).replaceAll("/", "\\/"),
      // As a form or query parameter, and as a query credential is sent (URLSearchParams: a space as "+").
      encodeURIComponent(secret),
      new URLSearchParams([["", secret]]).toString().slice(1),
      // An all-digit key a server parsed as a number, as text: the JSON of a structured result
      // that the spec has it repeat in a text block (leading zeros gone, a long key rounded).
      ...numberText(secret),
    ]),
  ];
}

function numberText(secret: string): string[] {
  if (!/^[0-9]+$/.test(secret)) return [];
  const text = String(Number(secret));
  return text.length >= MIN_REDACTED_CHARS ? [text] : [];
}

/**
 * `text` with every one of the connection's own credential values taken out, as sent and in the
 * forms a server most often echoes them in (a JSON string, a form or query parameter).
 */
export function withoutSecrets(text: string, secrets: readonly string[]): string {
  let told = text;
  // Longest first: a value that holds another (a Basic header's "user:pass" and its password) is
  // taken out whole rather than leaving its remainder behind.
  const sought = soughtOf(secrets).sort((a, b) => b.length - a.length);
  for (const secret of sought) {
    for (const form of formsOf(secret)) if (told.includes(form)) told = told.split(form).join(REDACTED);
  }
  return told;
}

/**
 * The numbers an all-digit credential is echoed as by a server that parses it (`Number(key)`),
 * compared as numbers, so leading zeros and a rounded long key are found too; only those of at
 * least MIN_REDACTED_CHARS digits, as for a string.
 */
function numbersOf(sought: readonly string[]): Set<number> {
  const least = 10 ** (MIN_REDACTED_CHARS - 1);
  return new Set(
    sought
      .filter((secret) => /^[0-9]+$/.test(secret))
      .map(Number)
      .filter((n) => n >= least),
  );
}

/**
 * `value` (what a server answered: a tool result, its tools, its instructions, a progress report)
 * with the credential values taken out of every string value in it, and a number that is an
 * all-digit credential made `[redacted]`. Keys are left as they are:
 * they are the shape MCP reads (`name`, `content`, `type`), and rewriting one could merge two into
 * one and drop what it held; an echo is a message or a field's value. What holds none is answered
 * as the very same value, so an answer without an echo costs a walk and no copy. Walked
 * without recursion: nesting is the server's choice.
 */
export function withoutSecretsIn<T>(value: T, secrets: readonly string[]): T {
  const sought = soughtOf(secrets);
  const forms = sought.flatMap(formsOf);
  if (forms.length === 0) return value;
  const numbers = numbersOf(sought);
  const holds = (inner: unknown) =>
    typeof inner === "string"
      ? forms.some((form) => inner.includes(form))
      : typeof inner === "number" && numbers.has(inner);
  const tell = (inner: unknown) =>
    typeof inner === "string" ? withoutSecrets(inner, secrets) : holds(inner) ? REDACTED : inner;
  if (value === null || typeof value !== "object") return (holds(value) ? tell(value) : value) as T;
  if (!holdsAny(value, holds)) return value;
  return rebuilt(value, tell) as T;
}

/** Whether a string or number anywhere in `root` is one `holds` says yes to. */
function holdsAny(root: object, holds: (value: unknown) => boolean): boolean {
  const pending: unknown[] = [root];
  while (pending.length > 0) {
    const value = pending.pop();
    if (value !== null && typeof value === "object")
      // One push at a time: spreading a long array into push overflows the stack.
      for (const inner of Object.values(value)) pending.push(inner);
    else if (holds(value)) return true;
  }
  return false;
}

/** A copy of the JSON value `root` with every string and number (not key) passed through `tell`. */
function rebuilt(root: object, tell: (value: unknown) => unknown): unknown {
  const copy = (value: unknown): unknown =>
    typeof value === "string" || typeof value === "number"
      ? tell(value)
      : value !== null && typeof value === "object"
        ? Array.isArray(value)
          ? []
          : {}
        : value;
  const top = copy(root) as Record<string, unknown> | unknown[];
  const pending: [source: object, target: Record<string, unknown> | unknown[]][] = [[root, top]];
  while (pending.length > 0) {
    const [source, target] = pending.pop() as [object, Record<string, unknown> | unknown[]];
    for (const [key, inner] of Object.entries(source)) {
      const told = copy(inner);
      if (Array.isArray(target)) target.push(told);
      else
        Object.defineProperty(target, key, {
          value: told,
          enumerable: true,
          writable: true,
          configurable: true,
        });
      if (told !== null && typeof told === "object")
        pending.push([inner as object, told as Record<string, unknown> | unknown[]]);
    }
  }
  return top;
}

/**
 * Any RFC 9110 auth scheme (a token) and one credential after it: Bearer, Token, Basic, and the
 * schemes APIs coin (Discord's "Bot", "ApiKey", Okta's "SSWS").
 */
const AUTH_SCHEME = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+) +(\S+)$/;

/**
 * The values a static header's value `value` sends that a server may echo apart: the whole value,
 * and for an `Authorization`-style value (`<scheme> <credential>`, any scheme) the credential
 * after its scheme (a server quotes the token it parsed, not "Bearer …"), and for Basic the
 * decoded "user:pass" and the password.
 * Sought as sent: fetch strips a header value's leading and trailing whitespace, so a value
 * pasted with a trailing space reaches the server, and its echo, without it.
 */
export function secretsOfHeader(stored: string): string[] {
  const value = stored.replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, "");
  const match = AUTH_SCHEME.exec(value);
  if (!match) return [value];
  const [, scheme, credential] = match as unknown as [string, string, string];
  if (scheme.toLowerCase() !== "basic") return [value, credential];
  const decoded = Buffer.from(credential, "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  // Not base64 of "user:pass" (Buffer skips what is not base64): only the token is sought.
  if (
    colon < 0 ||
    Buffer.from(decoded, "utf8").toString("base64").replace(/=+$/, "") !== credential.replace(/=+$/, "")
  )
    return [value, credential];
  return [value, credential, decoded, decoded.slice(colon + 1)];
}
