import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { everyLeaseLocal } from "../../../src/kernel/leases.ts";
import { Scheduler } from "../../../src/kernel/scheduler.ts";
import { createLogger } from "../../../src/log.ts";
import type { AppContext, PlatformApp } from "../../../src/platform/app.ts";
import { AppTools } from "../../../src/platform/app-tools.ts";
import {
  closeAppSources,
  createWorkspaceRegistry,
  type KernelContext,
  publishedSkills,
  startApps,
  workspaceSources,
} from "../../../src/platform/kit.ts";
import { platformInput } from "../../../src/platform/platform-tool.ts";
import { ToolDispatch } from "../../../src/sources/dispatch.ts";
import { IdleCache } from "../../../src/sources/idle-cache.ts";
import { SourceRegistry } from "../../../src/sources/registry.ts";
import { Router } from "../../../src/sources/router.ts";
import type { Source } from "../../../src/sources/source.ts";
import { CredentialStore } from "../../../src/storage/credential-store.ts";
import { KeyedLock } from "../../../src/storage/keyed-lock.ts";
import { NO_CALLER } from "../../../src/workspace/access-check.ts";
import { FakeTime } from "../../helpers/fake-time.ts";
import { openTempRoot, type TempRoot } from "../../helpers/temp-root.ts";

const OWNER = `usr_${"a".repeat(24)}`;
let temp: TempRoot;
let kernel: KernelContext;

beforeEach(async () => {
  temp = await openTempRoot("kit", OWNER);
  const time = new FakeTime();
  const log = createLogger("silent");
  const router = new Router(log);
  const registries = new IdleCache<SourceRegistry>(
    async () => {
      throw new Error("no registry in this test");
    },
    async () => undefined,
    60_000,
    { clock: time.clock },
  );
  kernel = {
    layout: temp.layout,
    workspaces: temp.workspaces,
    users: { isDeactivated: () => false },
    dispatch: new ToolDispatch(temp.workspaces, { isDeactivated: () => false }, registries, router),
    sources: workspaceSources(registries),
    publishedSkills: publishedSkills(),
    events: temp.events,
    clock: time.clock,
    timers: time.timers,
    scheduler: new Scheduler({ clock: time.clock, timers: time.timers, leases: everyLeaseLocal, log }),
    credentials: await CredentialStore.open(temp.layout, undefined),
    leases: new KeyedLock(),
    publicUrl: () => "http://127.0.0.1:1",
    log,
  };
});

afterEach(async () => {
  await temp.remove();
});

function app(name: string, partition?: string, seen?: (context: AppContext<unknown>) => void): PlatformApp {
  return {
    name,
    ...(partition === undefined ? {} : { partition }),
    start(context) {
      seen?.(context);
      return { tools: new AppTools(name) };
    },
  };
}

describe("startApps", () => {
  it("gives each app its own folder of every workspace, its name by default", async () => {
    const contexts: AppContext<unknown>[] = [];
    await startApps(
      [
        app("alpha", undefined, (c) => contexts.push(c)),
        app("beta", "beta-records", (c) => contexts.push(c)),
      ],
      kernel,
      { sections: {}, baseDir: temp.root },
    );
    expect(contexts.map((c) => c.storage.partition)).toEqual(["alpha", "beta-records"]);
    expect(contexts[1]?.storage.ownerDir(temp.ws, OWNER)).toBe(
      temp.layout.ownerDir(temp.ws, "beta-records", OWNER),
    );
  });

  it("refuses two apps with one name, two apps with one folder, and a name that is not a source name", async () => {
    const where = { sections: {}, baseDir: temp.root };
    await expect(startApps([app("alpha"), app("alpha", "other")], kernel, where)).rejects.toThrow(
      'Two platform apps are named "alpha"',
    );
    await expect(startApps([app("alpha"), app("beta", "alpha")], kernel, where)).rejects.toThrow(
      'Two platform apps keep their records in "alpha"',
    );
    await expect(startApps([app("my_notes")], kernel, where)).rejects.toThrow("lowercase words");
    await expect(startApps([app("Bad")], kernel, where)).rejects.toThrow("lowercase words");
    await expect(startApps([app("gamma", "../up")], kernel, where)).rejects.toThrow("storage partition");
  });

  it("hands an app its instance.json section resolved by the app's own rule", async () => {
    let settings: unknown;
    const configured: PlatformApp<{ size: number }> = {
      name: "sized",
      config: {
        schema: { type: "object" },
        resolve: (section) => ({ size: (section as { size?: number } | undefined)?.size ?? 7 }),
      },
      start(context) {
        settings = context.settings;
        return { tools: new AppTools("sized") };
      },
    };
    await startApps([configured], kernel, { sections: { sized: { size: 3 } }, baseDir: temp.root });
    expect(settings).toEqual({ size: 3 });
    await startApps([configured], kernel, { sections: {}, baseDir: temp.root });
    expect(settings).toEqual({ size: 7 });
  });
});

