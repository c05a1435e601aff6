import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BootError } from "../../../src/errors.ts";
import { followPort, isLoopbackHost, loadInstance } from "../../../src/instance/load.ts";
import { MAX_BODY_BYTES_DEFAULT } from "../../../src/instance/schema.ts";
import {
  DEFAULT_CATALOG_CACHE_BYTES,
  MAX_CATALOG_CACHE_BYTES,
  MIN_CATALOG_CACHE_BYTES,
} from "../../../src/platform/connections/catalog-config.ts";
import { connectionsConfig } from "../../../src/platform/connections/config.ts";
import { MAX_CONVERSATION_BYTES_LIMIT } from "../../../src/platform/conversations/config.ts";
import { filesConfig, MAX_UPLOAD_BYTES_DEFAULT } from "../../../src/platform/files/config.ts";
import { PLATFORM_APPS } from "../../../src/platform/index.ts";
import { configSections } from "../../../src/platform/kit.ts";

const MINIMAL = {
  auth: { adapter: "dev" },
  storage: { root: "./data" },
  http: { host: "127.0.0.1", port: 8787, publicUrl: "http://127.0.0.1:8787" },
};

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "atrium-instance-"));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function writeInstance(content: unknown, name = "instance.json"): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, typeof content === "string" ? content : JSON.stringify(content));
  return path;
}

async function bootError(load: Promise<unknown>): Promise<string> {
  const error = await load.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(BootError);
  return (error as BootError).message;
}

