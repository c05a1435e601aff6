import type { Context } from "hono";
import { Hono } from "hono";
import { InvalidInput } from "../../errors.ts";
import type { AppEnv } from "../../web/app-env.ts";
import { readJsonObject } from "../../web/json-body.ts";
import { takesQuery } from "../../web/query.ts";
import { type Asker, MAX_RUNS_PAGE, type Tasks } from "./tasks.ts";

/** How long a run start's Idempotency-Key is kept is instance.json's `tasks.idempotencyWindowHours`. */
export const IDEMPOTENCY_KEY_HEADER = "idempotency-key";

/** The tasks over REST, behind the workspace gate: the same rules as the tools, through `Tasks`. */
export function taskRoutes(tasks: Tasks): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.get("/tasks", async (c) => c.json({ tasks: await tasks.list(asker(c)) }));

  app.post("/tasks", async (c) => c.json(await tasks.create(asker(c), await readJsonObject(c)), 201));

  app.get("/tasks/:id", async (c) => c.json(await tasks.get(asker(c), c.req.param("id"))));

  app.patch("/tasks/:id", async (c) =>
    c.json(await tasks.update(asker(c), c.req.param("id"), await readJsonObject(c))),
  );

  app.delete("/tasks/:id", async (c) => {
    await tasks.delete(asker(c), c.req.param("id"));
    return c.body(null, 204);
  });

  // `Idempotency-Key`: the same key and body answers the run the key started (201 again, with
  // `Idempotent-Replayed: true`); the same key with another body is 409 idempotency_conflict.
  app.post("/tasks/:id/runs", async (c) => {
    const key = c.req.header(IDEMPOTENCY_KEY_HEADER);
    const body = await readOptionalJson(c);
    const extra = Object.keys(body).filter((field) => field !== "input" && field !== "retryOf");
    if (extra.length > 0) throw new InvalidInput('A run start has only "input" and "retryOf".');
    const { run, replayed } = await tasks.run(asker(c), c.req.param("id"), { ...body, idempotencyKey: key });
    return c.json(run, 201, replayed ? { "idempotent-replayed": "true" } : {});
  });

  app.get("/tasks/:id/runs", takesQuery("limit", "cursor"), async (c) => {
    const { limit, cursor } = c.req.valid("query");
    if (
      limit !== undefined &&
      (!/^[0-9]{1,3}$/.test(limit) || Number(limit) < 1 || Number(limit) > MAX_RUNS_PAGE)
    ) {
      throw new InvalidInput(`limit is a whole number from 1 to ${MAX_RUNS_PAGE}.`);
    }
    const page = { cursor, limit: limit === undefined ? undefined : Number(limit) };
    return c.json(await tasks.runs(asker(c), c.req.param("id"), page));
  });

  app.get("/tasks/:id/runs/:run", async (c) => c.json(await runOfTask(tasks, c)));

  app.post("/tasks/:id/runs/:run/cancel", async (c) => {
    await runOfTask(tasks, c);
    return c.json(await tasks.cancelRun(asker(c), c.req.param("run")));
  });

  return app;
}

/** The caller, with the workspace gate's access check, which each task write asks at its commit (adr/0154). */
function asker(c: Context<AppEnv>): Asker {
  return {
    workspaceId: c.get("admission").workspace.id,
    principalId: c.get("principal").id,
    access: c.get("access"),
  };
}

/** The run the path names, only as a run of the task the path names. */
async function runOfTask(tasks: Tasks, c: Context<AppEnv>) {
  const task = await tasks.get(asker(c), c.req.param("id"));
  const run = await tasks.getRun(asker(c), c.req.param("run"));
  if (run.taskId !== task.id) return tasks.getRun(asker(c), "not-a-run");
  return run;
}

/** A run start's body may be empty (no input); when sent, it is a JSON object. */
async function readOptionalJson(c: Context<AppEnv>): Promise<Record<string, unknown>> {
  const length = c.req.header("content-length");
  if (length === "0" || (length === undefined && c.req.header("content-type") === undefined)) return {};
  return readJsonObject(c);
}
