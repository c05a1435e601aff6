import { describe, expect, it } from "vitest";
import { consentPage, problemPage } from "../../../../src/oauth/authorize/consent-page.ts";

const VIEW = {
  requestId: "sealed",
  clientName: "Atrium Docs",
  clientId: "atc_0123456789abcdef0123456789abcdef",
  redirectTarget: "app.example",
  workspaceName: "Team",
  personName: "Alice (alice@example.test)",
  scopes: ["mcp:read"],
};

describe("consentPage", () => {
  it("isolates text from elsewhere, so a bidi control in it cannot reorder the page's own sentence", async () => {
    const page = await consentPage({
      ...VIEW,
      clientName: "Atrium Docs\u202E",
      workspaceName: "\u2067Team",
    }).text();
    expect(page).toContain("<strong><bdi>Atrium Docs\u202E</bdi></strong> wants to use the workspace");
    expect(page).toContain("<strong><bdi>\u2067Team</bdi></strong>");
    expect(page).toContain("<bdi>Alice (alice@example.test)</bdi>");
    expect(page).toContain(`(client <bdi>${VIEW.clientId}</bdi>)`);
    // Nothing client-supplied sits outside an isolate.
    expect(page.replace(/<bdi>[^<]*<\/bdi>/g, "")).not.toMatch(/[\u202A-\u202E\u2066-\u2069]/);
  });

  it("shows at most 100 characters of a client's name, for a client stored before the cap", async () => {
    const page = await consentPage({ ...VIEW, clientName: `${"x".repeat(99)}😀${"y".repeat(5000)}` }).text();
    expect(page).toContain(`<bdi>${"x".repeat(99)}\uFFFD…</bdi>`);
    expect(page).not.toContain("yyy");
  });

  it("escapes what it shows", async () => {
    const page = await consentPage({ ...VIEW, clientName: "<script>x</script>" }).text();
    expect(page).not.toContain("<script>x");
    expect(page).toContain("&lt;script&gt;x&lt;/script&gt;");
  });
});

describe("problemPage", () => {
  it("spells out what a reader could not see in a refusal, so text from a request cannot reorder it", async () => {
    const page = await problemPage(400, 'The scope "evil\u202E.gnp" is not one this server grants\u200B.', {
      href: "https://app.example/cb?error=invalid_scope",
      target: "app.example",
    }).text();
    expect(page).toContain(
      "The scope &quot;evil&lt;U+202E&gt;.gnp&quot; is not one this server grants&lt;U+200B&gt;.",
    );
    expect(page).not.toMatch(/[\u202A-\u202E\u2066-\u2069\u200B]/);
    expect(page).toContain("The link goes to <bdi>app.example</bdi>.");
  });
});