describe("loadInstance", () => {
  it("a missing file is a BootError that says to copy instance.example.json", async () => {
    const path = join(dir, "instance.json");
    const message = await bootError(loadInstance(path));
    expect(message).toContain(path);
    expect(message).toContain("Copy instance.example.json to instance.json");
    expect(message).toContain("auth.adapter");
  });

  it("a file that is not JSON is a BootError naming the file", async () => {
    const path = await writeInstance("{ auth: dev");
    const message = await bootError(loadInstance(path));
    expect(message).toContain(path);
    expect(message).toContain("is not valid JSON");
  });

  it("a file that is not JSON is told by line and column, never by the text around the fault", async () => {
    // An unquoted secret: V8's message would quote `"{"secret":sk-live-AB"...`.
    const path = await writeInstance('{\n  "auth": {"adapter": "dev"},\n  "secret": sk-live-ABCDEF\n}');
    const message = await bootError(loadInstance(path));
    expect(message).toBe(`${path} is not valid JSON (line 3, column 13).`);
    expect(message).not.toContain("sk-live");
  });

  it("an unknown top-level field is named", async () => {
    const path = await writeInstance({ ...MINIMAL, plugins: [] });
    expect(await bootError(loadInstance(path))).toContain('(top level): unknown field "plugins"');
  });

  it("an unknown nested field is named with its section", async () => {
    const path = await writeInstance({ ...MINIMAL, http: { ...MINIMAL.http, tls: true } });
    expect(await bootError(loadInstance(path))).toContain('http: unknown field "tls"');
  });

  it("a field of the wrong type is named with its path", async () => {
    const path = await writeInstance({ ...MINIMAL, http: { ...MINIMAL.http, port: "8787" } });
    expect(await bootError(loadInstance(path))).toMatch(/http\.port: must be integer/);
  });

  it("a missing required field is named", async () => {
    const { auth: _auth, ...rest } = MINIMAL;
    const path = await writeInstance(rest);
    expect(await bootError(loadInstance(path))).toContain('(top level): missing field "auth"');
  });

  it("an adapter outside the enum is refused with the allowed values", async () => {
    const path = await writeInstance({ ...MINIMAL, auth: { adapter: "magic" } });
    expect(await bootError(loadInstance(path))).toContain('auth.adapter: must be one of "dev"');
  });

  it("a log level outside the enum is refused", async () => {
    const path = await writeInstance({ ...MINIMAL, log: { level: "verbose" } });
    expect(await bootError(loadInstance(path))).toContain("log.level: must be one of");
  });

  it.for([
    ["https://atrium.example.com/?tenant=a", "a query"],
    ["https://atrium.example.com/?", "a query"],
    ["https://atrium.example.com/#top", "a fragment"],
    ["https://admin:hunter2@atrium.example.com", "a user name or password"],
    ["https://admin@atrium.example.com", "a user name or password"],
  ])(
    "a publicUrl with %j's extra part is refused, naming the field and never echoing it",
    async ([publicUrl, what]) => {
      const path = await writeInstance({ ...MINIMAL, http: { ...MINIMAL.http, publicUrl } });
      const message = await bootError(loadInstance(path));
      expect(message).toContain("http.publicUrl");
      expect(message).toContain(`without ${what}`);
      expect(message).not.toContain("hunter2");
      expect(message).not.toContain("tenant");
    },
  );

  it.for([
    "http://127.0.0.1:8787/atrium",
    "https://atrium.example.com/atrium/",
    "https://atrium.example.com//",
  ])(
    "a publicUrl with a path (%s) is refused, saying to give Atrium its own host name or port",
    async (publicUrl) => {
      const path = await writeInstance({ ...MINIMAL, http: { ...MINIMAL.http, publicUrl } });
      const message = await bootError(loadInstance(path));
      expect(message).toContain("http.publicUrl");
      expect(message).toContain("without a path");
      expect(message).toContain("its own host name or port");
    },
  );

  it("a publicUrl that ends in a slash is the root, not a path", async () => {
    const publicUrl = "https://atrium.example.com:8443/";
    const path = await writeInstance({ ...MINIMAL, http: { ...MINIMAL.http, publicUrl } });
    expect((await loadInstance(path)).http.publicUrl).toBe("https://atrium.example.com:8443");
  });

  it("accepts a file that starts with a UTF-8 byte order mark", async () => {
    const path = await writeInstance(`\uFEFF${JSON.stringify(MINIMAL)}`);
    expect((await loadInstance(path)).http.publicUrl).toBe("http://127.0.0.1:8787");
  });

  it.for([
    "sk_live_51HxYzAbCdEfGh",
    "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    "AKIAIOSFODNN7EXAMPLE",
    "a".repeat(65),
  ])("an env name that looks like a secret (%s) is not echoed when it is not set", async (name) => {
    const path = await writeInstance({
      ...MINIMAL,
      credentials: { keys: [{ version: 1, key: { env: name } }] },
    });
    const message = await bootError(loadInstance(path));
    expect(message).toContain("credentials.keys[0].key names an environment variable that is not set");
    expect(message).not.toContain(name);
  });

  it("an ordinary env name that is not set is named", async () => {
    const path = await writeInstance({
      ...MINIMAL,
      credentials: { keys: [{ version: 1, key: { env: "ATRIUM_NOT_SET_IN_THIS_TEST" } }] },
    });
    expect(await bootError(loadInstance(path))).toContain(
      "names the environment variable ATRIUM_NOT_SET_IN_THIS_TEST, which is not set",
    );
  });

  it("a publicUrl that is not http(s) is refused", async () => {
    const path = await writeInstance({
      ...MINIMAL,
      http: { ...MINIMAL.http, publicUrl: "ftp://example.com" },
    });
    expect(await bootError(loadInstance(path))).toContain("http.publicUrl");
  });

  it("reports every problem at once, not only the first", async () => {
    const path = await writeInstance({ ...MINIMAL, auth: { adapter: "magic" }, extra: 1 });
    const message = await bootError(loadInstance(path));
    expect(message).toContain("auth.adapter");
    expect(message).toContain('unknown field "extra"');
  });

  it("applies the defaults for optional fields", async () => {
    const config = await loadInstance(await writeInstance(MINIMAL));
    expect(config.http.maxBodyBytes).toBe(MAX_BODY_BYTES_DEFAULT);
    expect(config.sections).toEqual({});
    expect(config.log.level).toBe("info");
    expect(config.auth).toEqual({ adapter: "dev" });
    expect(config.http).toMatchObject({ host: "127.0.0.1", port: 8787 });
  });

  it("validates each platform app's section with the file, and keeps it for the app to resolve", async () => {
    const sections = configSections(PLATFORM_APPS);
    const bad = await writeInstance({ ...MINIMAL, files: { maxUploadBytes: 0 }, skills: { orgDir: 3 } });
    const message = await bootError(loadInstance(bad, { sections }));
    expect(message).toContain("files.maxUploadBytes");
    expect(message).toContain("skills.orgDir");
    const good = await loadInstance(await writeInstance({ ...MINIMAL, files: { maxUploadBytes: 10 } }), {
      sections,
    });
    expect(good.sections).toEqual({ files: { maxUploadBytes: 10 } });
    expect(filesConfig.resolve(good.sections.files, good).maxUploadBytes).toBe(10);
    expect(filesConfig.resolve(undefined, good).maxUploadBytes).toBe(MAX_UPLOAD_BYTES_DEFAULT);
    // Without the apps' sections, an app's key is as unknown as any other.
    expect(await bootError(loadInstance(bad))).toContain('unknown field "files"');
  });

  it("conversations.maxConversationBytes keeps up to 128 MiB and refuses more by name", async () => {
    // Past it, appends could number an event past the 21 bits the search index keeps (adr/0117).
    const sections = configSections(PLATFORM_APPS);
    const at = (maxConversationBytes: unknown) =>
      writeInstance({ ...MINIMAL, conversations: { maxConversationBytes } });
    const most = await loadInstance(await at(MAX_CONVERSATION_BYTES_LIMIT), { sections });
    expect(most.sections).toEqual({ conversations: { maxConversationBytes: 128 * 1024 * 1024 } });
    const message = await bootError(loadInstance(await at(MAX_CONVERSATION_BYTES_LIMIT + 1), { sections }));
    expect(message).toContain("conversations.maxConversationBytes");
  });

  it("connections.catalogCacheBytes is a whole number of 8 MiB to 64 GiB; others are refused at boot by name (adr/0179)", async () => {
    const sections = configSections(PLATFORM_APPS);
    const at = (catalogCacheBytes: unknown) =>
      writeInstance({ ...MINIMAL, connections: { catalogCacheBytes } });
    for (const bad of [
      MIN_CATALOG_CACHE_BYTES - 1,
      MAX_CATALOG_CACHE_BYTES + 1,
      9 * 1024 * 1024 + 0.5,
      "64MiB",
      -1,
    ]) {
      const message = await bootError(loadInstance(await at(bad), { sections }));
      expect(message).toContain("connections.catalogCacheBytes");
    }
    expect(await bootError(loadInstance(await at(1000), { sections }))).toContain(
      "connections.catalogCacheBytes: must be >= 8388608",
    );
    const least = await loadInstance(await at(MIN_CATALOG_CACHE_BYTES), { sections });
    expect(connectionsConfig.resolve(least.sections.connections, least).catalogCacheBytes).toBe(
      8 * 1024 * 1024,
    );
    expect(connectionsConfig.resolve(undefined, least).catalogCacheBytes).toBe(DEFAULT_CATALOG_CACHE_BYTES);
  });

  it("keeps values that are set", async () => {
    const config = await loadInstance(
      await writeInstance({
        ...MINIMAL,
        http: { ...MINIMAL.http, maxBodyBytes: 2048 },
        log: { level: "warn" },
      }),
    );
    expect(config.http.maxBodyBytes).toBe(2048);
    expect(config.log.level).toBe("warn");
  });

  it("storage.archiveRetentionDays is unset by default, keeps a whole number from 1 to 36500, and refuses anything else by name", async () => {
    expect((await loadInstance(await writeInstance(MINIMAL))).storage.archiveRetentionDays).toBeUndefined();
    for (const archiveRetentionDays of [1, 36_500]) {
      const config = await loadInstance(
        await writeInstance({ ...MINIMAL, storage: { ...MINIMAL.storage, archiveRetentionDays } }),
      );
      expect(config.storage.archiveRetentionDays).toBe(archiveRetentionDays);
    }
    for (const archiveRetentionDays of [0, 36_501, 1.5, "30"]) {
      const message = await bootError(
        loadInstance(
          await writeInstance({ ...MINIMAL, storage: { ...MINIMAL.storage, archiveRetentionDays } }),
        ),
      );
      expect(message).toContain("storage.archiveRetentionDays");
    }
  });

  it("oauth.refreshReuseGraceSeconds is 30 by default, keeps a whole number from 0 to 60, and refuses anything else by name", async () => {
    expect((await loadInstance(await writeInstance(MINIMAL))).oauth.refreshReuseGraceSeconds).toBe(30);
    for (const refreshReuseGraceSeconds of [0, 60]) {
      const config = await loadInstance(
        await writeInstance({ ...MINIMAL, oauth: { refreshReuseGraceSeconds } }),
      );
      expect(config.oauth.refreshReuseGraceSeconds).toBe(refreshReuseGraceSeconds);
    }
    for (const refreshReuseGraceSeconds of [-1, 61, 1.5, "30"]) {
      const message = await bootError(
        loadInstance(await writeInstance({ ...MINIMAL, oauth: { refreshReuseGraceSeconds } })),
      );
      expect(message).toContain("oauth.refreshReuseGraceSeconds");
    }
  });

  it("workspaces.maxAdministeredPerPerson is 1000 by default, keeps a whole number from 1 to 100000, and refuses anything else by name", async () => {
    expect((await loadInstance(await writeInstance(MINIMAL))).workspaces.maxAdministeredPerPerson).toBe(1000);
    for (const maxAdministeredPerPerson of [1, 100_000]) {
      const config = await loadInstance(
        await writeInstance({ ...MINIMAL, workspaces: { maxAdministeredPerPerson } }),
      );
      expect(config.workspaces.maxAdministeredPerPerson).toBe(maxAdministeredPerPerson);
    }
    for (const maxAdministeredPerPerson of [0, 100_001, 1.5, "10", null]) {
      const message = await bootError(
        loadInstance(await writeInstance({ ...MINIMAL, workspaces: { maxAdministeredPerPerson } })),
      );
      expect(message, String(maxAdministeredPerPerson)).toContain("workspaces.maxAdministeredPerPerson");
    }
    const misspelt = await bootError(
      loadInstance(await writeInstance({ ...MINIMAL, workspaces: { maxPerPerson: 5 } })),
    );
    expect(misspelt).toContain("maxPerPerson");
  });

  it("http.drainSeconds is 10 by default, keeps a whole number from 0 to 600, and refuses anything else by name", async () => {
    expect((await loadInstance(await writeInstance(MINIMAL))).http.drainSeconds).toBe(10);
    for (const drainSeconds of [0, 600]) {
      const config = await loadInstance(
        await writeInstance({ ...MINIMAL, http: { ...MINIMAL.http, drainSeconds } }),
      );
      expect(config.http.drainSeconds).toBe(drainSeconds);
    }
    for (const drainSeconds of [-1, 601, 1.5, "10"]) {
      const message = await bootError(
        loadInstance(await writeInstance({ ...MINIMAL, http: { ...MINIMAL.http, drainSeconds } })),
      );
      expect(message).toContain("http.drainSeconds");
    }
  });

  it.for([
    ["idleTimeoutSeconds", 120, [1, 3600], [0, 3601, 1.5, "120"]],
    ["requestTimeoutSeconds", 300, [1, 86_400], [0, 86_401, 2.5, "300"]],
  ] as const)(
    "http.%s has its default, keeps a whole number in its range, and refuses anything else by name",
    async ([field, fallback, kept, refused]) => {
      expect((await loadInstance(await writeInstance(MINIMAL))).http[field]).toBe(fallback);
      for (const value of kept) {
        const config = await loadInstance(
          await writeInstance({ ...MINIMAL, http: { ...MINIMAL.http, [field]: value } }),
        );
        expect(config.http[field]).toBe(value);
      }
      for (const value of refused) {
        const message = await bootError(
          loadInstance(await writeInstance({ ...MINIMAL, http: { ...MINIMAL.http, [field]: value } })),
        );
        expect(message).toContain(`http.${field}`);
      }
    },
  );

  it("strips a trailing slash from publicUrl", async () => {
    const config = await loadInstance(
      await writeInstance({
        ...MINIMAL,
        http: { ...MINIMAL.http, publicUrl: "https://atrium.example.com/" },
      }),
    );
    expect(config.http.publicUrl).toBe("https://atrium.example.com");
  });

  it("resolves a relative storage.root against the instance file's folder, not the cwd", async () => {
    await mkdir(join(dir, "conf"));
    const config = await loadInstance(await writeInstance(MINIMAL, join("conf", "instance.json")));
    expect(config.storage.root).toBe(join(dir, "conf", "data"));
  });

  it("keeps an absolute storage.root as it is", async () => {
    const config = await loadInstance(await writeInstance({ ...MINIMAL, storage: { root: "/srv/atrium" } }));
    expect(config.storage.root).toBe("/srv/atrium");
  });

  it("resolves --data against the working directory, not the file's folder", async () => {
    const config = await loadInstance(await writeInstance(MINIMAL), { dataRoot: "cli-data" });
    expect(config.storage.root).toBe(join(process.cwd(), "cli-data"));
  });

  it("refuses an empty --data, which is never the file's own root", async () => {
    await expect(loadInstance(await writeInstance(MINIMAL), { dataRoot: "" })).rejects.toThrow(
      "The data root given (--data) is empty: give a folder.",
    );
  });

  it("--port replaces http.port", async () => {
    const config = await loadInstance(await writeInstance(MINIMAL), { port: 0 });
    expect(config.http.port).toBe(0);
  });
});

