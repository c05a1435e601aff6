import type { Context, MiddlewareHandler } from "hono";
import { matchedRoutes, routePath } from "hono/route";
import { validator } from "hono/validator";
import { InvalidInput } from "../errors.ts";
import type { AppEnv } from "./app-env.ts";

/** Marks the middleware `takesQuery` builds, so `queryOnlyWhereTaken` can tell which routes read one. */
const TAKES_QUERY = Symbol("takesQuery");

/** The parameters a route was given, each at most once; a key the route does not take never gets here. */
export type Query<K extends string> = { [key in K]?: string };

/**
 * The one strict reader of a REST query string (ADR 0095, as `readJsonBodyAs` is for bodies): a key
 * the route does not take is refused by name, never dropped. A dropped `?scop=user` let the scope
 * fall back to `workspace`, and deleted the workspace's skill and its history instead of the
 * caller's own (test/integration/rest-query-strict.test.ts). A key given twice is refused too, since
 * each key means one value; a value that is not percent-encoded UTF-8 is refused, never kept raw.
 * Route handlers read the result with `c.req.valid("query")`.
 */
export function takesQuery<K extends string>(...keys: K[]) {
  const middleware = validator("query", (_lenient, c) => readQuery(c, keys));
  return Object.assign(middleware, { [TAKES_QUERY]: true });
}

/**
 * A route that takes no query parameters and changes something refuses a query: the caller meant
 * something by it that the route will not do. A GET or HEAD that takes none ignores one, so a
 * cache-busting `?_=1700000000` still reads (ADR 0095 amendment).
 */
export function queryOnlyWhereTaken(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (c.req.method === "GET" || c.req.method === "HEAD" || c.req.method === "OPTIONS") return next();
    if (queryString(c.req.url) === "") return next();
    const routes = matchedRoutes(c);
    const handler = routes.at(-1);
    // No route answers: the 404 says so better than a word about the query.
    if (!handler || handler.path.includes("*")) return next();
    // hono mounts a sub-app's handlers as they are (none sets its own onError, which would wrap
    // them): an upload's `?name=` refused here is what a lost mark would look like
    // (test/integration/rest-query-strict.test.ts uploads with one).
    if (routes.some((route) => TAKES_QUERY in route.handler)) return next();
    throw new InvalidInput(
      `${c.req.method} ${handler.path} takes no query parameters: remove "?${queryString(c.req.url)}".`,
    );
  };
}

function readQuery<K extends string>(c: Context, keys: readonly K[]): Query<K> {
  const taken = new Set<string>(keys);
  const query: Record<string, string> = {};
  for (const pair of queryString(c.req.url).split("&")) {
    if (pair === "") continue;
    const equals = pair.indexOf("=");
    const key = decoded(equals === -1 ? pair : pair.slice(0, equals), "A query parameter's name");
    if (!taken.has(key)) {
      throw new InvalidInput(
        `"${key}" is not a query parameter of ${c.req.method} ${routePath(c)}; it takes ${namesOf(keys)}.`,
      );
    }
    if (Object.hasOwn(query, key))
      throw new InvalidInput(`The query gives "${key}" more than once; give it once.`);
    query[key] = equals === -1 ? "" : decoded(pair.slice(equals + 1), `The "${key}" query parameter`);
  }
  return query as Query<K>;
}

/** The raw query of a URL, without its `?` or a fragment. */
function queryString(url: string): string {
  const start = url.indexOf("?");
  if (start === -1) return "";
  const end = url.indexOf("#", start);
  return url.slice(start + 1, end === -1 ? undefined : end);
}

/** Form-style decoding (`+` is a space), strict: bad percent-encoding is refused, never kept raw. */
function decoded(text: string, what: string): string {
  try {
    return decodeURIComponent(text.replaceAll("+", " "));
  } catch {
    throw new InvalidInput(`${what} is not valid percent-encoded UTF-8.`);
  }
}

function namesOf(keys: readonly string[]): string {
  return keys.map((key) => `"${key}"`).join(", ");
}
