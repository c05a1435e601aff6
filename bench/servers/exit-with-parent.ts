// The parent keeps our stdin open for as long as it lives. If it dies without getting to kill us
// (SIGKILL, crash), stdin reaches EOF and we exit instead of squatting on the port.
export function exitWithParent(): void {
  process.stdin.on("end", () => process.exit(0));
  process.stdin.resume();
}