describe("auth.claims", () => {
  process.env.ATRIUM_TEST_CLAIMS_SECRET = "s".repeat(48);
  const session = { secret: { env: "ATRIUM_TEST_CLAIMS_SECRET" } };
  const oidc = (claims: Record<string, unknown>) => ({
    ...MINIMAL,
    session,
    auth: { adapter: "oidc", issuer: "https://login.example.com/", clientId: "atrium", claims },
  });

  it("takes orgRole with orgAdminValues together", async () => {
    const config = await loadInstance(
      await writeInstance(oidc({ orgRole: "groups", orgAdminValues: ["atrium-admins"] })),
    );
    expect(config.auth.adapter === "oidc" && config.auth.claims.orgRole).toBe("groups");
  });

  it("refuses orgAdminValues without orgRole under oidc, naming both", async () => {
    const message = await bootError(
      loadInstance(await writeInstance(oidc({ orgAdminValues: ["atrium-admins"] }))),
    );
    expect(message).toContain("auth.claims.orgAdminValues");
    expect(message).toContain("auth.claims.orgRole");
  });

  it.for([{ orgRole: "groups" }, { orgRole: "groups", orgAdminValues: [] }])(
    "refuses orgRole without orgAdminValues under oidc (%j)",
    async (claims) => {
      const message = await bootError(loadInstance(await writeInstance(oidc(claims))));
      expect(message).toContain('auth.claims.orgRole ("groups")');
      expect(message).toContain("auth.claims.orgAdminValues");
    },
  );

  it("lets workos's default complete either half", async () => {
    process.env.ATRIUM_TEST_CLAIMS_API_KEY = "sk_test";
    const workos = (claims: Record<string, unknown>) => ({
      ...MINIMAL,
      session,
      auth: {
        adapter: "workos",
        authkitDomain: "https://auth.example.com",
        clientId: "client_1",
        apiKey: { env: "ATRIUM_TEST_CLAIMS_API_KEY" },
        claims,
      },
    });
    const values = await loadInstance(await writeInstance(workos({ orgAdminValues: ["owner"] })));
    expect(values.auth.adapter === "workos" && values.auth.claims.orgRole).toBe("role");
    const role = await loadInstance(await writeInstance(workos({ orgRole: "org_role" })));
    expect(role.auth.adapter === "workos" && role.auth.claims.orgAdminValues).toEqual(["admin"]);
  });
});

