import { describe, expect, it } from "vitest";
import { checkClientMetadata } from "../../../src/oauth/client-rules.ts";

const NATIVE = { redirect_uris: ["http://127.0.0.1/callback"], client_name: "Native" };

describe("checkClientMetadata", () => {
  // v2 of the SDK's schema knows application_type; v1 stripped it and Atrium still does.
  it("drops application_type, whatever its value, as it did with the v1 schema", () => {
    expect(checkClientMetadata({ ...NATIVE, application_type: "native" })).not.toHaveProperty(
      "application_type",
    );
    expect(checkClientMetadata({ ...NATIVE, application_type: 7 })).not.toHaveProperty("application_type");
  });

  it("drops fields the schema does not know", () => {
    expect(checkClientMetadata({ ...NATIVE, favourite_colour: "blue" })).not.toHaveProperty(
      "favourite_colour",
    );
  });
});
