import { describe, expect, it } from "vitest";
import {
  secretsOfHeader,
  withoutSecrets,
  withoutSecretsIn,
} from "../../../../src/platform/connections/without-secrets.ts";

const SECRET = 'key "with" spaces/and&more';

describe("withoutSecretsIn", () => {
  it("answers a value that holds no credential as the very same value", () => {
    const result = { content: [{ type: "text", text: "fine" }], structuredContent: { a: [1, null, true] } };
    expect(withoutSecretsIn(result, [SECRET])).toBe(result);
    expect(withoutSecretsIn(result, [""])).toBe(result);
  });

  it("takes the credential out of every string value, in the forms a server echoes it in, and leaves keys", () => {
    const echoed = {
      content: [{ type: "text", text: `sent ${SECRET}` }],
      structuredContent: {
        [SECRET]: { query: `?k=${encodeURIComponent(SECRET)}`, json: JSON.stringify({ k: SECRET }) },
        kept: [1, "plain", null],
      },
    };
    const told = withoutSecretsIn(echoed, [SECRET]);
    expect(told).toEqual({
      content: [{ type: "text", text: "sent [redacted]" }],
      structuredContent: {
        [SECRET]: { query: "?k=[redacted]", json: '{"k":"[redacted]"}' },
        kept: [1, "plain", null],
      },
    });
    expect(echoed.content[0]?.text).toBe(`sent ${SECRET}`);
    expect(withoutSecretsIn(`a ${SECRET}`, [SECRET])).toBe("a [redacted]");
  });

  it("takes out a credential JSON-escaped with '/' as '\\/' (PHP's json_encode)", () => {
    const key = "q1Zx/9Tk+Lm0Pw==";
    const echoed = { content: [{ type: "text", text: `{"key":"${key.replaceAll("/", "\\/")}"}` }] };
    expect(withoutSecretsIn(echoed, [key])).toEqual({
      content: [{ type: "text", text: '{"key":"[redacted]"}' }],
    });
  });

  it("makes a number that is an all-digit credential [redacted], and leaves other numbers", () => {
    const result = {
      structuredContent: { account: 4815162342108, padded: 12345678, count: 3, ratio: 4815162342108.5 },
    };
    expect(withoutSecretsIn(result, ["4815162342108", "0012345678"])).toEqual({
      structuredContent: { account: "[redacted]", padded: "[redacted]", count: 3, ratio: 4815162342108.5 },
    });
    expect(withoutSecretsIn(4815162342108, ["4815162342108"])).toBe("[redacted]");
    // A short number is ordinary, as a short string is: "00000001" is not sought as 1.
    const counts = { count: 1, total: 1234567 };
    expect(withoutSecretsIn(counts, ["00000001", "01234567"])).toBe(counts);
  });

  it("takes out an all-digit credential echoed as a number in text, its leading zeros gone or rounded", () => {
    // The spec has a structured result repeated as JSON in a text block, where the number is text.
    const text = (value: string) => ({ content: [{ type: "text", text: value }] });
    expect(withoutSecretsIn(text('{"account":48151623421}'), ["0048151623421"])).toEqual(
      text('{"account":[redacted]}'),
    );
    expect(withoutSecretsIn(text('{"account":12345678901234567000}'), ["12345678901234567890"])).toEqual(
      text('{"account":[redacted]}'),
    );
    // Short once parsed ("00000001" is 1): not sought, as a short string is not.
    expect(withoutSecretsIn(text("page 1 of 1"), ["00000001"])).toEqual(text("page 1 of 1"));
  });

  it("keeps a key named __proto__ an own key", () => {
    const told = withoutSecretsIn(JSON.parse(`{"__proto__": ${JSON.stringify(SECRET)}}`) as object, [SECRET]);
    expect(Object.getPrototypeOf(told)).toBe(Object.prototype);
    expect(Object.entries(told)).toEqual([["__proto__", "[redacted]"]]);
  });

  it("walks an array of any length", () => {
    const points = Array.from({ length: 300_000 }, () => 0);
    const result = { structuredContent: { points, note: `key ${SECRET}` } };
    const told = withoutSecretsIn(result, [SECRET]);
    expect(told.structuredContent.note).toBe("key [redacted]");
    expect(told.structuredContent.points).toHaveLength(300_000);
    expect(withoutSecretsIn({ points }, [SECRET])).toEqual({ points });
  });

  it("does not look for a value shorter than 8 characters, and never rewrites a key", () => {
    const tools = [{ name: "search", description: "Searches the web." }];
    expect(withoutSecretsIn(tools, ["e"])).toBe(tools);
    expect(withoutSecretsIn(tools, ["1234567"])).toBe(tools);
    expect(withoutSecrets("sent 1234567", ["1234567"])).toBe("sent 1234567");
    expect(withoutSecrets("sent 12345678", ["12345678"])).toBe("sent [redacted]");
    const named = { description: { description: "description" } };
    expect(withoutSecretsIn(named, ["description"])).toEqual({ description: { description: "[redacted]" } });
  });
});

describe("secretsOfHeader", () => {
  it("is the value itself when it has no auth scheme", () => {
    expect(secretsOfHeader("sk-0123456789")).toEqual(["sk-0123456789"]);
  });

  it("seeks the value as fetch sends it, without the whitespace around it", () => {
    expect(secretsOfHeader(" sk-0123456789\t")).toEqual(["sk-0123456789"]);
    expect(secretsOfHeader("Bearer ghp_abcdef0123 ")).toEqual(["Bearer ghp_abcdef0123", "ghp_abcdef0123"]);
  });

  it("adds the token after Bearer or Token", () => {
    expect(secretsOfHeader("Bearer ghp_abcdef0123")).toEqual(["Bearer ghp_abcdef0123", "ghp_abcdef0123"]);
    expect(secretsOfHeader("token ghp_abcdef0123")).toEqual(["token ghp_abcdef0123", "ghp_abcdef0123"]);
  });

  it("adds the credential after any auth scheme", () => {
    for (const scheme of ["Bot", "ApiKey", "SSWS", "x-Custom.1"])
      expect(secretsOfHeader(`${scheme} ghp_abcdef0123`)).toEqual([
        `${scheme} ghp_abcdef0123`,
        "ghp_abcdef0123",
      ]);
    expect(secretsOfHeader('Digest username="a", nonce="b"')).toEqual(['Digest username="a", nonce="b"']);
  });

  it("adds Basic's encoded and decoded user:pass and the password", () => {
    const encoded = Buffer.from("alice:s3cret-pass").toString("base64");
    expect(secretsOfHeader(`Basic ${encoded}`)).toEqual([
      `Basic ${encoded}`,
      encoded,
      "alice:s3cret-pass",
      "s3cret-pass",
    ]);
    expect(
      withoutSecrets("bad password s3cret-pass for alice:s3cret-pass", secretsOfHeader(`Basic ${encoded}`)),
    ).toBe("bad password [redacted] for [redacted]");
    expect(secretsOfHeader("Basic not*base64")).toEqual(["Basic not*base64", "not*base64"]);
  });
});
