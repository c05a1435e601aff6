import type { StandardSchemaV1, StandardSchemaWithJSON } from "@modelcontextprotocol/server";
import * as z from "zod";
import type { ToolCall } from "./app-tools.ts";

/**
 * A reporter of `done` out of `total` for this call, when its caller asked for progress; each
 * report is on its way before the next step starts.
 */
export function progressReporter(
  call: ToolCall,
  describe: (done: number, total: number) => string,
): ((done: number, total: number) => Promise<void>) | undefined {
  const progress = call.progress;
  if (!progress) return undefined;
  return (done, total) => progress({ progress: done, total, message: describe(done, total) });
}

type Shape = Record<string, z.ZodType>;

/**
 * A platform tool's input schema, the shape as a zod object, listed and checked as the v1 SDK
 * did, so that clients built on it see no change:
 * - listed as draft-07 JSON Schema: v2 lists 2020-12, and a draft-07-only validator (ajv's
 *   default class) refuses a schema whose `$schema` names a meta-schema it does not know;
 * - argument errors worded "<message> at <path>", one per line, where v2 writes
 *   "<path>: <message>, …"; the router puts the called name in front
 *   (test/integration/mcp-params.test.ts "tool arguments").
 */
export function platformInput<S extends Shape>(
  shape: S,
): StandardSchemaWithJSON<z.input<z.ZodObject<S>>, z.output<z.ZodObject<S>>> {
  // Strict, as the REST twins are: an argument no tool reads (a misspelt `schedule` for
  // `trigger`) is refused by name, never dropped into a call that does something else.
  const schema = z.strictObject(shape);
  const standard = schema["~standard"];
  const reworded = <T>(result: StandardSchemaV1.Result<T>): StandardSchemaV1.Result<T> =>
    result.issues ? { issues: [{ message: result.issues.map(describeIssue).join("\n") }] } : result;
  return {
    "~standard": {
      ...standard,
      jsonSchema: {
        input: (options) => standard.jsonSchema.input({ ...options, target: "draft-07" }),
        output: (options) => standard.jsonSchema.output({ ...options, target: "draft-07" }),
      },
      validate: (value: unknown) => {
        const result = standard.validate(value);
        return result instanceof Promise ? result.then(reworded) : reworded(result);
      },
    },
  } as StandardSchemaWithJSON<z.input<z.ZodObject<S>>, z.output<z.ZodObject<S>>>;
}

function describeIssue(issue: StandardSchemaV1.Issue): string {
  if (!issue.path?.length) return issue.message;
  const keys = issue.path.map((segment) => (typeof segment === "object" ? segment.key : segment));
  const path = keys.reduce<string>(
    (dotted, key, index) =>
      index === 0 ? String(key) : typeof key === "number" ? `${dotted}[${key}]` : `${dotted}.${String(key)}`,
    "",
  );
  return `${issue.message} at ${path}`;
}

/**
 * A platform tool's list of `min` to `max` `item`s, listed as `z.array(item)` with its bounds.
 * Its length is checked before any item: zod reads every item of an array before its `max`, and
 * makes an issue for each that fails, so 1,000,000 numbers where strings belong (2 MB of
 * arguments) took 7.5 s and 820 MiB and answered a 66 MB refusal (ADR 0157).
 */
export function boundedArray<T extends z.ZodType>(item: T, max: number, min = 0) {
  return z.preprocess((value, ctx) => {
    if (Array.isArray(value) && value.length > max) {
      ctx.addIssue({ code: "too_big", origin: "array", maximum: max, inclusive: true, input: value });
    }
    return value;
  }, z.array(item).min(min).max(max));
}

/**
 * The `cursor` and `limit` of a paged list tool: pass `nextCursor` back as `cursor`; `limit` is 1
 * to `max` `items` per page, `fallback` when not given.
 */
export function pageInput(items: string, max: number, fallback: number) {
  return {
    cursor: z.string().optional().describe("The nextCursor of the previous page; omit for the first page."),
    limit: z
      .number()
      .int()
      .min(1)
      .max(max)
      .optional()
      .describe(`${items} per page, 1 to ${max}; default ${fallback}.`),
  };
}
