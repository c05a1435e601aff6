import { Hono } from "hono";
import { InvalidInput, PayloadTooLarge } from "../../errors.ts";
import type { AppEnv, RouteDeps } from "../../http/context.ts";
import { workspaceGate } from "../../http/middleware/workspace-gate.ts";
import { MAX_PAGE_SIZE } from "./listings.ts";
import { DEFAULT_MIME_TYPE, type FileMeta } from "./model.ts";

/**
 * Files over REST. Upload is workspace-scoped and streamed to disk; a file is then
 * addressed by its bare id, which resolves only through the caller's own partitions of the
 * workspaces they belong to now.
 */
export function fileRoutes(deps: RouteDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const { files } = deps.services;
  const gate = workspaceGate(deps.workspaces);

  app.post("/v1/workspaces/:ws/files", gate, async (c) => {
    try {
      const declared = Number(c.req.header("content-length") ?? Number.NaN);
      if (declared > files.maxBytes) throw new PayloadTooLarge(files.maxBytes);
      const name = c.req.query("name");
      if (name === undefined) throw new InvalidInput('Give the file a name with the "name" query parameter.');
      const meta = await files.upload(
        c.get("admission").workspace.id,
        c.get("principal").id,
        { name, mimeType: c.req.header("content-type") ?? DEFAULT_MIME_TYPE },
        c.req.raw.body,
      );
      return c.json(meta, 201);
    } catch (error) {
      // The rest of an oversized body is never read and the socket is dropped after the 413,
      // so the answer must say the connection ends; otherwise a keep-alive client sends its
      // next request down a dead socket (test/integration/files-rest.test.ts).
      if (error instanceof PayloadTooLarge) c.header("connection", "close");
      throw error;
    }
  });

  // Paged like files__list: `?limit=` (1–1000, default 100) and `?cursor=` (a `nextCursor`).
  app.get("/v1/workspaces/:ws/files", gate, async (c) => {
    const limit = c.req.query("limit");
    if (limit !== undefined && !/^[0-9]{1,4}$/.test(limit)) {
      throw new InvalidInput(`limit is a whole number from 1 to ${MAX_PAGE_SIZE}.`);
    }
    const page = await files.page(c.get("admission").workspace.id, c.get("principal").id, {
      cursor: c.req.query("cursor"),
      limit: limit === undefined ? undefined : Number(limit),
    });
    return c.json(page);
  });

  // One lookup in the file locator, not a search of the caller's workspaces (adr/0025).
  const locate = async (principalId: string, fileId: string): Promise<string> =>
    files.locate(principalId, fileId, (ws) => deps.workspaces.roleOf(ws, principalId) !== undefined);

  app.get("/v1/files/:id", async (c) => {
    const owner = c.get("principal").id;
    const id = c.req.param("id");
    const { meta, body } = await files.stream(await locate(owner, id), owner, id);
    return new Response(body, { headers: downloadHeaders(meta) });
  });

  app.get("/v1/files/:id/meta", async (c) => {
    const owner = c.get("principal").id;
    const id = c.req.param("id");
    return c.json(await files.info(await locate(owner, id), owner, id));
  });

  app.delete("/v1/files/:id", async (c) => {
    const owner = c.get("principal").id;
    const id = c.req.param("id");
    await files.delete(await locate(owner, id), owner, id);
    return c.body(null, 204);
  });

  return app;
}

function downloadHeaders(meta: FileMeta): Record<string, string> {
  return {
    "content-type": meta.mimeType,
    "content-length": String(meta.size),
    "content-disposition": `attachment; filename*=UTF-8''${encodeURIComponent(meta.name)}`,
    // Stored content is the user's, not ours: never let a browser run it as this origin.
    "x-content-type-options": "nosniff",
    "content-security-policy": "sandbox",
    etag: `"${meta.sha256}"`,
  };
}
