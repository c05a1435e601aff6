import { namesCredential } from "./model.ts";

// Where a catalog entry could carry a secret that every signed-in person would read: an input
// marked `isSecret` with a value, anywhere under `remotes` or `packages`, a URL's userinfo,
// parsed or not, and a query parameter, header, environment variable or named argument named as
// a credential with a fixed value (ADR 0038, ADR 0092, ADR 0108). checkServerJson (catalog-entry.ts) turns them into problems.

/** How long a place in a problem grows before the rest of it is `…`: a file may nest deep. */
const MAX_PLACE_CHARS = 200;

function placeUnder(parent: string, key: string): string {
  if (parent.endsWith(".…")) return parent;
  return parent.length >= MAX_PLACE_CHARS ? `${parent}.…` : `${parent}.${key}`;
}

/** A name or key shown in a problem as it is; any other is left out, or named by its position. */
const SHOWN_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * The first input under `remotes` or `packages`, in file order, that is `isSecret` and carries a
 * `value` or `default`, by its place. Every such input counts, wherever the registry puts it
 * (a header, a header's or a remote's variable, a package's environment variable, argument or
 * transport header, and any it adds later): checking only remote headers let the others through
 * (test/unit/platform/connections/catalog-entry.test.ts "is refused when … is secret and has a
 * value"). Walked with a stack, not recursion: `packages` is not checked deeper by the schema,
 * and a file may nest thousands deep.
 */
export function secretInputIn(server: {
  remotes?: unknown;
  packages?: unknown;
}): { place: string; field: "value" | "default"; name?: string } | undefined {
  const stack: { node: unknown; place: string }[] = [
    { node: server.packages, place: "packages" },
    { node: server.remotes, place: "remotes" },
  ];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const { node, place } = next;
    if (typeof node !== "object" || node === null) continue;
    if (!Array.isArray(node)) {
      const input = node as Record<string, unknown>;
      const field = input.value !== undefined ? "value" : input.default !== undefined ? "default" : undefined;
      if (input.isSecret === true && field !== undefined) {
        const name = typeof input.name === "string" && SHOWN_NAME.test(input.name) ? input.name : undefined;
        return name === undefined ? { place, field } : { place, field, name };
      }
    }
    const children = Array.isArray(node)
      ? node.map((child, i) => [String(i), child] as const)
      : Object.entries(node);
    for (let i = children.length - 1; i >= 0; i--) {
      const [key, child] = children[i] as readonly [string, unknown];
      stack.push({ node: child, place: placeUnder(place, SHOWN_NAME.test(key) ? key : `#${i}`) });
    }
  }
  return undefined;
}

/** Where a package names an input whose value it passes on: a variable's or an option's name. */
const PACKAGE_INPUTS = ["environmentVariables", "runtimeArguments", "packageArguments"] as const;

/**
 * The first named input that is named as a credential (model.ts namesCredential) and carries a
 * fixed `value` or `default`, or a variable of its own that does, by its place; whether it is
 * marked `isSecret` does not matter. Named inputs are a remote's headers, and a package's transport
 * headers, environment variables (`GITHUB_TOKEN`) and named arguments (`--api-key`); a positional
 * argument has no name, only a hint. Only `isSecret` inputs were looked at, so
 * `Authorization: Bearer sk-…` or `API_KEY=sk-…` without the flag was listed to everyone
 * (test/unit/platform/connections/catalog-entry.test.ts "… named as a credential …"). A value
 * that is a `{variable}`, alone or after a scheme (`Bearer {token}`), is what whoever connects
 * fills in.
 */
