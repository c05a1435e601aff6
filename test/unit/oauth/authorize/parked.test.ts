import { describe, expect, it } from "vitest";
import {
  MAX_PARKED,
  MAX_PARKED_QUERY_CHARS,
  PARKED_TTL_MS,
  ParkedRequests,
} from "../../../../src/oauth/authorize/parked.ts";
import { testClock } from "../fixtures.ts";

const PER_HOUR = 30;
const QUERY = `client_id=atc_x&state=${"s".repeat(1800)}`;

describe("ParkedRequests", () => {
  it("keeps a request under a short id for ten minutes, through reloads", () => {
    const clock = testClock();
    const parked = new ParkedRequests(PER_HOUR, clock);
    const id = parked.park(QUERY, "203.0.113.1") as string;
    expect(id).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(parked.find(id)).toBe(QUERY);
    clock.advance(PARKED_TTL_MS - 1);
    expect(parked.find(id)).toBe(QUERY);
    clock.advance(1);
    expect(parked.find(id)).toBeUndefined();
    expect(parked.find("../../etc/passwd")).toBeUndefined();
  });

  it("one address parks at most its hourly share", () => {
    const parked = new ParkedRequests(PER_HOUR, testClock());
    for (let i = 0; i < PER_HOUR; i++) expect(parked.park(QUERY, "203.0.113.1")).toBeDefined();
    expect(parked.park(QUERY, "203.0.113.1")).toBeUndefined();
    expect(parked.park(QUERY, "203.0.113.2")).toBeDefined();
  });

  it(`keeps at most ${MAX_PARKED} at once, and makes room as they expire`, () => {
    const clock = testClock();
    const parked = new ParkedRequests(PER_HOUR, clock);
    for (let i = 0; i < MAX_PARKED; i++) expect(parked.park(QUERY, `198.51.100.${i}`)).toBeDefined();
    expect(parked.park(QUERY, "203.0.113.9")).toBeUndefined();
    clock.advance(PARKED_TTL_MS);
    expect(parked.park(QUERY, "203.0.113.9")).toBeDefined();
  });

  it("a request parked before the clock was stepped back has expired, and those parked after it make room as they expire (ADR 0168)", () => {
    const clock = testClock();
    const parked = new ParkedRequests(MAX_PARKED, clock);
    const before = parked.park(QUERY, "203.0.113.1") as string;
    clock.advance(-24 * 60 * 60 * 1000); // NTP steps the wall clock back a day
    expect(parked.find(before)).toBeUndefined();
    for (let i = 1; i < MAX_PARKED; i++) expect(parked.park(QUERY, `198.51.100.${i}`)).toBeDefined();
    clock.advance(PARKED_TTL_MS);
    // Before, the first one's expiry lay a day ahead, and the expired piled up behind it: the
    // cap refused every new request for the day.
    expect(parked.park(QUERY, "203.0.113.9")).toBeDefined();
  });

  it("refuses a query longer than any request can carry", () => {
    const parked = new ParkedRequests(PER_HOUR, testClock());
    expect(parked.park("x".repeat(MAX_PARKED_QUERY_CHARS + 1), "203.0.113.1")).toBeUndefined();
  });
});
