import { describe, expect, it } from "vitest";
import { roleIn, type Workspace } from "../../../src/workspace/model.ts";

const WS: Workspace = {
  id: "ws_0000000000000001",
  name: "W",
  createdAt: "2026-01-01T00:00:00.000Z",
  updatedAt: "2026-01-01T00:00:00.000Z",
  members: [
    { principalId: "usr_aaaaaaaaaaaaaaaaaaaaaaaa", role: "admin", addedAt: "2026-01-01T00:00:00.000Z" },
    { principalId: "usr_bbbbbbbbbbbbbbbbbbbbbbbb", role: "member", addedAt: "2026-01-01T00:00:00.000Z" },
  ],
};

describe("roleIn, the one membership decision", () => {
  it("is the member's role", () => {
    expect(roleIn(WS, "usr_aaaaaaaaaaaaaaaaaaaaaaaa")).toBe("admin");
    expect(roleIn(WS, "usr_bbbbbbbbbbbbbbbbbbbbbbbb")).toBe("member");
  });

  it("is undefined for a stranger and for no workspace alike", () => {
    expect(roleIn(WS, "usr_cccccccccccccccccccccccc")).toBeUndefined();
    expect(roleIn(undefined, "usr_aaaaaaaaaaaaaaaaaaaaaaaa")).toBeUndefined();
  });
});
