import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { crossAreaImports, KNOWN_UPWARD, LAYERS, layerViolations } from "../../../scripts/lib/layers.mjs";

const FIXTURE = join(process.cwd(), "test/fixtures/layers/src");

describe("the layering check", () => {
  it("fails on a deliberately upward import, naming the file, the line and the layers", () => {
    const violations = layerViolations(FIXTURE, LAYERS, []);
    expect(violations).toEqual([
      {
        file: "storage/records.ts",
        line: 2,
        message: expect.stringMatching(/imports http\/route\.ts, a higher layer \(http 6 above storage 1\)/),
      },
    ]);
  });

  it("reads imports with the compiler, so a downward import and a comment are not violations", () => {
    expect(crossAreaImports(FIXTURE).map((edge) => `${edge.from} -> ${edge.to}`)).toEqual([
      "http/route.ts -> ids.ts",
      "storage/records.ts -> http/route.ts",
      "storage/records.ts -> ids.ts",
    ]);
  });

  it("refuses an area with no layer, and a known upward import that no longer exists", () => {
    const { http: _http, ...withoutHttp } = LAYERS;
    const violations = layerViolations(FIXTURE, withoutHttp, ["storage/records.ts -> http/gone.ts"]);
    expect(violations.map((v) => v.message)).toEqual([
      expect.stringMatching(/src\/http has no layer/),
      expect.stringMatching(
        /KNOWN_UPWARD lists "storage\/records\.ts -> http\/gone\.ts", which no longer exists/,
      ),
    ]);
  });

  it("Atrium's own src/ breaks no layer, and none is tolerated", () => {
    expect(layerViolations(join(process.cwd(), "src"))).toEqual([]);
    expect(KNOWN_UPWARD).toEqual([]);
  });
});
