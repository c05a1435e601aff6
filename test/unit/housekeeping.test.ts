import { describe, expect, it } from "vitest";
import { startHousekeeping } from "../../src/housekeeping.ts";
import { createLogger } from "../../src/log.ts";

describe("startHousekeeping", () => {
  it("runs every chore each interval, and a failing chore neither stops the others nor the next round", async () => {
    const ran: string[] = [];
    let rounds = 0;
    const twoRounds = new Promise<void>((resolve) => {
      const stop = startHousekeeping(
        [
          {
            name: "fails",
            run: async () => {
              ran.push("fails");
              throw new Error("disk gone");
            },
          },
          {
            name: "counts",
            run: async () => {
              ran.push("counts");
              rounds += 1;
              if (rounds === 2) {
                stop();
                resolve();
              }
            },
          },
        ],
        createLogger("silent"),
        5,
      );
    });
    await twoRounds;
    expect(ran).toEqual(["fails", "counts", "fails", "counts"]);
  });
});
