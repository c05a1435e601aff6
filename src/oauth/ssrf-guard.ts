import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { isIP, type LookupFunction } from "node:net";

// Atrium fetches client metadata documents from URLs a stranger chooses, so the fetch must
// never reach this host, its network or a cloud metadata service. The guard is a `lookup`
// for node:http(s): the addresses it checks are the addresses the socket connects to, so a
// name that resolves to a public address when checked and a private one when used (DNS
// rebinding) has no second resolution to exploit (test/unit/oauth/ssrf-guard.test.ts).

/** What kind of address an IP is; only `public` is fetched from unless private ones are allowed. */
export type AddressKind =
  | "public"
  | "loopback"
  | "private"
  | "shared"
  | "link-local"
  | "unique-local"
  | "unspecified"
  | "multicast"
  | "reserved";

type Range = readonly [prefix: string, bits: number, kind: AddressKind];

const IPV4_RANGES: readonly Range[] = [
  ["0.0.0.0", 8, "unspecified"],
  ["10.0.0.0", 8, "private"],
  ["100.64.0.0", 10, "shared"],
  ["127.0.0.0", 8, "loopback"],
  ["169.254.0.0", 16, "link-local"],
  ["172.16.0.0", 12, "private"],
  ["192.0.0.0", 24, "reserved"],
  ["192.0.2.0", 24, "reserved"],
  ["192.88.99.0", 24, "reserved"],
  ["192.168.0.0", 16, "private"],
  ["198.18.0.0", 15, "reserved"],
  ["198.51.100.0", 24, "reserved"],
  ["203.0.113.0", 24, "reserved"],
  ["224.0.0.0", 4, "multicast"],
  ["240.0.0.0", 4, "reserved"],
];

const IPV6_RANGES: readonly Range[] = [
  ["::", 128, "unspecified"],
  ["::1", 128, "loopback"],
  ["64:ff9b:1::", 48, "reserved"],
  ["100::", 64, "reserved"],
  ["2001::", 32, "reserved"],
  ["2001:db8::", 32, "reserved"],
  ["fc00::", 7, "unique-local"],
  ["fe80::", 10, "link-local"],
  ["fec0::", 10, "reserved"],
  ["ff00::", 8, "multicast"],
];

// IPv6 forms that carry an IPv4 address, which is what is really reached: judged as that.
const IPV4_CARRIERS: readonly (readonly [prefix: string, bits: number, v4Offset: number])[] = [
  ["::ffff:0:0", 96, 96], // IPv4-mapped
  ["::", 96, 96], // IPv4-compatible (deprecated)
  ["64:ff9b::", 96, 96], // NAT64
  ["2002::", 16, 16], // 6to4
];

/** Classifies an IP literal (v4 or v6, with or without brackets or a zone); anything unparseable is `reserved`. */
export function classifyAddress(address: string): AddressKind {
  const bare = address.replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  const v4 = parseIpv4(bare);
  if (v4 !== undefined) return classifyIpv4(v4);
  const v6 = parseIpv6(bare);
  if (v6 === undefined) return "reserved";
  for (const [prefix, bits, v4Offset] of IPV4_CARRIERS) {
    const start = parseIpv6(prefix) as bigint;
    if (inPrefix(v6, start, bits, 128) && !(prefix === "::" && v6 <= 1n)) {
      return classifyIpv4(Number((v6 >> BigInt(128 - v4Offset - 32)) & 0xffffffffn));
    }
  }
  for (const [prefix, bits, kind] of IPV6_RANGES) {
    if (inPrefix(v6, parseIpv6(prefix) as bigint, bits, 128)) return kind;
  }
  // Only global unicast (2000::/3) is on the public internet.
  return inPrefix(v6, 0x2n << 124n, 3, 128) ? "public" : "reserved";
}

/**
 * Refused because the host is, or resolves to, an address of this kind. The message names the host
 * alone: what a name resolves to, and what kind of address that is, would map the internal network
 * for whoever chose the name (adr/0155); `address` and `kind` are for the operator's log. Where
 * private addresses are refused, a name that does not resolve is refused in the same words (kind
 * "unresolved", the resolver's error as `cause`): a different answer would tell which internal
 * names exist.
 */
export class ForbiddenAddress extends Error {
  constructor(
    readonly host: string,
    readonly address: string,
    readonly kind: AddressKind | "unresolved",
    options?: ErrorOptions,
  ) {
    super(`${host} is not at a public internet address`, options);
    this.name = "ForbiddenAddress";
  }
}

/** Throws ForbiddenAddress unless `address` (an IP literal) is public or private ones are allowed. */
export function checkAddress(host: string, address: string, allowPrivate: boolean): void {
  if (allowPrivate) return;
  const kind = classifyAddress(address);
  if (kind !== "public") throw new ForbiddenAddress(host, address, kind);
}

/**
 * A `lookup` for node:net, node:http and node:https that resolves the name itself and fails
 * with ForbiddenAddress if any address it resolves to is not public, or, where private ones are
 * refused, if it does not resolve; so no connection is attempted. A host that is an IP literal never reaches a lookup: check it with checkAddress.
 */
export function guardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error && allowPrivate) return callback(error, "", 0);
      if (error)
        return callback(
          new ForbiddenAddress(hostname, "none", "unresolved", { cause: error }) as NodeJS.ErrnoException,
          "",
          0,
        );
      try {
        if (addresses.length === 0) throw new ForbiddenAddress(hostname, "none", "reserved");
        for (const { address } of addresses) checkAddress(hostname, address, allowPrivate);
      } catch (refusal) {
        return callback(refusal as NodeJS.ErrnoException, "", 0);
      }
      const first = addresses[0] as LookupAddress;
      if (options.all) callback(null, addresses);
      else callback(null, first.address, first.family);
    });
  };
}

function classifyIpv4(value: number): AddressKind {
  if (value === 0xffffffff) return "reserved";
  for (const [prefix, bits, kind] of IPV4_RANGES) {
    if (inPrefix(BigInt(value), BigInt(parseIpv4(prefix) as number), bits, 32)) return kind;
  }
  return "public";
}

function inPrefix(value: bigint, prefix: bigint, bits: number, width: number): boolean {
  const shift = BigInt(width - bits);
  return value >> shift === prefix >> shift;
}

/** Dotted-quad only: node:net and URL have already turned other IPv4 spellings into this form. */
function parseIpv4(text: string): number | undefined {
  if (isIP(text) !== 4) return undefined;
  return text.split(".").reduce((acc, part) => acc * 256 + Number(part), 0);
}

function parseIpv6(text: string): bigint | undefined {
  if (isIP(text) !== 6) return undefined;
  let groups = text;
  // A trailing dotted quad is the last two groups.
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(groups)?.[1];
  if (dotted !== undefined) {
    const v4 = parseIpv4(dotted) as number;
    groups = `${groups.slice(0, -dotted.length)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const [head = "", tail] = groups.split("::");
  const headParts = head === "" ? [] : head.split(":");
  const tailParts = tail === undefined || tail === "" ? [] : tail.split(":");
  const missing = 8 - headParts.length - tailParts.length;
  const parts = tail === undefined ? headParts : [...headParts, ...Array(missing).fill("0"), ...tailParts];
  return parts.reduce((acc, part) => (acc << 16n) | BigInt(Number.parseInt(part, 16)), 0n);
}
