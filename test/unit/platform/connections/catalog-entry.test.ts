import { describe, expect, it } from "vitest";
import type { CatalogEntry } from "../../../../src/platform/connections/catalog.ts";
import {
  catalogConfigProperties,
  resolveCatalogSettings,
} from "../../../../src/platform/connections/catalog-config.ts";
import { connectionNameOf, connectRequestFor } from "../../../../src/platform/connections/catalog-connect.ts";
import {
  catalogIdOf,
  checkServerJson,
  checkStoredServerJson,
  connectabilityOf,
  isCatalogId,
  type ServerJson,
} from "../../../../src/platform/connections/catalog-entry.ts";

function server(extra: Partial<ServerJson> = {}): ServerJson {
  return {
    $schema: "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
    name: "io.github.acme/weather",
    description: "Forecasts",
    version: "1.0.0",
    remotes: [{ type: "streamable-http", url: "https://weather.example.com/mcp" }],
    ...extra,
  };
}

function entry(s: ServerJson): CatalogEntry {
  return { id: catalogIdOf(s.name), scope: "instance", server: s };
}

function problemOf(value: unknown): string {
  const checked = checkServerJson(value);
  if (!("problem" in checked)) throw new Error("expected a problem");
  return checked.problem;
}

describe("a server.json", () => {
  it("is accepted as the registry writes it, unknown fields kept", () => {
    const s = server({ _meta: { "io.example/x": { a: 1 } }, icons: [{ src: "https://x/i.png" }] });
    expect(checkServerJson(s)).toEqual({ server: s });
  });

  it("is refused without a name, description or version, naming the field", () => {
    expect(problemOf({ description: "d", version: "1" })).toContain("must have required property 'name'");
    expect(problemOf({ name: "a.b/c", version: "1" })).toContain("'description'");
    expect(problemOf({ name: "a.b/c", description: "d" })).toContain("'version'");
    expect(problemOf([])).toContain("must be object");
  });

  it.each([
    "noslash",
    "two/slash/es",
    "../etc/passwd",
    ".hidden/x",
    "a.b/.x",
    "a b/c",
    `a.b/${"x".repeat(200)}`,
  ])("is refused with the name %j", (name) => {
    expect(problemOf(server({ name }))).toContain('"name"');
  });

  it("is refused with a description over the registry's 100 characters", () => {
    expect(problemOf(server({ description: "x".repeat(101) }))).toContain('"description"');
  });

  it.each([
    "bell\u0007",
    "rtl\u202eoverride",
    "zero\u200bwidth",
    "bom\ufeff",
    "tag\u{e0041}\u{e0042}",
    "variation\ufe01",
    "c1\u0085",
    "line\u2028separator",
  ])("is refused when a label holds an unsafe character (%j)", (description) => {
    expect(problemOf(server({ description }))).toContain(
      "control, zero-width, bidirectional, variation or tag",
    );
  });

  it("read back as stored, has its labels taken as they are and its secrets still refused", () => {
    // Labels are judged as given: one stored before a rule refused U+2028 still loads.
    const header = { name: "X-Key", description: "The\u2028key" };
    const stored = server({
      title: "Weather\u2028Two",
      remotes: [{ type: "streamable-http", url: "https://weather.example.com/mcp", headers: [header] }],
    });
    expect(problemOf(stored)).toContain('"title" holds a control');
    expect(checkStoredServerJson(stored)).toEqual({ server: stored });
    const secret = { ...header, isSecret: true, value: "k" };
    const leaking = server({
      remotes: [{ type: "streamable-http", url: "https://weather.example.com/mcp", headers: [secret] }],
    });
    expect(checkStoredServerJson(leaking)).toEqual({ problem: expect.stringContaining("is secret") });
    expect(checkStoredServerJson({ name: "x" })).toEqual({
      problem: expect.stringContaining("Not a server.json"),
    });
  });

  it("is refused by its first failure: an array past its maxItems is not checked item by item", () => {
    expect(problemOf(server({ packages: new Array(30_000).fill(0) }))).toBe(
      'Not a server.json Atrium can use: "packages" must NOT have more than 64 items.',
    );
  });

  it.each(["rtl\u202eoverride", "bell\u0007", "two\nlines", "tag\u{e0041}"])(
    "is refused when a header's description holds an unsafe character (%j)",
    (description) => {
      const headers = [{ name: "X-Api-Key" }, { name: "Authorization", isRequired: true, description }];
      expect(
        problemOf(server({ remotes: [{ type: "streamable-http", url: "https://x/mcp", headers }] })),
      ).toBe(
        '"remotes.0.headers.1.description" holds a control, zero-width, bidirectional, variation or tag ' +
          "character; remove it.",
      );
    },
  );

  it("is refused when a remote has no URL or a header a bad name", () => {
    expect(problemOf(server({ remotes: [{ type: "streamable-http" } as never] }))).toContain("'url'");
    const badHeader = { type: "streamable-http", url: "https://x/mcp", headers: [{ name: "X Bad" }] };
    expect(problemOf(server({ remotes: [badHeader] }))).toContain('"remotes.0.headers.0.name"');
  });

  it("is refused when it carries a secret value, which every signed-in person could read", () => {
    const headers = [{ name: "Authorization", isSecret: true, value: "Bearer sk-live-123" }];
    const url = "https://x/mcp?q=sk-query-9";
    const problem = problemOf(server({ remotes: [{ type: "streamable-http", url, headers }] }));
    expect(problem).toBe(
      '"remotes.0.headers.0" (Authorization) is secret and has a value in the catalog, which every ' +
        "signed-in person can read; remove the value: whoever connects supplies it.",
    );
    expect(problem).not.toContain("sk-live-123");
    expect(problem).not.toContain("sk-query-9");
    const inVariable = [
      {
        name: "Authorization",
        value: "Bearer {key}",
        variables: { key: { isSecret: true, default: "sk-1" } },
      },
    ];
    expect(
      problemOf(
        server({ remotes: [{ type: "streamable-http", url: "https://x/mcp", headers: inVariable }] }),
      ),
    ).toContain("secret");
  });

  const npm = { registryType: "npm", identifier: "@acme/weather", version: "1.0.0" };
  it.each([
    {
      where: "a remote's variable",
      extra: {
        remotes: [
          {
            type: "streamable-http",
            url: "https://{tenant}.example.com/mcp",
            variables: { tenant: { isSecret: true, default: "SECRET-1" } },
          },
        ],
      },
      said: '"remotes.0.variables.tenant" is secret and has a default',
    },
    {
      where: "a package's environment variable",
      extra: {
        packages: [
          npm,
          { ...npm, environmentVariables: [{ name: "API_KEY", isSecret: true, value: "SECRET-2" }] },
        ],
      },
      said: '"packages.1.environmentVariables.0" (API_KEY) is secret and has a value',
    },
    {
      where: "a package transport's header",
      extra: {
        packages: [
          {
            ...npm,
            transport: {
              type: "streamable-http",
              url: "http://localhost:{port}/mcp",
              headers: [{ name: "Authorization", isSecret: true, value: "Bearer SECRET-3" }],
            },
          },
        ],
      },
      said: '"packages.0.transport.headers.0" (Authorization) is secret and has a value',
    },
    {
      where: "a package argument's variable under a key no problem repeats",
      extra: {
        packages: [
          {
            ...npm,
            packageArguments: [
              {
                type: "named",
                name: "--token",
                value: "{t\u202e}",
                variables: { "t\u202e": { isSecret: true, default: "SECRET-4" } },
              },
            ],
          },
        ],
      },
      said: '"packages.0.packageArguments.0.variables.#0" is secret and has a default',
    },
    // Review 59: only `value` and `default` were read, so a secret offered as choices was listed.
    ...[["SECRET-5"], ["SECRET-5", "SECRET-6"]].map((choices) => ({
      where: `a header offering ${choices.length} choice(s)`,
      extra: {
        remotes: [
          {
            type: "streamable-http",
            url: "https://x/mcp",
            headers: [{ name: "X-Upstream", isSecret: true, choices }],
          },
        ],
      },
      said: '"remotes.0.headers.0" (X-Upstream) is secret and has choices',
    })),
  ])("is refused when $where is secret and has a value", ({ extra, said }) => {
    const problem = problemOf(server(extra as Partial<ServerJson>));
    expect(problem).toContain(said);
    expect(problem).not.toMatch(/SECRET|\u202e/);
  });

  // Review 56: only `isSecret` inputs were looked at, so a fixed Authorization or X-Api-Key value
  // without the flag was listed to every signed-in person, as a query credential is not (ADR 0108).
  it.each([
    { where: "remotes", header: { name: "Authorization", value: "Bearer sk-live-rv56-0123456789" } },
    { where: "remotes", header: { name: "X-Api-Key", value: "sk-live-rv56-0123456789" } },
    {
      where: "remotes",
      header: { name: "Authorization", value: "Bearer sk-live-rv56-0123456789", isSecret: false },
    },
    { where: "remotes", header: { name: "x-auth-token", default: "sk-live-rv56-0123456789" } },
    {
      where: "remotes",
      header: { name: "Authorization", value: "Bearer {t}", variables: { t: { default: "sk-live-rv56" } } },
    },
    { where: "packages", header: { name: "Authorization", value: "Bearer sk-live-rv56-0123456789" } },
  ])(
    "is refused when a header named as a credential has a fixed value, isSecret or not ($where: $header.name)",
    ({ where, header }) => {
      const extra =
        where === "remotes"
          ? { remotes: [{ type: "streamable-http", url: "https://x/mcp", headers: [header] }] }
          : {
              packages: [
                { ...npm, transport: { type: "streamable-http", url: "https://x/mcp", headers: [header] } },
              ],
            };
      const problem = problemOf(server(extra as Partial<ServerJson>));
      const place = where === "remotes" ? "remotes.0.headers.0" : "packages.0.transport.headers.0";
      expect(problem).toBe(
        `"${place}" (${header.name}) is named as a credential and has a fixed value in the catalog, ` +
          "which every signed-in person can read; remove the value, or make it a {variable} " +
          '(e.g. "Bearer {token}") that whoever connects supplies.',
      );
      expect(problem).not.toContain("sk-live");
    },
  );

  it("accepts a header named as a credential whose value is a {variable} whoever connects fills in", () => {
    const headers = [
      { name: "Authorization", value: "Bearer {token}", variables: { token: { isRequired: true } } },
      { name: "X-Api-Key", value: "{api_key}" },
      { name: "X-Api-Key", isRequired: true, isSecret: true },
      { name: "X-Tenant", value: "acme" },
    ];
    const s = server({ remotes: [{ type: "streamable-http", url: "https://x/mcp", headers }] });
    expect(checkServerJson(s)).toEqual({ server: s });
  });

  // Review 56, after the headers: a package's environment variable or named argument named as a
  // credential, with a fixed value and no `isSecret`, was listed to every signed-in person.
  it.each([
    { list: "environmentVariables", input: { name: "API_KEY", value: "sk-live-rv56-0123456789" } },
    { list: "environmentVariables", input: { name: "GITHUB_TOKEN", default: "ghp_rv56-0123456789" } },
    {
      list: "environmentVariables",
      input: {
        name: "OPENAI_API_KEY",
        value: "{key}",
        isSecret: false,
        variables: { key: { default: "sk-live" } },
      },
    },
    {
      list: "packageArguments",
      input: { type: "named", name: "--api-key", value: "sk-live-rv56-0123456789" },
    },
    { list: "runtimeArguments", input: { type: "named", name: "--password", default: "hunter2-rv56" } },
  ])(
    "is refused when a package's $list entry named as a credential has a fixed value ($input.name)",
    ({ list, input }) => {
      const problem = problemOf(
        server({ packages: [{ ...npm, [list]: [{ name: "LOG_LEVEL", value: "info" }, input] }] }),
      );
      expect(problem).toBe(
        `"packages.0.${list}.1" (${input.name}) is named as a credential and has a fixed value in the catalog, ` +
          "which every signed-in person can read; remove the value, or make it a {variable} " +
          '(e.g. "Bearer {token}") that whoever connects supplies.',
      );
      expect(problem).not.toMatch(/sk-live|ghp_|hunter2/);
    },
  );

  it("accepts a package's credential-named variable or argument whose value is a {variable}, or that has none", () => {
    const s = server({
      packages: [
        {
          ...npm,
          environmentVariables: [
            {
              name: "GITHUB_TOKEN",
              value: "{token}",
              variables: { token: { isRequired: true, isSecret: true } },
            },
            { name: "API_KEY", isRequired: true },
            { name: "LOG_LEVEL", value: "info" },
          ],
          packageArguments: [
            { type: "named", name: "--api-key", value: "{api_key}" },
            { type: "positional", valueHint: "token", value: "serve" },
          ],
        },
      ],
    });
    expect(checkServerJson(s)).toEqual({ server: s });
  });

  // Review 58: only `{var}` or `Scheme {var}` counted as filled in, so a template that fixes nothing
  // was refused as if it held a secret, and an entry stored before could no longer be connected.
  it.each([
    {
      what: "a scheme chosen from a menu",
      header: {
        name: "Authorization",
        value: "{scheme} {token}",
        variables: { scheme: { choices: ["Bearer", "Token"], isRequired: true }, token: { isSecret: true } },
      },
    },
    {
      what: "a scheme variable with a default",
      header: {
        name: "Authorization",
        value: "{scheme} {token}",
        variables: { scheme: { default: "Bearer" } },
      },
    },
    {
      what: "a scheme with a parameter's label",
      header: { name: "Authorization", value: "Token token={token}" },
    },
    {
      what: "quoted parameters",
      header: { name: "Authorization", value: 'Digest username="{user}", response="{response}"' },
    },
    { what: "a user and a key", header: { name: "X-Api-Key", value: "{user}:{key}" } },
    { what: "a label with an underscore", header: { name: "Authorization", value: "Token api_key={key}" } },
    {
      what: "a header whose name only mentions a session",
      header: { name: "X-Session-Affinity", value: "sticky" },
    },
  ])("accepts a credential header whose value fixes nothing but its template ($what)", ({ header }) => {
    const s = server({ remotes: [{ type: "streamable-http", url: "https://x/mcp", headers: [header] }] });
    expect(checkServerJson(s)).toEqual({ server: s });
    // One stored before loads again, and can be connected.
    expect(checkStoredServerJson(s)).toEqual({ server: s });
    expect(connectabilityOf(s)).toMatchObject({ connectable: true });
  });

  it.each([
    { what: "a key after the scheme", value: "Bearer sk-live-rv58-0123456789" },
    { what: "a key after a parameter's label", value: "Token token=sk-live-rv58-0123456789" },
    { what: "a key beside a variable", value: "{user}:sk-live-rv58-0123456789" },
    { what: "a base64 key ending in =", value: "Basic c2stbGl2ZS1ydjU4Ojk5OTk=" },
    { what: "one word", value: "sk-live-rv58-0123456789 " },
    {
      what: "a scheme variable's default that is a key",
      value: "{scheme} {token}",
      variables: { scheme: { default: "Bearer" }, token: { default: "sk-live-rv58-0123456789" } },
    },
    {
      what: "a variable's only choice",
      value: "Bearer {token}",
      variables: { token: { choices: ["sk-live-rv58"] } },
    },
    {
      what: "a variable the value does not name",
      value: "Bearer {token}",
      variables: { other: { default: "sk-live" } },
    },
  ])("is refused when a credential header's template fixes a key ($what)", ({ value, variables }) => {
    const header = { name: "Authorization", value, ...(variables === undefined ? {} : { variables }) };
    const problem = problemOf(
      server({ remotes: [{ type: "streamable-http", url: "https://x/mcp", headers: [header] }] }),
    );
    expect(problem).toContain(
      '"remotes.0.headers.0" (Authorization) is named as a credential and has a fixed value',
    );
    expect(problem).not.toMatch(/sk-live|c2st/);
  });

  // Review 59: a key where the rule expected a scheme word or a parameter's label, or offered in a
  // menu of several choices, was listed to every signed-in person.
  const KEY = "sk_live_4eC39HqLyjWDarjtT1zdp7dc";
  it.each([
    { what: "a key as the scheme", header: { name: "Authorization", value: `${KEY} {token}` } },
    {
      what: "a key as a label after a scheme",
      header: { name: "Authorization", value: `Bearer ${KEY}={suffix}` },
    },
    { what: "a key as a label", header: { name: "X-Api-Key", value: `${KEY}={suffix}` } },
    { what: "a menu of keys", header: { name: "X-Api-Key", choices: [KEY, `${KEY}2`] } },
    {
      what: "a scheme variable's default that is a key",
      header: { name: "Authorization", value: "{scheme} {token}", variables: { scheme: { default: KEY } } },
    },
    {
      what: "a scheme variable offering a key among schemes",
      header: {
        name: "Authorization",
        value: "{scheme} {token}",
        variables: { scheme: { choices: ["Bearer", KEY] } },
      },
    },
    {
      what: "a variable offering a menu of keys",
      header: {
        name: "Authorization",
        value: "Bearer {token}",
        variables: { token: { choices: [KEY, `${KEY}2`] } },
      },
    },
  ])("is refused when a credential header fixes a key disguised or in a menu ($what)", ({ header }) => {
    const problem = problemOf(
      server({ remotes: [{ type: "streamable-http", url: "https://x/mcp", headers: [header] }] }),
    );
    expect(problem).toContain(
      `"remotes.0.headers.0" (${header.name}) is named as a credential and has a fixed value`,
    );
    expect(problem).not.toContain("sk_live");
  });

  it("is refused when a URL variable named as a credential offers a menu of keys", () => {
    const remote = {
      type: "streamable-http",
      url: "https://x.example.com/{api_key}/mcp",
      variables: { api_key: { choices: [KEY, `${KEY}2`] } },
    };
    const problem = problemOf(server({ remotes: [remote] }));
    expect(problem).toContain(
      '"remotes.0.variables.api_key" (api_key) is named as a credential and has a fixed value',
    );
    expect(problem).not.toContain("sk_live");
  });

  // Review 58: a remote's URL variable named as a credential, with a fixed default, was listed to
  // every signed-in person: only headers, environment variables and named arguments were walked.
  it.each([
    {
      where: "a remote's URL variable",
      extra: {
        remotes: [
          {
            type: "streamable-http",
            url: "https://mcp.example.com/{api_key}/mcp",
            variables: { api_key: { default: "sk-live-rv58-0123456789" } },
          },
        ],
      },
      said: '"remotes.0.variables.api_key" (api_key)',
    },
    {
      where: "a package transport's URL variable",
      extra: {
        packages: [
          {
            ...npm,
            transport: {
              type: "streamable-http",
              url: "http://localhost:{port}/{token}",
              variables: { token: { value: "sk-live-rv58" } },
            },
          },
        ],
      },
      said: '"packages.0.transport.variables.token" (token)',
    },
    {
      where: "a header's variable named as a credential",
      extra: {
        remotes: [
          {
            type: "streamable-http",
            url: "https://x/mcp",
            headers: [
              { name: "X-Custom", value: "{api_key}", variables: { api_key: { default: "sk-live-rv58" } } },
            ],
          },
        ],
      },
      said: '"remotes.0.headers.0.variables.api_key" (api_key)',
    },
    {
      where: "a positional argument's variable named as a credential",
      extra: {
        packages: [
          {
            ...npm,
            packageArguments: [
              {
                type: "positional",
                valueHint: "target",
                value: "{token}",
                variables: { token: { default: "sk-live-rv58" } },
              },
            ],
          },
        ],
      },
      said: '"packages.0.packageArguments.0.variables.token" (token)',
    },
  ])("is refused when $where has a fixed value", ({ extra, said }) => {
    const problem = problemOf(server(extra as Partial<ServerJson>));
    expect(problem).toContain(`${said} is named as a credential and has a fixed value`);
    expect(problem).not.toContain("sk-live");
  });

  it("accepts a remote's URL variable named as a credential that whoever connects fills in", () => {
    const remote = {
      type: "streamable-http",
      url: "https://{tenant}.example.com/{api_key}/mcp",
      variables: { tenant: { default: "acme" }, api_key: { isRequired: true, isSecret: true } },
    };
    const s = server({ remotes: [remote] });
    expect(checkServerJson(s)).toEqual({ server: s });
  });

  it("accepts a secret input without a value and an input with a value that is not secret", () => {
    const s = server({
      packages: [
        {
          ...npm,
          environmentVariables: [
            { name: "API_KEY", isSecret: true, isRequired: true },
            { name: "LOG_LEVEL", value: "info" },
          ],
        },
      ],
    });
    expect(checkServerJson(s)).toEqual({ server: s });
  });

  it("looks for a secret through a package nested deeper than a call stack goes", () => {
    let deep: Record<string, unknown> = { isSecret: true, value: "SECRET-5" };
    for (let i = 0; i < 100_000; i++) deep = { inner: deep };
    const problem = problemOf(server({ packages: [{ ...npm, deep }] }));
    expect(problem).toMatch(/^"packages\.0\.deep\.inner\.inner\.[a-z.]+\.…" is secret and has a value/);
    expect(problem.length).toBeLessThan(400);
  });

  it("is refused when a remote URL holds a user name or password", () => {
    const problem = problemOf(
      server({ remotes: [{ type: "streamable-http", url: "https://u:pw@x.example/mcp" }] }),
    );
    expect(problem).toContain("user name or password");
    expect(problem).not.toContain("pw@");
  });

  it.each([
    "https://user:pass@example.com:99999/mcp",
    "https://user:pass@exa mple.com/mcp",
    " https://user:pass@exa mple.com/mcp",
    "https:\\user:pass@exa mple.com/mcp",
    "https://user:pass\uff20exa mple.com/mcp",
    "//user:pass@exa mple.com/mcp",
  ])("is refused when a URL no parser reads holds a user name or password (%j)", (url) => {
    expect(() => new URL(url)).toThrow();
    const problem = problemOf(server({ remotes: [{ type: "streamable-http", url }] }));
    expect(problem).toBe("remotes.0 has a user name or password in its URL; remove it from the catalog.");
  });

  it.each([
    "https://x.example/mcp?api_key=sk-live-1",
    "https://x.example/mcp?region=eu&accessToken=sk-live-1",
    "https://x.example:{port}/mcp?X-Api-Key=sk-live-1",
  ])("is refused when a remote URL's query holds a credential (%j)", (url) => {
    const problem = problemOf(server({ remotes: [{ type: "streamable-http", url }] }));
    expect(problem).toBe(
      "remotes.0 has a credential in its URL's query; remove it from the catalog: whoever connects supplies it.",
    );
  });

  it("lists a remote URL whose credential parameter is a {variable}, or whose query names none", () => {
    for (const url of ["https://x.example/mcp?api_key={api_key}", "https://x.example/mcp?region=eu"]) {
      expect(checkServerJson(server({ remotes: [{ type: "streamable-http", url }] }))).toHaveProperty(
        "server",
      );
    }
  });

  it("is refused when a package's transport URL's query holds a credential", () => {
    const packages = [
      {
        registryType: "npm",
        identifier: "x",
        version: "1",
        transport: { type: "streamable-http", url: "http://localhost:{port}/mcp?token=abc" },
      },
    ];
    expect(problemOf(server({ packages }))).toBe(
      "packages.0.transport has a credential in its URL's query; remove it from the catalog: whoever connects supplies it.",
    );
  });

  it("is refused when a package's transport URL holds a user name or password", () => {
    const packages = [
      { registryType: "npm", identifier: "x", version: "1", transport: { type: "stdio" } },
      {
        registryType: "npm",
        identifier: "x",
        version: "1",
        transport: { type: "streamable-http", url: "http://user:pass@localhost:{port}/mcp" },
      },
    ];
    expect(problemOf(server({ packages }))).toBe(
      "packages.1.transport has a user name or password in its URL; remove it from the catalog.",
    );
  });

  it("accepts a templated URL no parser reads that holds no user name, and lists it unconnectable", () => {
    const url = "https://example.com:{port}/mcp?contact=ops@example.com";
    const checked = checkServerJson(server({ remotes: [{ type: "streamable-http", url }] }));
    if (!("server" in checked)) throw new Error(checked.problem);
    expect(connectabilityOf(checked.server)).toMatchObject({ connectable: false });
  });
});

