import { describe, expect, it } from "vitest";
import { checkDraft, titleNaming } from "../../../../src/platform/notifications/model.ts";

const deactivated = (who: string) => `${who} was deactivated by an org admin`;

describe("a title naming what someone else named", () => {
  it.each([
    ["300 characters", "x".repeat(300)],
    ["a tab", "Grace\tHopper"],
    ["a line break and a C1 control", "Grace\r\nHopper\u0085"],
    ["half a surrogate pair", "Grace \uD83D Hopper"],
    ["an emoji where it is cut", `${"x".repeat(166)}😀😀😀`],
  ])("always passes the draft's check, for a name with %s", (_why, name) => {
    const title = titleNaming(name, deactivated, "usr_x");
    expect(() => checkDraft({ title })).not.toThrow();
    expect(title).toMatch(/ was deactivated by an org admin$/);
  });

  it("makes each run of controls and white space one space, and cuts a long name on a code point", () => {
    expect(titleNaming(" Grace\t\t Hopper\n", deactivated)).toBe(
      "Grace Hopper was deactivated by an org admin",
    );
    // 168 units of room: 166 x's and an emoji (2 units) leave none for the "…", so the emoji goes
    // whole, never half of it.
    const cut = titleNaming(`${"x".repeat(166)}😀😀`, deactivated);
    expect(cut).toBe(`${"x".repeat(166)}… was deactivated by an org admin`);
    expect(titleNaming("Grace", deactivated)).toBe("Grace was deactivated by an org admin");
  });

  it("gives way to the fallback when the name is missing or nothing but controls", () => {
    expect(titleNaming(undefined, deactivated, "usr_x")).toBe("usr_x was deactivated by an org admin");
    expect(titleNaming("\t\u0000 ", deactivated, "usr_x")).toBe("usr_x was deactivated by an org admin");
  });
});
