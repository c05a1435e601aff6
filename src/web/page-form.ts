import type { Context } from "hono";
import type { AppEnv } from "./app-env.ts";

/** What a page form is refused with when it is not sent the way Atrium's own pages send it. */
export const PAGE_FORM_REFUSAL =
  "This form must be sent as application/x-www-form-urlencoded, as the page's own button sends it.";

/**
 * Reads the body of a form posted from one of Atrium's own pages (the consent page, the home
 * page's buttons), which always send `application/x-www-form-urlencoded`; `undefined` for any
 * other media type, which the caller answers 415. Parsed with URLSearchParams, which reads any
 * bytes: hono's `parseBody()` threw on a malformed multipart body, and that was a 500 logged as
 * an unhandled error, with no account needed (test/integration/oauth-flow.test.ts "a form not
 * sent as a page sends it").
 */
export async function readPageForm(c: Context<AppEnv>): Promise<URLSearchParams | undefined> {
  const mediaType = (c.req.header("content-type") ?? "").split(";")[0]?.trim().toLowerCase();
  if (mediaType !== "application/x-www-form-urlencoded") return undefined;
  return new URLSearchParams(await c.req.text());
}
