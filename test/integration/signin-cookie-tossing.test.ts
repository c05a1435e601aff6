import { execFileSync } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { request as httpRequest } from "node:http";
import { createServer as createHttpsServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, BrowserContext } from "playwright-core";
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from "vitest";
import { SECURE_SESSION_COOKIE } from "../../src/identity/sessions.ts";
import { parseInstance } from "../../src/instance/load.ts";
import { createLogger } from "../../src/log.ts";
import { type RunningAtrium, startAtrium } from "../../src/server.ts";
import { launchChromium } from "../helpers/browser.ts";
import {
  oidcSignInAuth,
  signInUpToCallback,
  startOidcIssuer,
  TEST_SESSION,
  type TestIssuer,
} from "../helpers/oidc-issuer.ts";

// Login CSRF by cookie tossing. Atrium is at https://app.atrium.test behind TLS; an attacker
// controls the sibling https://evil.atrium.test. The attacker starts a sign-in of their own,
// stops before its callback, plants that sealed login state in the victim's browser with
// Domain=atrium.test, and sends the victim to the attacker's callback URL. With the login
// state named `__Secure-` on Path=/auth/callback the browser took the planted cookie and the
// victim was signed in as the attacker; `__Host-` is taken only from Atrium's own host (ADR 0072).

const PARENT_DOMAIN = "atrium.test";

let dir: string;
let issuer: TestIssuer;
let atrium: RunningAtrium;
let proxy: Server;
let browser: Browser;
let context: BrowserContext;
let publicUrl: string;
let attackerUrl: string;
/** What the attacker's site answers. */
let attackerPage = "";

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "atrium-tossing-"));
  // One certificate for both sites; the browser is told to accept it (it is nobody's CA).
  execFileSync(
    "openssl",
    [
      ...["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"],
      ...["-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem")],
      ...["-subj", `/CN=${PARENT_DOMAIN}`, "-addext", `subjectAltName=DNS:*.${PARENT_DOMAIN}`],
    ],
    { stdio: "ignore" },
  );
  proxy = createHttpsServer({
    key: await readFile(join(dir, "key.pem")),
    cert: await readFile(join(dir, "cert.pem")),
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  const port = (proxy.address() as AddressInfo).port;
  publicUrl = `https://app.${PARENT_DOMAIN}:${port}`;
  attackerUrl = `https://evil.${PARENT_DOMAIN}:${port}`;

  issuer = await startOidcIssuer();
  const config = parseInstance(
    {
      auth: oidcSignInAuth(issuer),
      session: TEST_SESSION,
      storage: { root: "./data" },
      http: { host: "127.0.0.1", port: 0, publicUrl },
    },
    { source: "test", baseDir: dir },
  );
  atrium = await startAtrium(config, { log: createLogger("silent") });
  await issuer.registerBrowserClient(publicUrl);
  // The TLS front: app.* goes to Atrium, evil.* is the attacker's page.
  proxy.on("request", (request, response) => {
    if (request.headers.host?.startsWith("evil.")) {
      response.writeHead(200, { "content-type": "text/html" });
      response.end(attackerPage);
      return;
    }
    const upstream = httpRequest(
      {
        host: "127.0.0.1",
        port: atrium.port,
        method: request.method,
        path: request.url,
        headers: request.headers,
      },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    request.pipe(upstream);
  });
  browser = await launchChromium([
    "--ignore-certificate-errors",
    `--host-resolver-rules=MAP *.${PARENT_DOMAIN} 127.0.0.1`,
  ]);
});

afterAll(async () => {
  await browser?.close();
  await atrium?.close();
  await issuer?.close();
  proxy?.closeAllConnections();
  await new Promise((resolve) => proxy?.close(resolve));
  await rm(dir, { recursive: true, force: true });
});

beforeEach(async () => {
  context = await browser.newContext({ ignoreHTTPSErrors: true });
  // Only the two test sites and loopback: nothing leaves this machine.
  await context.route(
    (url) => !(url.hostname.endsWith(`.${PARENT_DOMAIN}`) || url.hostname === "127.0.0.1"),
    (route) => route.abort("blockedbyclient"),
  );
});

afterEach(async () => {
  await context?.close();
});

it("a sibling subdomain cannot plant its login state and sign the victim in as the attacker", async () => {
  const { loginState, callback } = await signInUpToCallback(
    publicUrl,
    "mallory",
    `http://127.0.0.1:${atrium.port}`,
  );
  const [name, value] = loginState.split("=") as [string, string];
  // Every way a sibling can write it: under Atrium's name, and under the name it once had.
  const tossed = [...new Set([name, "__Secure-atrium_login"])].map(
    (cookie) => `${cookie}=${value}; Domain=${PARENT_DOMAIN}; Path=/; Secure; SameSite=Lax`,
  );
  attackerPage = `<!doctype html><script>
${tossed.map((cookie) => `document.cookie = ${JSON.stringify(cookie)};`).join("\n")}
location.href = ${JSON.stringify(callback.href)};
</script>`;

  const page = await context.newPage();
  await page.goto(`${attackerUrl}/`);
  await page.waitForURL((url) => url.hostname === `app.${PARENT_DOMAIN}`);
  await page.waitForLoadState();
  expect(await page.textContent("main")).not.toContain("Signed in as Test mallory");
  expect(await page.textContent("h1")).toBe("Sign-in expired");
  const cookies = (await context.cookies(publicUrl)).map((cookie) => cookie.name);
  expect(cookies).not.toContain(SECURE_SESSION_COOKIE);
  expect(cookies).not.toContain("__Host-atrium_login");
});
