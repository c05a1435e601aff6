import { describe, expect, it } from "vitest";
import {
  checkClientMetadata,
  MAX_CLIENT_NAME_CHARS,
  MAX_CLIENT_TEXT_CHARS,
  MAX_CONTACTS,
} from "../../../src/oauth/client-rules.ts";

const NATIVE = { redirect_uris: ["http://127.0.0.1/callback"], client_name: "Native" };

describe("checkClientMetadata", () => {
  // v2 of the SDK's schema knows application_type; v1 stripped it and Atrium still does.
  it("drops application_type, whatever its value, as it did with the v1 schema", () => {
    expect(checkClientMetadata({ ...NATIVE, application_type: "native" })).not.toHaveProperty(
      "application_type",
    );
    expect(checkClientMetadata({ ...NATIVE, application_type: 7 })).not.toHaveProperty("application_type");
  });

  it("leaves out the signed-JWT fields Atrium never uses, however large", () => {
    const checked = checkClientMetadata({
      ...NATIVE,
      software_statement: "x".repeat(60_000),
      jwks: { keys: [{ kty: "oct", k: "z".repeat(60_000) }] },
      jwks_uri: "https://client.example/jwks",
    });
    expect(checked).not.toHaveProperty("software_statement");
    expect(checked).not.toHaveProperty("jwks");
    expect(checked).not.toHaveProperty("jwks_uri");
    expect(JSON.stringify(checked).length).toBeLessThan(1_000);
  });

  it("drops fields the schema does not know", () => {
    expect(checkClientMetadata({ ...NATIVE, favourite_colour: "blue" })).not.toHaveProperty(
      "favourite_colour",
    );
  });

  it.each([
    ["a right-to-left override", "Atrium Docs\u202E"],
    ["a bidi isolate", "\u2067Docs"],
    ["a zero-width space", "Atrium\u200BDocs"],
    ["a TAG character", "Docs\u{E0041}"],
    ["a newline", "Atrium\nDocs"],
    ["a C1 control", "Atrium\u0085Docs"],
    ["a line separator", "Atrium\u2028Docs"],
  ])("refuses a client_name with %s", (_, name) => {
    expect(() => checkClientMetadata({ ...NATIVE, client_name: name })).toThrow(
      expect.objectContaining({
        errorCode: "invalid_client_metadata",
        message: expect.stringMatching(/client_name/),
      }),
    );
  });

  it(`caps client_name at ${MAX_CLIENT_NAME_CHARS} characters and refuses a blank one`, () => {
    expect(
      checkClientMetadata({ ...NATIVE, client_name: "é".repeat(MAX_CLIENT_NAME_CHARS) }).client_name,
    ).toHaveLength(MAX_CLIENT_NAME_CHARS);
    expect(() =>
      checkClientMetadata({ ...NATIVE, client_name: "x".repeat(MAX_CLIENT_NAME_CHARS + 1) }),
    ).toThrow(/client_name must be 1 to 100 characters/);
    expect(() => checkClientMetadata({ ...NATIVE, client_name: "  " })).toThrow(/client_name/);
  });

  it("keeps an emoji and a right-to-left script in a name", () => {
    expect(checkClientMetadata({ ...NATIVE, client_name: "מסמכים ⚠️" }).client_name).toBe("מסמכים ⚠️");
  });

  it("bounds the rest of what a client says about itself, and keeps it visible", () => {
    const long = `https://app.example/${"a".repeat(MAX_CLIENT_TEXT_CHARS)}`;
    expect(() => checkClientMetadata({ ...NATIVE, client_uri: long })).toThrow(/client_uri must be at most/);
    expect(() => checkClientMetadata({ ...NATIVE, software_version: "1.0\u202E" })).toThrow(
      /software_version must be visible text/,
    );
    expect(() =>
      checkClientMetadata({
        ...NATIVE,
        contacts: Array.from({ length: MAX_CONTACTS + 1 }, (_, i) => `${i}@x.example`),
      }),
    ).toThrow(/contacts may list at most/);
    expect(() => checkClientMetadata({ ...NATIVE, contacts: ["ops@x.example\u200B"] })).toThrow(/contacts/);
  });
});
