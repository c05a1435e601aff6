import { Hono } from "hono";
import { InvalidInput } from "../../errors.ts";
import type { AppEnv } from "../../web/app-env.ts";
import { readJsonBodyAs } from "../../web/json-body.ts";
import { takesQuery } from "../../web/query.ts";
import { type Inbox, MAX_PAGE_SIZE } from "./inbox.ts";
import { ackInput, ackRequest } from "./server.ts";

/** The inbox over REST, behind the workspace gate: the same views and acks as the tools. */
export function notificationRoutes(inbox: Inbox): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  // Paged like notifications__list: `?limit=` (1–100, default 50), `?cursor=`, `?unacked=true`.
  app.get("/notifications", takesQuery("limit", "cursor", "unacked"), async (c) => {
    const { limit, cursor, unacked } = c.req.valid("query");
    if (limit !== undefined && !/^[0-9]{1,3}$/.test(limit)) {
      throw new InvalidInput(`limit is a whole number from 1 to ${MAX_PAGE_SIZE}.`);
    }
    if (unacked !== undefined && unacked !== "true" && unacked !== "false") {
      throw new InvalidInput('unacked is "true" or "false".');
    }
    const page = await inbox.page(c.get("admission").workspace.id, c.get("principal").id, {
      cursor,
      limit: limit === undefined ? undefined : checkLimit(Number(limit)),
      unacked: unacked === "true",
    });
    return c.json(page);
  });

  app.get("/notifications/:id", async (c) =>
    c.json(await inbox.get(c.get("admission").workspace.id, c.get("principal").id, c.req.param("id"))),
  );

  app.post("/notifications/ack", async (c) => {
    const what = ackRequest(await readJsonBodyAs(c, ackInput));
    return c.json(
      await inbox.ack(c.get("admission").workspace.id, c.get("principal").id, what, c.get("access")),
    );
  });

  return app;
}

function checkLimit(limit: number): number {
  if (limit < 1 || limit > MAX_PAGE_SIZE)
    throw new InvalidInput(`limit is a whole number from 1 to ${MAX_PAGE_SIZE}.`);
  return limit;
}
