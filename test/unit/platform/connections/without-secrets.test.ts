import { describe, expect, it } from "vitest";
import { withoutSecretsIn } from "../../../../src/platform/connections/without-secrets.ts";

const SECRET = 'key "with" spaces/and&more';

describe("withoutSecretsIn", () => {
  it("answers a value that holds no credential as the very same value", () => {
    const result = { content: [{ type: "text", text: "fine" }], structuredContent: { a: [1, null, true] } };
    expect(withoutSecretsIn(result, [SECRET])).toBe(result);
    expect(withoutSecretsIn(result, [""])).toBe(result);
  });

  it("takes the credential out of every string, keys included, in the forms a server echoes it in", () => {
    const echoed = {
      content: [{ type: "text", text: `sent ${SECRET}` }],
      structuredContent: {
        [SECRET]: { query: `?k=${encodeURIComponent(SECRET)}`, json: JSON.stringify({ k: SECRET }) },
        kept: [1, "plain", null],
      },
    };
    const told = withoutSecretsIn(echoed, [SECRET]);
    expect(JSON.stringify(told)).not.toContain("spaces");
    expect(told).toEqual({
      content: [{ type: "text", text: "sent [redacted]" }],
      structuredContent: {
        "[redacted]": { query: "?k=[redacted]", json: '{"k":"[redacted]"}' },
        kept: [1, "plain", null],
      },
    });
    expect(echoed.content[0]?.text).toBe(`sent ${SECRET}`);
    expect(withoutSecretsIn(`a ${SECRET}`, [SECRET])).toBe("a [redacted]");
  });

  it("keeps a key named __proto__ an own key", () => {
    const told = withoutSecretsIn(JSON.parse(`{"__proto__": ${JSON.stringify(SECRET)}}`) as object, [SECRET]);
    expect(Object.getPrototypeOf(told)).toBe(Object.prototype);
    expect(Object.entries(told)).toEqual([["__proto__", "[redacted]"]]);
  });
});