describe("followPort", () => {
  it("moves a loopback URL to the port actually bound", () => {
    expect(followPort("http://127.0.0.1:8787", 43210)).toBe("http://127.0.0.1:43210");
    expect(followPort("http://localhost:8787", 43210)).toBe("http://localhost:43210");
    expect(followPort("http://[::1]:8787", 43210)).toBe("http://[::1]:43210");
  });

  it("keeps a loopback URL's path, without a trailing slash", () => {
    expect(followPort("http://127.0.0.1:8787/atrium", 5000)).toBe("http://127.0.0.1:5000/atrium");
    expect(followPort("http://127.0.0.1/", 5000)).toBe("http://127.0.0.1:5000");
  });

  it("keeps a non-loopback URL, which is a proxy's", () => {
    expect(followPort("https://atrium.example.com", 43210)).toBe("https://atrium.example.com");
    expect(followPort("http://10.0.0.5:8787", 43210)).toBe("http://10.0.0.5:8787");
  });
});

describe("isLoopbackHost", () => {
  it("knows the loopback names and nothing else", () => {
    for (const host of ["127.0.0.1", "localhost", "[::1]", "::1"]) expect(isLoopbackHost(host)).toBe(true);
    for (const host of ["0.0.0.0", "example.com", "localhost.example.com", "127.0.0.2"]) {
      expect(isLoopbackHost(host)).toBe(false);
    }
  });
});