describe("catalog ids", () => {
  it("are the registry name lowercased with ~ for the slash, the same every time", () => {
    expect(catalogIdOf("io.github.Owner/Some_Server")).toBe("io.github.owner~some_server");
    expect(catalogIdOf("io.github.Owner/Some_Server")).toBe(catalogIdOf("io.github.owner/some_server"));
    expect(isCatalogId(catalogIdOf("com.example/acme-analytics"))).toBe(true);
    expect(encodeURIComponent("io.github.owner~name")).toBe("io.github.owner~name");
  });

  it.each([
    "",
    "..",
    "../x",
    "a~b/c",
    ".tmp-x~y",
    "a~.b",
    "A~b",
    "a~b~c",
    "a%2F~b",
    "a\u0000~b",
    `a~${"b".repeat(200)}`,
  ])("refuse the hostile or malformed id %j", (id) => {
    expect(isCatalogId(id)).toBe(false);
  });
});

describe("connectability", () => {
  it("is the first streamable-http remote with a concrete http(s) URL", () => {
    const s = server({
      remotes: [
        { type: "sse", url: "https://x/sse" },
        { type: "streamable-http", url: "https://{tenant}.x/mcp" },
        { type: "streamable-http", url: "https://x/mcp" },
      ],
    });
    expect(connectabilityOf(s)).toEqual({ connectable: true, url: "https://x/mcp" });
  });

  it("is not a remote whose URL names a credential in its query, even with no value", () => {
    const s = server({ remotes: [{ type: "streamable-http", url: "https://x/mcp?token=" }] });
    expect(connectabilityOf(s)).toEqual({
      connectable: false,
      reason: expect.stringContaining("names a credential in its query"),
    });
  });

  it("marks SSE-only, package-only, templated and many-header servers with the reason", () => {
    expect(connectabilityOf(server({ remotes: [{ type: "sse", url: "https://x/sse" }] }))).toEqual({
      connectable: false,
      reason: expect.stringContaining("this server offers sse"),
    });
    expect(connectabilityOf(server({ remotes: undefined, packages: [{}] }))).toEqual({
      connectable: false,
      reason: expect.stringContaining("local package"),
    });
    expect(
      connectabilityOf(server({ remotes: [{ type: "streamable-http", url: "https://{t}.x/mcp" }] })),
    ).toEqual({
      connectable: false,
      reason: expect.stringContaining("{variables}"),
    });
    expect(connectabilityOf(server({ remotes: [{ type: "streamable-http", url: "ftp://x/mcp" }] }))).toEqual({
      connectable: false,
      reason: expect.stringContaining("not an http(s) URL"),
    });
    const two = [
      { name: "X-Key", isRequired: true },
      { name: "X-Org", value: "acme" },
    ];
    expect(
      connectabilityOf(
        server({ remotes: [{ type: "streamable-http", url: "https://x/mcp", headers: two }] }),
      ),
    ).toEqual({ connectable: false, reason: expect.stringContaining("needs 2 headers (X-Key, X-Org)") });
  });
});

