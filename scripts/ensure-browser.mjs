// Makes `npm test` find the browser its sign-in tests drive: Debian's Chromium at
// /usr/bin/chromium (or the binary $ATRIUM_CHROMIUM names). Running as root with apt-get,
// it installs Debian's `chromium` package; otherwise it names the command to run. Playwright
// never downloads a browser of its own (test/helpers/browser.ts launches this one).
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

const say = (text) => process.stderr.write(`${text}\n`);
const configured = process.env.ATRIUM_CHROMIUM;
const chromium = configured ?? "/usr/bin/chromium";

if (existsSync(chromium)) process.exit(0);
if (configured !== undefined) {
  say(
    `ATRIUM_CHROMIUM names ${configured}, which does not exist: point it at a Chromium binary, or unset it.`,
  );
  process.exit(1);
}

const INSTALL = "apt-get install -y --no-install-recommends chromium";
const isRoot = process.getuid?.() === 0;
if (!isRoot || !existsSync("/usr/bin/apt-get")) {
  say(
    `The sign-in tests drive Chromium at ${chromium}, which is missing. Install Debian's package with\n` +
      `  sudo apt-get update && sudo ${INSTALL}\n` +
      "or set ATRIUM_CHROMIUM to a Chromium binary. (Playwright is not allowed to download its own browser.)",
  );
  process.exit(1);
}

say(`Installing Chromium for the sign-in tests (${INSTALL})…`);
const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
for (const args of [["update"], INSTALL.split(" ").slice(1)]) {
  const result = spawnSync("apt-get", args, { stdio: "inherit", env });
  if (result.status !== 0) {
    say(`apt-get ${args.join(" ")} failed (exit ${result.status ?? result.signal}).`);
    process.exit(1);
  }
}
if (!existsSync(chromium)) {
  say(`apt-get installed chromium, but ${chromium} still does not exist.`);
  process.exit(1);
}
