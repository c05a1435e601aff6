import { describe, expect, it } from "vitest";
import { checkCron } from "../../../../src/platform/tasks/cron-trigger.ts";

describe("a cron trigger", () => {
  it("is held to the shortest interval, a seconds field included", () => {
    const tooOften: [string, string][] = [
      ["* * * * * *", "fires 1 second apart"],
      ["*/30 * * * * *", "fires 30 seconds apart"],
      ["0,59 * * * * *", "fires 1 second apart"],
      ["0 0,59 23,0 * * *", "fires 60 seconds apart"],
    ];
    for (const [cron, words] of tooOften) {
      expect(() => checkCron(cron, "UTC", 61), cron).toThrow(words);
      expect(() => checkCron(cron, "UTC", 61), cron).toThrow("tasks.minIntervalSeconds");
    }
    for (const cron of ["* * * * *", "0 * * * * *", "30 */5 * * * *", "@hourly", "0 9 * * 1-5"]) {
      expect(() => checkCron(cron, "Europe/Paris", 60), cron).not.toThrow();
    }
    // A larger minimum counts the minutes and hours too, and the night between two days.
    expect(() => checkCron("*/5 * * * *", "UTC", 600)).toThrow("fires 300 seconds apart");
    expect(() => checkCron("0 0,23 * * *", "UTC", 7200)).toThrow("fires 3600 seconds apart");
    expect(() => checkCron("0 9 * * *", "UTC", 86_400)).not.toThrow();
  });

  it("refuses one that never fires, and one croner cannot read", () => {
    for (const cron of ["0 0 30 2 *", "0 0 31 4 *", "0 0 0 1 1 * 2001"]) {
      expect(() => checkCron(cron, "UTC", 60), cron).toThrow(`"trigger.cron" "${cron}" never fires`);
    }
    expect(() => checkCron("0 0 29 2 *", "UTC", 60)).not.toThrow();
    expect(() => checkCron("not cron", "UTC", 60)).toThrow('"trigger.cron" is not a cron expression');
  });
});
