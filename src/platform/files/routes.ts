import type { HttpBindings } from "@hono/node-server";
import { Hono } from "hono";
import { InvalidInput, PreconditionFailed, UnsupportedMediaType } from "../../errors.ts";
import type { UserDirectory } from "../../identity/users.ts";
import { wellFormed } from "../../text.ts";
import type { AppEnv } from "../../web/app-env.ts";
import { changeConditionsHold } from "../../web/conditions.ts";
import { takesQuery } from "../../web/query.ts";
import { sendFile } from "../../web/send-file.ts";
import { accessCheckOf } from "../../workspace/access-check.ts";
import type { WorkspaceStore } from "../../workspace/store.ts";
import { MAX_PAGE_SIZE } from "./listings.ts";
import { checkMimeType, DEFAULT_MIME_TYPE, type FileMeta } from "./model.ts";
import type { FileStore } from "./store.ts";

const FORM_DEFAULT_TYPE = "application/x-www-form-urlencoded";

/**
 * Files over REST, behind the workspace gate: upload, streamed to disk, and the caller's list.
 */
export function fileWorkspaceRoutes(files: FileStore): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  // A declared length over files.maxBytes is refused before this runs, and every 413 ends its
  // connection gracefully (http/middleware/body-limit.ts); a chunked body is counted by upload().
  app.post("/files", takesQuery("name"), async (c) => {
    const { name } = c.req.valid("query");
    if (name === undefined) throw new InvalidInput('Give the file a name with the "name" query parameter.');
    // Node's request stream when served by Node: reading it needs no web stream (files-streams.test.ts).
    // A client that goes away mid-body leaves nothing stored, and is logged 499 (error-response.ts).
    const incoming = (c.env as Partial<HttpBindings> | undefined)?.incoming;
    const meta = await files.upload(
      c.get("admission").workspace.id,
      c.get("principal").id,
      { name, mimeType: uploadedMimeType(c.req.header("content-type")) },
      incoming ?? c.req.raw.body,
      // Once the body has come, and again just before the file is put in place: its sender chose
      // how long that took, and a member removed meanwhile stores nothing (workspace-gate.ts).
      c.get("access"),
    );
    // Where the file is and the tag its download answers: a client can fetch it, or make its next
    // download conditional, without asking for its metadata again.
    return c.json(meta, 201, { etag: etagOf(meta), location: fileUrl(meta.id) });
  });

  // Paged like files__list: `?limit=` (1–1000, default 100) and `?cursor=` (a `nextCursor`).
  app.get("/files", takesQuery("limit", "cursor"), async (c) => {
    const { limit, cursor } = c.req.valid("query");
    if (limit !== undefined && !/^[0-9]{1,4}$/.test(limit)) {
      throw new InvalidInput(`limit is a whole number from 1 to ${MAX_PAGE_SIZE}.`);
    }
    const page = await files.page(c.get("admission").workspace.id, c.get("principal").id, {
      cursor,
      limit: limit === undefined ? undefined : Number(limit),
    });
    return c.json(page);
  });

  return app;
}

/** A file by its bare id, resolved only through the caller's own partitions of their workspaces. */
export function fileRoutes(
  files: FileStore,
  workspaces: Pick<WorkspaceStore, "roleOf">,
  users: Pick<UserDirectory, "isDeactivated">,
): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  // One lookup in the file locator, not a search of the caller's workspaces (adr/0025).
  const locate = (principalId: string, fileId: string): Promise<string> =>
    files.locate(principalId, fileId, (ws) => workspaces.roleOf(ws, principalId) !== undefined);

  app.get("/v1/files/:id", async (c) => {
    const owner = c.get("principal").id;
    const id = c.req.param("id");
    const { meta, content } = await files.openContent(await locate(owner, id), owner, id);
    return sendFile(c, content, downloadHeaders(meta));
  });

  app.get("/v1/files/:id/meta", async (c) => {
    const owner = c.get("principal").id;
    const id = c.req.param("id");
    return c.json(await files.info(await locate(owner, id), owner, id));
  });

  app.delete("/v1/files/:id", async (c) => {
    const owner = c.get("principal").id;
    const id = c.req.param("id");
    const workspaceId = await locate(owner, id);
    // A file's bytes never change under its id, so its tag checked now is its tag when deleted.
    // A condition that is not entity tags is refused, never taken as no condition (ADR 0152).
    const ifMatch = c.req.header("if-match");
    const ifNoneMatch = c.req.header("if-none-match");
    if (
      (ifMatch !== undefined || ifNoneMatch !== undefined) &&
      !changeConditionsHold(ifMatch, ifNoneMatch, etagOf(await files.info(workspaceId, owner, id)))
    ) {
      throw new PreconditionFailed(
        "The file is not the version If-Match names, or is one If-None-Match names (* names any); nothing was deleted.",
      );
    }
    // Outside the gate, the caller is built here, once its workspace is known.
    await files.delete(workspaceId, owner, id, accessCheckOf(workspaces, users, owner, workspaceId));
    return c.body(null, 204);
  });

  return app;
}

/**
 * The type a raw upload is stored with: its `Content-Type`, except that a body sent with no
 * type, or with the form default that curl's `--data-binary` and some HTTP stacks add when the
 * caller named none, is `application/octet-stream`. Atrium does not sniff: a type guessed
 * from the bytes would let content choose how it is served. A browser form's multipart
 * envelope is not a file's bytes, so it is refused rather than stored.
 */
function uploadedMimeType(header: string | undefined): string {
  const essence = header?.split(";")[0]?.trim().toLowerCase();
  if (essence === undefined || essence === "" || essence === FORM_DEFAULT_TYPE) return DEFAULT_MIME_TYPE;
  if (essence === "multipart/form-data") {
    throw new UnsupportedMediaType(
      "Upload the file's bytes as the raw body with its own Content-Type, not as a multipart form.",
    );
  }
  return header ?? DEFAULT_MIME_TYPE;
}

/** A file's own address, where it is downloaded (relative: RFC 9110 §10.2.2 allows it). */
function fileUrl(fileId: string): string {
  return `/v1/files/${fileId}`;
}

/** A file's entity tag: its content's SHA-256, the same on its download and its upload's 201. */
function etagOf(meta: FileMeta): string {
  return `"${meta.sha256}"`;
}

function downloadHeaders(meta: FileMeta): Record<string, string> {
  return {
    // Files stored before MIME types were checked strictly may hold one Node cannot send.
    "content-type": checkMimeType(meta.mimeType) ?? DEFAULT_MIME_TYPE,
    "content-length": String(meta.size),
    // A name stored before broken Unicode was refused must not make its download fail.
    "content-disposition": `attachment; filename*=UTF-8''${extValueChars(wellFormed(meta.name))}`,
    // Stored content is the user's, not ours: never let a browser run it as this origin.
    "x-content-type-options": "nosniff",
    "content-security-policy": "sandbox",
    etag: etagOf(meta),
  };
}

/**
 * A value as an RFC 8187 ext-value's value-chars: UTF-8, every byte that is not an attr-char
 * percent-encoded. encodeURIComponent leaves `'`, `(`, `)` and `*` as they are, which attr-char
 * does not allow (`'` ends the charset part), so those are encoded too
 * (test/integration/files-rest.test.ts "Content-Disposition").
 */
function extValueChars(value: string): string {
  return encodeURIComponent(value).replace(
    /['()*]/g,
    (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}
