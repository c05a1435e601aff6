import { rm } from "node:fs/promises";
import type { Browser, BrowserContext, Page } from "playwright-core";
import {
  capturingLogger,
  startTestAtrium,
  TEST_USER_HEADER,
  type TestAtrium,
  type TestAtriumOptions,
} from "./atrium.ts";
import { launchChromium, newLoopbackContext } from "./browser.ts";
import { CREDENTIALS_SECTION, keyedDir } from "./credential-key.ts";
import type { FakeTime } from "./fake-time.ts";
import { type OAuthRemoteServer, startOAuthRemoteServer } from "./oauth-remote-server.ts";

/** One Atrium, one OAuth-protected MCP server (oauth-remote-server.ts) and Chromium, for the OAuth connection tests. */
export interface OAuthAtrium {
  instance: TestAtrium;
  remote: OAuthRemoteServer;
  browser: Browser;
  captured: ReturnType<typeof capturingLogger>;
  /** A browser context signed in to Atrium as `user` (the test provider reads a header). */
  browserAs(user: string): Promise<{ context: BrowserContext; page: Page }>;
  /** Restarts Atrium on the same data with `changes`; `instance` is the new one, and stop() stops it. */
  restart(changes: Partial<TestAtriumOptions>): Promise<TestAtrium>;
  stop(): Promise<void>;
}

/**
 * Starts the three on `time`'s clock. The loops' intervals are long: a test moves the clock for
 * token lifetimes, not for them.
 */
export async function startOAuthAtrium(
  prefix: string,
  time: FakeTime,
  accessTokenTtlSeconds: number,
): Promise<OAuthAtrium> {
  const dir = await keyedDir(prefix);
  const captured = capturingLogger("debug");
  const remote = await startOAuthRemoteServer({ accessTokenTtlSeconds, clock: time.clock });
  const browser = await launchChromium();
  let instance = await startTestAtrium({
    dir,
    clock: time.clock,
    timers: time.timers,
    log: captured.log,
    sections: {
      credentials: CREDENTIALS_SECTION,
      connections: {
        allowPrivateAddresses: true,
        healthIntervalSeconds: 3600,
        credentialCheckIntervalSeconds: 86_400,
      },
    },
  });
  return {
    get instance() {
      return instance;
    },
    remote,
    browser,
    captured,
    async browserAs(user) {
      const context = await newLoopbackContext(browser);
      await context.setExtraHTTPHeaders({ [TEST_USER_HEADER]: user });
      return { context, page: await context.newPage() };
    },
    async restart(changes) {
      instance = await instance.restart(changes);
      return instance;
    },
    async stop() {
      await instance.stop();
      await browser.close();
      await remote.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