describe("a connect request from an entry", () => {
  const keyed = server({
    remotes: [
      {
        type: "streamable-http",
        url: "https://x/mcp",
        headers: [{ name: "X-Api-Key", isRequired: true, isSecret: true, description: "Your Acme key" }],
      },
    ],
  });

  it("takes its URL from the entry and a default name from the server name", () => {
    expect(connectRequestFor(entry(server()), {})).toEqual({
      name: "weather",
      url: "https://weather.example.com/mcp",
      auth: { kind: "none" },
    });
    expect(connectRequestFor(entry(server()), { name: "wx", auth: { kind: "none" } }).name).toBe("wx");
  });

  it("asks for the header the server requires, by name and description", () => {
    expect(() => connectRequestFor(entry(keyed), {})).toThrow(
      'This server needs the header "X-Api-Key" (Your Acme key). Send "auth": {"kind": "static", "header": "X-Api-Key", "value": "…"}.',
    );
    expect(() =>
      connectRequestFor(entry(keyed), { auth: { kind: "static", header: "Authorization", value: "k" } }),
    ).toThrow('in the header "X-Api-Key" (Your Acme key), not "Authorization"');
    expect(
      connectRequestFor(entry(keyed), { auth: { kind: "static", header: "x-api-key", value: "k-123" } }).auth,
    ).toEqual({ kind: "static", header: "x-api-key", value: "k-123" });
  });

  it("sends a header whose value the entry fixes when no auth is given", () => {
    const fixed = server({
      remotes: [
        { type: "streamable-http", url: "https://x/mcp", headers: [{ name: "X-Tenant", value: "acme" }] },
      ],
    });
    expect(connectRequestFor(entry(fixed), {}).auth).toEqual({
      kind: "static",
      header: "X-Tenant",
      value: "acme",
    });
  });

  it("refuses bad bodies by what is wrong, and never repeats the value", () => {
    const e = entry(server());
    expect(() => connectRequestFor(e, { url: "https://evil/mcp" })).toThrow('Unknown field "url"');
    expect(() => connectRequestFor(e, { name: 7 })).toThrow('"name" is a string');
    expect(() => connectRequestFor(e, { auth: "token" })).toThrow('"auth" is {"kind": "none"}');
    expect(() => connectRequestFor(e, { auth: { kind: "oauth" } })).toThrow(
      '"auth.kind" is "none" or "static"',
    );
    expect(() => connectRequestFor(e, { auth: { kind: "none", value: "x" } })).toThrow(
      'Unknown field "auth.value"',
    );
    expect(() => connectRequestFor(e, { auth: { kind: "static", header: "A B", value: "v" } })).toThrow(
      '"auth.header" is an HTTP header name',
    );
    for (const value of ["", "line\r\nX-Injected: 1", 42, "x".repeat(8193)]) {
      let message = "";
      try {
        connectRequestFor(e, { auth: { kind: "static", header: "X-Key", value } });
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).toContain('"auth.value" is the header\'s value');
      expect(message).not.toContain("Injected");
    }
  });

  it("refuses an entry that cannot be connected, with the reason", () => {
    const sse = entry(server({ remotes: [{ type: "sse", url: "https://x/sse" }] }));
    expect(() => connectRequestFor(sse, {})).toThrow(expect.objectContaining({ status: 409 }));
    expect(() => connectRequestFor(sse, {})).toThrow(
      "cannot be connected: Atrium connects to streamable-http",
    );
  });

  it.each([
    ["io.github.acme/Weather_API", "weather-api"],
    ["com.example/2fa--tool.", "fa-tool"],
    ["com.example/mcp.server.v2", "mcp-server-v2"],
  ])("names %s %s", (name, expected) => {
    expect(connectionNameOf(name)).toBe(expected);
    expect(expected).toMatch(/^[a-z][a-z0-9-]{0,62}$/);
  });

  it("asks for a name when none can be made", () => {
    expect(() => connectionNameOf("com.example/123")).toThrow('send {"name": "…"}');
  });
});

describe("the catalog's instance.json settings", () => {
  it("resolve catalogDir relative to instance.json, and none when absent", () => {
    expect(resolveCatalogSettings({ catalogDir: "catalog" }, { baseDir: "/etc/atrium" })).toMatchObject({
      catalogDir: "/etc/atrium/catalog",
    });
    expect(resolveCatalogSettings(undefined, { baseDir: "/etc/atrium" })).toMatchObject({
      catalogDir: undefined,
    });
    expect(catalogConfigProperties.catalogDir).toMatchObject({ type: "string", minLength: 1 });
  });
});
