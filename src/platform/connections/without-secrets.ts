const REDACTED = "[redacted]";

/** The forms a credential value is sent in and a server most often echoes it in. */
function formsOf(secret: string): string[] {
  return [
    ...new Set([
      secret,
      // Inside a JSON string.
      JSON.stringify(secret).slice(1, -1),
      // As a form or query parameter, and as a query credential is sent (URLSearchParams: a space as "+").
      encodeURIComponent(secret),
      new URLSearchParams([["", secret]]).toString().slice(1),
    ]),
  ];
}

/**
 * `text` with every one of the connection's own credential values taken out, as sent and in the
 * two forms a server most often echoes them in (a JSON string, a form or query parameter).
 */
export function withoutSecrets(text: string, secrets: readonly string[]): string {
  let told = text;
  for (const secret of secrets) {
    if (secret === "") continue;
    for (const form of formsOf(secret)) if (told.includes(form)) told = told.split(form).join(REDACTED);
  }
  return told;
}

/**
 * `value` (what a server answered: a tool result, its tools, its instructions) with the
 * credential values taken out of every string in it, keys included. What holds none is answered
 * as the very same value, so an answer without an echo costs a walk and no copy. Walked
 * without recursion: nesting is the server's choice.
 */
export function withoutSecretsIn<T>(value: T, secrets: readonly string[]): T {
  const forms = secrets.flatMap((secret) => (secret === "" ? [] : formsOf(secret)));
  if (forms.length === 0) return value;
  const holds = (text: string) => forms.some((form) => text.includes(form));
  if (typeof value === "string") return (holds(value) ? withoutSecrets(value, secrets) : value) as T;
  if (value === null || typeof value !== "object" || !holdsAny(value, holds)) return value;
  return rebuilt(value, (text) => withoutSecrets(text, secrets)) as T;
}

/** Whether a string anywhere in `root`, a key or a value, is one `holds` says yes to. */
function holdsAny(root: object, holds: (text: string) => boolean): boolean {
  const pending: unknown[] = [root];
  while (pending.length > 0) {
    const value = pending.pop();
    if (typeof value === "string") {
      if (holds(value)) return true;
    } else if (Array.isArray(value)) pending.push(...value);
    else if (value !== null && typeof value === "object")
      for (const [key, inner] of Object.entries(value)) pending.push(key, inner);
  }
  return false;
}

/** A copy of the JSON value `root` with every string, keys included, passed through `tell`. */
function rebuilt(root: object, tell: (text: string) => string): unknown {
  const copy = (value: unknown): unknown =>
    typeof value === "string"
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
        Object.defineProperty(target, tell(key), {
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
