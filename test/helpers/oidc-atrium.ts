import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseInstance } from "../../src/instance/load.ts";
import { createLogger } from "../../src/log.ts";
import { type RunningAtrium, startAtrium } from "../../src/server.ts";
import { oidcSignInAuth, TEST_SESSION, type TestIssuer } from "./oidc-issuer.ts";

export interface OidcAtrium {
  atrium: RunningAtrium;
  /** Closes Atrium and removes its temp dir. */
  stop(): Promise<void>;
}

/**
 * Atrium signing people in at a local OpenID provider: a fresh temp root, port 0, the issuer's
 * browser client registered with Atrium's callback. `auth` replaces the default sign-in config.
 */
export async function startOidcAtrium(
  issuer: TestIssuer,
  auth: Record<string, unknown> = oidcSignInAuth(issuer),
): Promise<OidcAtrium> {
  const dir = await mkdtemp(join(tmpdir(), "atrium-oidc-"));
  const config = parseInstance(
    {
      auth,
      session: TEST_SESSION,
      storage: { root: "./data" },
      http: { host: "127.0.0.1", port: 0, publicUrl: "http://127.0.0.1:0" },
    },
    { source: "test", baseDir: dir },
  );
  const atrium = await startAtrium(config, { log: createLogger("silent") });
  await issuer.registerBrowserClient(atrium.url);
  return {
    atrium,
    async stop() {
      await atrium.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