describe("an app's one source", () => {
  it("is lent to every workspace's registry, told each call's workspace, and closed by the instance", async () => {
    let closed = 0;
    const seen: string[] = [];
    const echo: PlatformApp = {
      name: "echo",
      start: () => {
        const tools = new AppTools("echo");
        tools.registerTool(
          "where",
          { description: "Say which workspace asked.", inputSchema: platformInput({}), annotations: {} },
          async (caller) => {
            seen.push(caller.workspaceId);
            return { content: [{ type: "text", text: caller.workspaceId }] };
          },
        );
        tools.server.server.onclose = () => {
          closed += 1;
        };
        return { tools };
      },
    };
    const apps = await startApps([echo], kernel, { sections: {}, baseDir: temp.root });
    const router = new Router(createLogger("silent"));
    const other = "ws_ffffffffffffffff";
    const first = await createWorkspaceRegistry(temp.ws, apps);
    const second = await createWorkspaceRegistry(other, apps);
    const call = { requestId: "8d1f7c4e-0000-4000-8000-000000000002" };
    const answer = async (registry: SourceRegistry, workspaceId: string) =>
      (
        await router.callTool(
          registry,
          { principalId: OWNER, workspaceId, access: NO_CALLER },
          "echo__where",
          {},
          call,
        )
      ).content;
    expect(await answer(first, temp.ws)).toEqual([{ type: "text", text: temp.ws }]);
    expect(await answer(second, other)).toEqual([{ type: "text", text: other }]);
    expect(seen).toEqual([temp.ws, other]);
    // A registry evicted while the other still serves: the lent source stays open for it.
    await first.close();
    expect(closed).toBe(0);
    expect(await answer(second, other)).toEqual([{ type: "text", text: other }]);
    await second.close();
    expect(closed).toBe(0);
    await closeAppSources(apps);
    expect(closed).toBe(1);
  });
});

describe("workspaceSources", () => {
  it("builds a source only for a workspace whose registry is loaded", async () => {
    const loaded = new SourceRegistry(temp.ws);
    const registries = new IdleCache<SourceRegistry>(
      async () => loaded,
      async () => undefined,
      60_000,
    );
    const sources = workspaceSources(registries);
    const built: string[] = [];
    const build = (label: string) => async (): Promise<Source> => {
      built.push(label);
      return {
        name: "notes",
        listTools: async () => [],
        callTool: async () => ({ content: [] }),
        close: async () => undefined,
      };
    };
    // No registry is loaded yet: it will build its sources itself when it is; none is read now.
    expect(await sources.replace(temp.ws, build("before"))).toBeUndefined();
    expect(built).toEqual([]);
    await registries.use(temp.ws, async () => undefined);
    expect(await sources.replace(temp.ws, build("first"))).toBeUndefined();
    const first = loaded.get("notes", OWNER);
    expect(await sources.replace(temp.ws, build("second"))).toBe(first);
    expect(await sources.replace("ws_ffffffffffffffff", build("elsewhere"))).toBeUndefined();
    expect(built).toEqual(["first", "second"]);
    await registries.close();
  });
});
