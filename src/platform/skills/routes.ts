import { type Context, Hono } from "hono";
import { InvalidInput, NotFound } from "../../errors.ts";
import type { AppEnv } from "../../web/app-env.ts";
import { readJsonBodyAs } from "../../web/json-body.ts";
import { takesQuery } from "../../web/query.ts";
import type { SkillService } from "./service.ts";
import { bodyOf } from "./skill-body.ts";
import { skillView } from "./view.ts";
import { createInput, toUpdate, updateBody } from "./write-tools.ts";
import { isWritableScope, type SkillWriter, type WriteTarget } from "./writer.ts";

/** Set on a saved version whose characters a reader cannot see are written out: its first such line. */
export const SPELLED_OUT_HEADER = "atrium-spelled-out-from-line";

/** The skills app over REST, through the same service and writer as its MCP tools. */
export function skillRoutes(skills: SkillService, skillWriter: SkillWriter): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  const target = (c: Context<AppEnv>, scope: unknown): WriteTarget => {
    if (scope !== undefined && !isWritableScope(scope)) {
      throw new InvalidInput('"scope" must be "workspace" or "user".');
    }
    return {
      scope: scope ?? "workspace",
      workspaceId: c.get("admission").workspace.id,
      principalId: c.get("principal").id,
      access: c.get("access"),
    };
  };

  app.get("/skills", async (c) => {
    const { skills: resolved, problems } = await skills.resolve(
      c.get("admission").workspace.id,
      c.get("principal").id,
    );
    return c.json({ skills: resolved.map(skillView), problems });
  });

  app.post("/skills", async (c) => {
    const { scope, name, ...skill } = await readJsonBodyAs(c, createInput);
    const created = await skillWriter.create(target(c, scope), name, { ...skill, provenance: "admin" });
    return c.json(skillView(created), 201);
  });

  app.get("/skills/:name", async (c) => {
    const name = c.req.param("name");
    const { skills: resolved } = await skills.resolve(c.get("admission").workspace.id, c.get("principal").id);
    const skill = resolved.find((s) => s.name === name);
    if (!skill) throw new NotFound("skill_not_found", `No skill named "${name}" here.`);
    return c.json({ ...skillView(skill), body: await bodyOf(skill) });
  });

  app.patch("/skills/:name", async (c) => {
    const body = await readJsonBodyAs(c, updateBody);
    const update = toUpdate(body);
    if (typeof update === "string") throw new InvalidInput(update);
    return c.json(skillView(await skillWriter.update(target(c, body.scope), c.req.param("name"), update)));
  });

  app.delete("/skills/:name", takesQuery("scope"), async (c) => {
    await skillWriter.delete(target(c, c.req.valid("query").scope), c.req.param("name"));
    return c.body(null, 204);
  });

  app.get("/skills/:name/history", takesQuery("scope"), async (c) => {
    return c.json({
      versions: await skillWriter.history(target(c, c.req.valid("query").scope), c.req.param("name")),
    });
  });

  app.get("/skills/:name/history/:version", takesQuery("scope"), async (c) => {
    const version = c.req.param("version");
    if (!/^[1-9][0-9]{0,8}$/.test(version)) throw new InvalidInput("A version is a whole number from 1.");
    const { text, spelledOutFromLine } = await skillWriter.version(
      target(c, c.req.valid("query").scope),
      c.req.param("name"),
      Number(version),
    );
    // Written out, the text is not the file's bytes: the header says so, and from which line (adr/0132).
    const headers: Record<string, string> = { "content-type": "text/markdown; charset=utf-8" };
    if (spelledOutFromLine !== undefined) headers[SPELLED_OUT_HEADER] = String(spelledOutFromLine);
    return c.body(text, 200, headers);
  });

  return app;
}
