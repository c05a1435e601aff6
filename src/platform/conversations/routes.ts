import { type Context, Hono } from "hono";
import * as z from "zod";
import { InvalidInput } from "../../errors.ts";
import type { AppEnv } from "../../web/app-env.ts";
import { readJsonBodyAs } from "../../web/json-body.ts";
import { type Query, takesQuery } from "../../web/query.ts";
import type { WorkspaceStore } from "../../workspace/store.ts";
import { platformInput } from "../platform-tool.ts";
import { EVENT_ORDERS, type EventOrder } from "./event-page.ts";
import { EXPORT_FORMATS, toJsonExport, toMarkdown } from "./export.ts";
import { listConversations, searchConversations } from "./finder.ts";
import { eventDrafts, titleInput } from "./model.ts";
import type { ConversationStore } from "./store.ts";

// The bodies REST reads, checked by the same schemas as the tools' arguments and worded alike.
const createBody = platformInput({ title: titleInput.optional(), events: eventDrafts.optional() });
const appendBody = platformInput({ events: eventDrafts });
const forkBody = platformInput({
  throughSeq: z.number().int().min(1).optional(),
  title: titleInput.optional(),
});
const updateBody = platformInput({ title: titleInput });

/** Conversations over REST, behind the workspace gate: the same operations as the tools. */
export function conversationWorkspaceRoutes(store: ConversationStore): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const where = (c: Context<AppEnv>) => [c.get("admission").workspace.id, c.get("principal").id] as const;

  app.post("/conversations", async (c) => {
    const body = await readJsonBodyAs(c, createBody);
    const conversation = await store.create(...where(c), body.title ?? "", body.events, c.get("access"));
    return c.json({ conversation }, 201);
  });

  // Paged like conversations__list: `?limit=` (1–1000, default 50) and `?cursor=`.
  app.get("/conversations", takesQuery(...PAGE_KEYS), async (c) =>
    c.json(await listConversations(store.indexes, ...where(c), pageQuery(c.req.valid("query")))),
  );

  // Like conversations__search: `?query=`, paged by `?limit=` (1–100, default 20) and `?cursor=`.
  app.get("/conversations/search", takesQuery("query", ...PAGE_KEYS), async (c) => {
    const { query, ...page } = c.req.valid("query");
    if (query === undefined)
      throw new InvalidInput('Give the words to find with the "query" query parameter.');
    return c.json(
      await searchConversations(store.indexes, store, ...where(c), { ...pageQuery(page), query }),
    );
  });

  app.get("/conversations/:id", takesQuery(...EVENT_PAGE_KEYS), async (c) =>
    c.json(await store.get(...where(c), c.req.param("id"), eventPageQuery(c.req.valid("query")))),
  );

  app.post("/conversations/:id/events", async (c) => {
    const body = await readJsonBodyAs(c, appendBody);
    return c.json(await store.append(...where(c), c.req.param("id"), body.events, c.get("access")));
  });

  app.post("/conversations/:id/fork", async (c) => {
    const body = await readJsonBodyAs(c, forkBody);
    return c.json(
      { conversation: await store.fork(...where(c), c.req.param("id"), body, c.get("access")) },
      201,
    );
  });

  app.get("/conversations/:id/export", takesQuery("format"), async (c) => {
    const format = c.req.valid("query").format ?? "markdown";
    if (!(EXPORT_FORMATS as readonly string[]).includes(format)) {
      throw new InvalidInput(`format is one of ${EXPORT_FORMATS.join(", ")}.`);
    }
    const { conversation, events } = await store.readWhole(...where(c), c.req.param("id"));
    if (format === "json") return c.json(toJsonExport(conversation, events));
    return c.body(toMarkdown(conversation, events), 200, { "content-type": "text/markdown; charset=utf-8" });
  });

  app.patch("/conversations/:id", async (c) => {
    const { title } = await readJsonBodyAs(c, updateBody);
    const { conversation } = await store.append(
      ...where(c),
      c.req.param("id"),
      [{ type: "title", title }],
      c.get("access"),
    );
    return c.json({ conversation });
  });

  app.delete("/conversations/:id", async (c) => {
    await store.delete(...where(c), c.req.param("id"), c.get("access"));
    return c.body(null, 204);
  });

  return app;
}

/** A conversation by its bare id: the caller's own, in a workspace they are a member of now. */
export function conversationRoutes(
  store: ConversationStore,
  workspaces: Pick<WorkspaceStore, "roleOf">,
): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.get("/v1/conversations/:id", takesQuery(...EVENT_PAGE_KEYS), async (c) => {
    const owner = c.get("principal").id;
    const id = c.req.param("id");
    // One lookup in the locator, not a search of the caller's workspaces (adr/0025).
    const workspaceId = await store.locate(owner, id, (ws) => workspaces.roleOf(ws, owner) !== undefined);
    return c.json(await store.get(workspaceId, owner, id, eventPageQuery(c.req.valid("query"))));
  });
  return app;
}

/** A page of a listing: `?limit=` and `?cursor=`. */
const PAGE_KEYS = ["limit", "cursor"] as const;
/** A page of a conversation's events: a page, and `?order=`. */
const EVENT_PAGE_KEYS = [...PAGE_KEYS, "order"] as const;

function pageQuery(query: Query<(typeof PAGE_KEYS)[number]>): {
  cursor?: string | undefined;
  limit?: number | undefined;
} {
  const { limit, cursor } = query;
  if (limit !== undefined && !/^[0-9]{1,4}$/.test(limit)) throw new InvalidInput("limit is a whole number.");
  return { cursor, limit: limit === undefined ? undefined : Number(limit) };
}

function eventPageQuery(query: Query<(typeof EVENT_PAGE_KEYS)[number]>) {
  const { order } = query;
  if (order !== undefined && !(EVENT_ORDERS as readonly string[]).includes(order)) {
    throw new InvalidInput(`order is one of ${EVENT_ORDERS.join(", ")}.`);
  }
  return { ...pageQuery(query), order: order as EventOrder | undefined };
}
