import { namesCredential } from "./model.ts";

// Where a catalog entry could carry a secret that every signed-in person would read: an input
// marked `isSecret` with a value, anywhere under `remotes` or `packages`, a URL's userinfo,
// parsed or not, and a query parameter, header, URL variable, environment variable, named
// argument or variable of one named as a credential with a fixed value (ADR 0038, ADR 0092, ADR 0108). checkServerJson (catalog-entry.ts) turns them into problems.

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
 * `value`, a `default` or `choices` (any but an empty list: a menu of secrets is as readable as
 * one), by its place. Every such input counts, wherever the registry puts it
 * (a header, a header's or a remote's variable, a package's environment variable, argument or
 * transport header, and any it adds later): checking only remote headers let the others through
 * (test/unit/platform/connections/catalog-entry.test.ts "is refused when … is secret and has a
 * value"). Walked with a stack, not recursion: `packages` is not checked deeper by the schema,
 * and a file may nest thousands deep.
 */
export function secretInputIn(server: {
  remotes?: unknown;
  packages?: unknown;
}): { place: string; field: SecretField; name?: string } | undefined {
  const stack: { node: unknown; place: string }[] = [
    { node: server.packages, place: "packages" },
    { node: server.remotes, place: "remotes" },
  ];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const { node, place } = next;
    if (typeof node !== "object" || node === null) continue;
    if (!Array.isArray(node)) {
      const input = node as Record<string, unknown>;
      const field = input.isSecret === true ? secretFieldOf(input) : undefined;
      if (field !== undefined) {
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

type SecretField = "value" | "default" | "choices";

function secretFieldOf(input: Record<string, unknown>): SecretField | undefined {
  if (input.value !== undefined) return "value";
  if (input.default !== undefined) return "default";
  const { choices } = input;
  const offered = choices !== undefined && !(Array.isArray(choices) && choices.length === 0);
  return offered ? "choices" : undefined;
}

/** Where a package names an input whose value it passes on: a variable's or an option's name. */
const PACKAGE_INPUTS = ["environmentVariables", "runtimeArguments", "packageArguments"] as const;

/** A named input, by its place: its name is its `name` field, or, for a variable, its key. */
interface NamedInput {
  input: unknown;
  place: string;
  name: unknown;
}

/**
 * The first named input that is named as a credential (model.ts namesCredential) and fixes a value
 * (fixesValue), by its place; whether it is marked `isSecret` does not matter. Named inputs are a
 * remote's headers and URL variables, a package's transport headers and URL variables,
 * environment variables (`GITHUB_TOKEN`) and named arguments (`--api-key`), and the variables of
 * each. A positional argument has no name, only a hint; its variables have theirs. Only `isSecret`
 * inputs were looked at, so `Authorization: Bearer sk-…` or `API_KEY=sk-…` without the flag was
 * listed to everyone, and so was a URL variable `{api_key}` with a default
 * (test/unit/platform/connections/catalog-entry.test.ts "… named as a credential …", "… URL
 * variable …").
 */
export function credentialInputIn(server: {
  remotes?: unknown;
  packages?: unknown;
}): { place: string; name?: string } | undefined {
  const transports = [
    ...entriesOf(server.remotes).map(([i, remote]) => ({ node: remote, place: `remotes.${i}` })),
    ...entriesOf(server.packages).map(([i, entry]) => ({
      node: fieldOf(entry, "transport"),
      place: `packages.${i}.transport`,
    })),
  ];
  const inputs: NamedInput[] = [
    ...transports.flatMap(({ node, place }) => [
      ...listed(fieldOf(node, "headers"), `${place}.headers`),
      ...variablesOf(node, place),
    ]),
    ...entriesOf(server.packages).flatMap(([i, entry]) =>
      PACKAGE_INPUTS.flatMap((key) => listed(fieldOf(entry, key), `packages.${i}.${key}`)),
    ),
  ];
  // A variable of an input named as a credential is read in its template (fixesValue); one of any
  // other input is judged by its own name.
  const judged = inputs.flatMap((named) =>
    isCredentialName(named.name) ? [named] : variablesOf(named.input, named.place),
  );
  for (const { input, place, name } of judged) {
    if (!isCredentialName(name) || !fixesValue(input)) continue;
    return SHOWN_NAME.test(name) ? { place, name } : { place };
  }
  return undefined;
}

function isCredentialName(name: unknown): name is string {
  return typeof name === "string" && namesCredential(name);
}

function listed(list: unknown, place: string): NamedInput[] {
  return entriesOf(list).map(([at, input]) => ({
    input,
    place: `${place}.${at}`,
    name: fieldOf(input, "name"),
  }));
}

function variablesOf(node: unknown, place: string): NamedInput[] {
  const variables = fieldOf(node, "variables");
  if (typeof variables !== "object" || variables === null || Array.isArray(variables)) return [];
  return Object.entries(variables).map(([name, input], i) => ({
    input,
    place: `${place}.variables.${SHOWN_NAME.test(name) ? name : `#${i}`}`,
    name,
  }));
}

/**
 * Whether an input fixes something whoever connects would otherwise supply. Its `value`, `default`
 * and every choice are read (a menu of keys lists each to everyone), and so is each of its
 * variables' alone; a variable at a value's start is read in its place there instead, since it
 * may be the scheme (`{scheme} {token}`, default `Bearer`). A value that is not text is fixed.
 */
function fixesValue(input: unknown): boolean {
  const texts = givenOf(input);
  const variables = Object.entries(objectOf(fieldOf(input, "variables"))).map(
    ([name, variable]) => [name, givenOf(variable)] as const,
  );
  if (texts === undefined || variables.some(([, given]) => given === undefined)) return true;
  const readings = [...texts];
  const leading = new Set<string>();
  for (const text of texts) {
    const lead = LEADING_VARIABLE.exec(text);
    if (!lead) continue;
    leading.add(lead[1] as string);
    const rest = text.slice(lead[0].length);
    const given = variables.find(([name]) => name === lead[1])?.[1] ?? [];
    readings.push(...given.map((scheme) => `${scheme}${rest}`));
  }
  for (const [name, given] of variables) if (!leading.has(name)) readings.push(...(given ?? []));
  return readings.some(fixes);
}

/** An input's value, default and every choice; undefined when one is not text. */
function givenOf(input: unknown): string[] | undefined {
  const choices = fieldOf(input, "choices");
  const offered = Array.isArray(choices) ? choices : [choices];
  const given = [fieldOf(input, "value"), fieldOf(input, "default"), ...offered].filter(
    (text) => text !== undefined,
  );
  return given.every((text) => typeof text === "string") ? given : undefined;
}

/**
 * Whether a text holds a letter or digit once one leading scheme before a space and more
 * (`Bearer`, `Token`) and every `{variable}`, with a label just before one (`token={token}`,
 * `user="{user}"`), are taken out. A scheme or label is a short word without digits (SCHEME,
 * LABEL): any token-shaped word counted as one, so `sk_live_4eC3… {token}` and `sk_live_4eC3…={x}`
 * passed. Read piece by piece: a regex looking back from each `{` took
 * seconds over a long value.
 */
function fixes(text: string): boolean {
  const pieces = text.replace(SCHEME, "").split(VARIABLE);
  return pieces.some((piece, i) => FIXED.test(i < pieces.length - 1 ? withoutLabel(piece) : piece));
}

/**
 * A piece before a `{variable}`, without a parameter's label at its end (`token=`, `user="`). The
 * whole word before the `=` is judged, so a key there is kept whole, not trimmed to a label.
 */
function withoutLabel(piece: string): string {
  const bare = piece.replace(/="?$/, "");
  if (bare === piece) return piece;
  let start = bare.length;
  while (start > 0 && WORD_CHAR.test(bare[start - 1] as string)) start--;
  return LABEL.test(bare.slice(start)) ? bare.slice(0, start) : piece;
}

const VARIABLE = /\{[^{}]*\}/;
const LEADING_VARIABLE = /^\s*\{([^{}]*)\}/;
/**
 * An auth scheme at the start, before a space and more: a letter, then up to 19 letters or hyphens
 * (`Bearer`, `Digest`, `Negotiate`). Schemes with digits (`AWS4-HMAC-SHA256`, `SCRAM-SHA-256`) are
 * not one: they sign each request, so no catalog template holds them, and a key has digits.
 */
const SCHEME = /^\s*[A-Za-z][A-Za-z-]{0,19}\s+(?=\S)/;
/** A parameter's label: up to 32 letters, `_` or `-` (`token`, `api_key`), no digits, as a key has. */
const LABEL = /^[A-Za-z_-]{1,32}$/;
const WORD_CHAR = /[A-Za-z0-9._-]/;
const FIXED = /[\p{L}\p{N}]/u;

function objectOf(node: unknown): Record<string, unknown> {
  return typeof node === "object" && node !== null && !Array.isArray(node)
    ? (node as Record<string, unknown>)
    : {};
}

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
