import { describe, expect, it } from "vitest";
import { FixedWindowLimit, limitKeyOf, MAX_WINDOWS } from "../../../src/oauth/rate-limit.ts";
import { testClock } from "./fixtures.ts";

describe("FixedWindowLimit", () => {
  it("allows max takes per window per key, says how long to wait, and opens again", () => {
    const clock = testClock();
    const limit = new FixedWindowLimit(2, 60_000, clock);
    expect(limit.take("a")).toBe(0);
    expect(limit.take("a")).toBe(0);
    clock.advance(15_000);
    expect(limit.take("a")).toBe(45);
    expect(limit.take("b")).toBe(0);
    clock.advance(45_000);
    expect(limit.take("a")).toBe(0);
  });

  it("a window the clock was stepped back behind has ended: a new one starts (ADR 0168)", () => {
    const clock = testClock();
    const hourMs = 60 * 60 * 1000;
    const limit = new FixedWindowLimit(1, hourMs, clock);
    expect(limit.take("203.0.113.7")).toBe(0);
    clock.advance(hourMs - 1_000);
    expect(limit.take("203.0.113.7")).toBe(1); // over the limit for one more second
    clock.advance(-24 * hourMs); // NTP steps the wall clock back a day
    clock.advance(2_000);
    // Before, refused and told to retry after a day and an hour.
    expect(limit.take("203.0.113.7")).toBe(0);
    expect(limit.take("203.0.113.7")).toBe(3_600);
  });

  it("counts an IPv6 caller by its /64 and an IPv4-mapped one by its IPv4 address", () => {
    expect(limitKeyOf("2001:db8:1:2:aaaa::1")).toBe("2001:db8:1:2::/64");
    expect(limitKeyOf("2001:0DB8:0001:0002:ffff:0:0:9")).toBe("2001:db8:1:2::/64");
    expect(limitKeyOf("2001:db8::1")).toBe("2001:db8:0:0::/64");
    expect(limitKeyOf("::1")).toBe("0:0:0:0::/64");
    expect(limitKeyOf("fe80::1%eth0")).toBe("fe80:0:0:0::/64");
    expect(limitKeyOf("64:ff9b::192.0.2.1")).toBe("64:ff9b:0:0::/64");
    expect(limitKeyOf("::ffff:192.0.2.1")).toBe("192.0.2.1");
    expect(limitKeyOf("192.0.2.1")).toBe("192.0.2.1");
    expect(limitKeyOf("unknown")).toBe("unknown");

    const limit = new FixedWindowLimit(2, 60_000, testClock());
    expect(limit.take("2001:db8:1:2::a")).toBe(0);
    expect(limit.take("2001:db8:1:2::b")).toBe(0);
    // A third address of the same /64 is the same caller; another /64 is not.
    expect(limit.take("2001:db8:1:2:ffff::c")).toBeGreaterThan(0);
    expect(limit.take("2001:db8:1:3::a")).toBe(0);
    // Every IPv4 caller behind a dual-stack socket is its own, not one ::ffff:0:0/64.
    expect(limit.take("::ffff:192.0.2.1")).toBe(0);
    expect(limit.take("::ffff:192.0.2.1")).toBe(0);
    expect(limit.take("::ffff:192.0.2.2")).toBe(0);
  });

  it("counts at most its bound of callers, dropping the oldest window for a new one", () => {
    expect(MAX_WINDOWS).toBe(10_000);
    const clock = testClock();
    const limit = new FixedWindowLimit(1, 60_000, clock, 3);
    for (const caller of ["10.0.0.1", "10.0.0.2", "10.0.0.3"]) expect(limit.take(caller)).toBe(0);
    expect(limit.take("10.0.0.4")).toBe(0);
    expect(limit.size).toBe(3);
    // 10.0.0.1's window, the oldest, went for it; 10.0.0.2's is still counted.
    expect(limit.take("10.0.0.2")).toBeGreaterThan(0);
    expect(limit.take("10.0.0.1")).toBe(0);
    expect(limit.size).toBe(3);
  });

  it("drops expired windows, at most once per window length", () => {
    const clock = testClock();
    const limit = new FixedWindowLimit(5, 60_000, clock);
    limit.take("a");
    clock.advance(30_000);
    limit.take("b");
    clock.advance(30_000);
    // A window length since the last purge: a's window, expired, goes.
    limit.take("c");
    expect(limit.size).toBe(2);
    clock.advance(35_000);
    // b's window has expired too, but the last purge was 35 s ago: it waits.
    limit.take("d");
    expect(limit.size).toBe(3);
    clock.advance(25_000);
    limit.take("e");
    expect(limit.size).toBe(2);
  });
});
