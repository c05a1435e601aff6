import { describe, expect, it } from "vitest";
import { endlessLoop } from "../../../../src/platform/json-schema/endless-refs.ts";

describe("a schema that applies itself to the same value without end", () => {
  it("is found where the loop closes", () => {
    const loops: [Record<string, unknown>, string][] = [
      [{ $ref: "#" }, "#"],
      [{ allOf: [{ $ref: "#" }] }, "#"],
      [{ anyOf: [{ type: "string" }, { not: { $ref: "#" } }] }, "#"],
      [
        {
          properties: { a: { $ref: "#/$defs/x" } },
          $defs: { x: { $ref: "#/$defs/y" }, y: { allOf: [{ $ref: "#/$defs/x" }] } },
        },
        "#/$defs/x",
      ],
      [
        { definitions: { x: { if: { $ref: "#/definitions/x" } } }, items: { $ref: "#/definitions/x" } },
        "#/definitions/x",
      ],
      [{ $defs: { x: { $anchor: "here", oneOf: [{ $ref: "#here" }] } }, $ref: "#/$defs/x" }, "#/$defs/x"],
      [{ $id: "https://example.com/s.json", $ref: "s.json" }, "#"],
      [{ dependentSchemas: { a: { $ref: "#" } } }, "#"],
      [{ $defs: { "a/b": { $ref: "#/$defs/a~1b" } }, $ref: "#/$defs/a~1b" }, "#/$defs/a~1b"],
    ];
    for (const [schema, where] of loops) expect(endlessLoop(schema), JSON.stringify(schema)).toBe(where);
  });

  it("is not a recursive schema whose $ref reads into the value, nor a loop the root never reaches", () => {
    const fine: Record<string, unknown>[] = [
      { type: "object", properties: { child: { $ref: "#" } } },
      { type: "array", items: { $ref: "#" } },
      { $defs: { node: { properties: { next: { $ref: "#/$defs/node" } } } }, $ref: "#/$defs/node" },
      { $defs: { unused: { $ref: "#/$defs/unused" } }, type: "string" },
      { $ref: "https://elsewhere.example/s.json" },
      { $ref: "#/%zz" },
      { const: { $ref: "#" } },
      { properties: { $ref: { type: "string" } } },
    ];
    for (const schema of fine) expect(endlessLoop(schema), JSON.stringify(schema)).toBeUndefined();
  });
});
