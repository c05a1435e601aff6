import type { LookupAddress } from "node:dns";
import { describe, expect, it } from "vitest";
import {
  checkAddress,
  classifyAddress,
  ForbiddenAddress,
  guardedLookup,
} from "../../../src/oauth/ssrf-guard.ts";

function lookupAll(hostname: string, allowPrivate: boolean): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) => {
    guardedLookup(allowPrivate)(hostname, { all: true }, (error, addresses) =>
      error ? reject(error) : resolve(addresses as LookupAddress[]),
    );
  });
}

function lookupOne(hostname: string): Promise<{ address: string; family: number }> {
  return new Promise((resolve, reject) => {
    guardedLookup(true)(hostname, {}, (error, address, family) =>
      error ? reject(error) : resolve({ address: address as string, family: family as number }),
    );
  });
}

describe("classifyAddress", () => {
  it.each([
    ["8.8.8.8", "public"],
    ["1.1.1.1", "public"],
    ["172.32.0.1", "public"],
    ["2606:4700:4700::1111", "public"],
    ["127.0.0.1", "loopback"],
    ["127.255.0.9", "loopback"],
    ["::1", "loopback"],
    ["10.0.0.5", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.1", "private"],
    ["100.64.0.1", "shared"],
    ["169.254.169.254", "link-local"],
    ["fe80::1", "link-local"],
    ["fe80::1%eth0", "link-local"],
    ["fc00::1", "unique-local"],
    ["fd12:3456::1", "unique-local"],
    ["0.0.0.0", "unspecified"],
    ["::", "unspecified"],
    ["224.0.0.1", "multicast"],
    ["ff02::1", "multicast"],
    ["255.255.255.255", "reserved"],
    ["240.0.0.1", "reserved"],
    ["2001:db8::1", "reserved"],
    ["not an address", "reserved"],
  ])("%s is %s", (address, kind) => {
    expect(classifyAddress(address)).toBe(kind);
  });

  it("judges an IPv6 address that carries an IPv4 one by the IPv4 address", () => {
    expect(classifyAddress("::ffff:127.0.0.1")).toBe("loopback");
    expect(classifyAddress("::ffff:7f00:1")).toBe("loopback");
    expect(classifyAddress("[::ffff:10.0.0.1]")).toBe("private");
    expect(classifyAddress("::ffff:a9fe:a9fe")).toBe("link-local");
    expect(classifyAddress("::ffff:8.8.8.8")).toBe("public");
    expect(classifyAddress("64:ff9b::a00:1")).toBe("private");
    expect(classifyAddress("2002:c0a8:101::1")).toBe("private");
  });
});

describe("guardedLookup", () => {
  it("refuses a name that resolves to loopback, before any connection", async () => {
    const refusal = await lookupAll("localhost", false).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(ForbiddenAddress);
    expect((refusal as ForbiddenAddress).kind).toBe("loopback");
    expect((refusal as ForbiddenAddress).address).toMatch(/^(127\.|::1$)/);
    expect((refusal as ForbiddenAddress).message).toBe("localhost is not at a public internet address");
  });

  it("passes the very addresses it checked when private addresses are allowed", async () => {
    const addresses = await lookupAll("localhost", true);
    expect(addresses.length).toBeGreaterThan(0);
    expect(addresses.every(({ address }) => classifyAddress(address) === "loopback")).toBe(true);
    const one = await lookupOne("localhost");
    expect(classifyAddress(one.address)).toBe("loopback");
    expect([4, 6]).toContain(one.family);
  });
});

describe("checkAddress and the lookup together, as a fetch uses them", () => {
  it("checks IP literals (which never reach a lookup), brackets and all", () => {
    expect(() => checkAddress("127.0.0.1", "127.0.0.1", false)).toThrow(ForbiddenAddress);
    expect(() => checkAddress("[::1]", "[::1]", false)).toThrow(ForbiddenAddress);
    expect(() => checkAddress("[::ffff:127.0.0.1]", "[::ffff:127.0.0.1]", false)).toThrow(ForbiddenAddress);
    expect(() => checkAddress("8.8.8.8", "8.8.8.8", false)).not.toThrow();
    expect(() => checkAddress("127.0.0.1", "127.0.0.1", true)).not.toThrow();
  });

  it("resolves a name and refuses it when it lands on loopback", async () => {
    await expect(lookupAll("localhost", false)).rejects.toMatchObject({ kind: "loopback" });
  });
});
