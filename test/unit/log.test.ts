import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.ts";

/** A destination that keeps every line pino writes, parsed. */
function memoryDestination() {
  const lines: Record<string, unknown>[] = [];
  const raw: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      const text = String(chunk);
      raw.push(text);
      for (const line of text.split("\n")) if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { stream, lines, raw };
}

const SECRETS = {
  authorization: "Bearer sekrit-authorization",
  token: "sekrit-token",
  secret: "sekrit-secret",
  password: "sekrit-password",
  cookie: "session=sekrit-cookie",
};

describe("createLogger", () => {
  it("censors secret fields at the top level", () => {
    const { stream, lines, raw } = memoryDestination();
    createLogger("info", stream).info({ ...SECRETS, user: "alice" }, "signed in");
    expect(lines[0]).toMatchObject({
      authorization: "[redacted]",
      token: "[redacted]",
      secret: "[redacted]",
      password: "[redacted]",
      cookie: "[redacted]",
      user: "alice",
      msg: "signed in",
      service: "atrium",
    });
    expect(raw.join("")).not.toContain("sekrit");
  });

  it("censors secret fields one level down, and clientSecret", () => {
    const { stream, lines, raw } = memoryDestination();
    createLogger("info", stream).info({
      upstream: { ...SECRETS, clientSecret: "sekrit-client", url: "https://x" },
    });
    expect(lines[0]?.upstream).toEqual({
      authorization: "[redacted]",
      token: "[redacted]",
      secret: "[redacted]",
      password: "[redacted]",
      cookie: "[redacted]",
      clientSecret: "[redacted]",
      url: "https://x",
    });
    expect(raw.join("")).not.toContain("sekrit");
  });

  it("censors the authorization and cookie headers of a logged request", () => {
    const { stream, raw, lines } = memoryDestination();
    const headers = {
      authorization: SECRETS.authorization,
      cookie: SECRETS.cookie,
      accept: "application/json",
    };
    createLogger("info", stream).info({ headers, req: { method: "GET", headers } }, "request");
    expect(raw.join("")).not.toContain("sekrit");
    expect(lines[0]).toMatchObject({
      headers: { authorization: "[redacted]", cookie: "[redacted]", accept: "application/json" },
      req: { headers: { authorization: "[redacted]", cookie: "[redacted]", accept: "application/json" } },
    });
  });

  it("censors through child loggers too", () => {
    const { stream, raw } = memoryDestination();
    createLogger("info", stream).child({ requestId: "r1" }).warn({ token: SECRETS.token }, "child");
    expect(raw.join("")).toContain('"requestId":"r1"');
    expect(raw.join("")).not.toContain("sekrit");
  });

  it("writes nothing below its level", () => {
    const { stream, raw } = memoryDestination();
    const log = createLogger("warn", stream);
    log.info({ token: SECRETS.token }, "quiet");
    log.warn("loud");
    expect(raw).toHaveLength(1);
  });
});
