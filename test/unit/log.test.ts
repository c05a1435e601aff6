import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { CENSOR, createLogger, SECRET_FIELDS } from "../../src/log.ts";

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

  it.each([...SECRET_FIELDS])(
    "censors %s at the top level, two and three levels down, and in a list",
    (field) => {
      const { stream, lines, raw } = memoryDestination();
      const secret = `sekrit-${field}`;
      createLogger("info", stream).info({
        [field]: secret,
        req: { headers: { [field]: secret, accept: "*/*" } },
        a: { b: { c: { [field]: secret, kept: 1 } } },
        upstreams: [{ [field]: secret, url: "https://x" }],
      });
      expect(raw.join("")).not.toContain("sekrit");
      expect(lines[0]).toMatchObject({
        [field]: CENSOR,
        req: { headers: { [field]: CENSOR, accept: "*/*" } },
        a: { b: { c: { [field]: CENSOR, kept: 1 } } },
        upstreams: [{ [field]: CENSOR, url: "https://x" }],
      });
    },
  );

  it("leaves the caller's object as it was", () => {
    const { stream } = memoryDestination();
    const logged = { token: SECRETS.token, upstream: { headers: { authorization: SECRETS.authorization } } };
    createLogger("info", stream).info(logged, "call");
    expect(logged).toEqual({
      token: SECRETS.token,
      upstream: { headers: { authorization: SECRETS.authorization } },
    });
  });

  it("writes a request line whole, with its id", () => {
    const { stream, lines } = memoryDestination();
    const line = {
      requestId: "r-1",
      method: "POST",
      path: "/mcp/ws_1",
      status: 200,
      ms: 1.5,
      principal: "usr_1",
    };
    createLogger("info", stream).info(line, "request");
    expect(lines[0]).toMatchObject({ ...line, msg: "request" });
  });

  it("censors a secret an error carries, under err or another name, and keeps its message", () => {
    const { stream, lines, raw } = memoryDestination();
    const error = Object.assign(new Error("upstream refused"), {
      token: SECRETS.token,
      response: { headers: { authorization: SECRETS.authorization } },
    });
    const log = createLogger("info", stream);
    log.error({ err: error }, "failed");
    log.error({ cause: error }, "failed again");
    log.error(error);
    expect(raw.join("")).not.toContain("sekrit");
    expect(lines[0]?.err).toMatchObject({ type: "Error", message: "upstream refused", token: CENSOR });
    expect(lines[1]?.cause).toMatchObject({ message: "upstream refused", token: CENSOR });
    expect(lines[2]?.err).toMatchObject({
      message: "upstream refused",
      response: { headers: { authorization: CENSOR } },
    });
  });

  it("censors a child logger's own bindings, nested ones too", () => {
    const { stream, raw } = memoryDestination();
    createLogger("info", stream)
      .child({ password: SECRETS.password, upstream: { cookie: SECRETS.cookie } })
      .info("child");
    expect(raw.join("")).not.toContain("sekrit");
    expect(raw.join("")).toContain(CENSOR);
  });
});
