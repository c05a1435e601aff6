// Progress goes to stderr so stdout carries only the results table (pipeable, diffable).
export function progress(message: string): void {
  process.stderr.write(`${message}\n`);
}
