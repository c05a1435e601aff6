import type { MiddlewareHandler } from "hono";
import { bodyLimit as honoBodyLimit } from "hono/body-limit";
import { PayloadTooLarge } from "../../errors.ts";
import type { AppEnv } from "../context.ts";

/**
 * Caps request bodies. File uploads are exempt here because the files app streams them to
 * disk under its own, larger limit and removes what it wrote when that is passed.
 */
export function bodyLimit(
  maxBytes: number,
  exempt: (path: string, method: string) => boolean,
): MiddlewareHandler<AppEnv> {
  const limit = honoBodyLimit({
    maxSize: maxBytes,
    onError: () => {
      throw new PayloadTooLarge(maxBytes);
    },
  });
  return async (c, next) => (exempt(c.req.path, c.req.method) ? next() : limit(c, next));
}