export function credentialInputIn(server: {
  remotes?: unknown;
  packages?: unknown;
}): { place: string; name?: string } | undefined {
  const lists: { inputs: unknown; place: string }[] = [
    ...entriesOf(server.remotes).map(([i, remote]) => ({
      inputs: fieldOf(remote, "headers"),
      place: `remotes.${i}.headers`,
    })),
    ...entriesOf(server.packages).flatMap(([i, entry]) => [
      { inputs: fieldOf(fieldOf(entry, "transport"), "headers"), place: `packages.${i}.transport.headers` },
      ...PACKAGE_INPUTS.map((key) => ({ inputs: fieldOf(entry, key), place: `packages.${i}.${key}` })),
    ]),
  ];
  for (const { inputs, place } of lists) {
    for (const [at, input] of entriesOf(inputs)) {
      const name = fieldOf(input, "name");
      if (typeof name !== "string" || !namesCredential(name) || !holdsFixedValue(input)) continue;
      return SHOWN_NAME.test(name) ? { place: `${place}.${at}`, name } : { place: `${place}.${at}` };
    }
  }
  return undefined;
}

/** An input's value, default, or a variable's, that is set and is not a `{variable}` to fill in. */
function holdsFixedValue(input: unknown): boolean {
  const fixed = (input: unknown, field: "value" | "default") => {
    const text = fieldOf(input, field);
    return text !== undefined && text !== "" && !(typeof text === "string" && FILLED_IN.test(text));
  };
  if (fixed(input, "value") || fixed(input, "default")) return true;
  const variables = fieldOf(input, "variables");
  if (typeof variables !== "object" || variables === null) return false;
  return Object.values(variables).some((v) => fixed(v, "value") || fixed(v, "default"));
}

/** `{token}`, or an authorization scheme and `{token}`: nothing fixed but the scheme's name. */
const FILLED_IN = /^(?:[A-Za-z][A-Za-z0-9._~+-]* +)?\{[^{}]*\}$/;

function entriesOf(list: unknown): [number, unknown][] {
  return Array.isArray(list) ? list.map((item, i) => [i, item]) : [];
}

function fieldOf(node: unknown, key: string): unknown {
  return typeof node === "object" && node !== null && !Array.isArray(node)
    ? (node as Record<string, unknown>)[key]
    : undefined;
}

/**
 * Whether a URL carries a user name or password. One `new URL` cannot parse (a port out of range,
 * a space in the host, a `{port}` template) is still listed to everyone, so it is read by hand: an
 * `@` between its scheme and its path is taken for userinfo. Such a URL was accepted with its
 * password (test/unit/platform/connections/catalog-entry.test.ts "… user name or password").
 * An unparseable URL is not refused for that alone: a templated one is listed, marked.
 */
export function holdsUserinfo(text: string): boolean {
  try {
    const url = new URL(text);
    return url.username !== "" || url.password !== "";
  } catch {
    // NFKC, so a full-width or small commercial at (U+FF20, U+FE6B) counts as the `@` it maps to.
    return authorityOf(text).normalize("NFKC").includes("@");
  }
}

/**
 * What stands between the scheme and the path, query or fragment, read as a URL parser would
 * before it fails: tabs and newlines dropped, the ends trimmed, any run of slashes after the scheme.
 */
function authorityOf(text: string): string {
  const joined = text.replace(/[\t\n\r]/g, "");
  let start = 0;
  while (start < joined.length && joined.charCodeAt(start) <= 0x20) start++;
  const afterScheme = joined
    .slice(start)
    .replace(/^[A-Za-z][A-Za-z0-9+.-]*:/, "")
    .replace(/^[/\\]+/, "");
  return afterScheme.split(/[/?#]/, 1)[0] ?? "";
}

/**
 * Whether a URL's query has a parameter named as a credential (model.ts namesCredential) with a
 * value that is not a `{variable}`: read by hand, since a templated URL may not parse. A
 * `?api_key={api_key}` is a variable whoever connects fills in, and is listed.
 */
export function holdsQueryCredential(text: string): boolean {
  const query = text.split("#", 1)[0]?.split("?").slice(1).join("?") ?? "";
  return query.split("&").some((pair) => {
    const at = pair.indexOf("=");
    const value = at === -1 ? "" : pair.slice(at + 1);
    return (
      value !== "" &&
      !/^\{[^{}]*\}$/.test(value) &&
      namesCredential(decoded(at === -1 ? pair : pair.slice(0, at)))
    );
  });
}

function decoded(text: string): string {
  try {
    return decodeURIComponent(text.replaceAll("+", " "));
  } catch {
    return text;
  }
}
