/**
 * The folders whose entry this process has flushed in their parent, having made or found them
 * (ADR 0149), in a bounded memory: past `limit` the least recently remembered is forgotten and
 * flushed again at its next use (one more fsync, never a folder trusted unflushed). A data root is
 * pinned, never forgotten: it is the top of what Atrium flushes, and forgetting it would open its
 * parent, which Atrium may not be able to (0711, a read-only filesystem), at the next folder made
 * in it.
 */
export class FlushedFolders {
  private readonly recent = new Set<string>();
  private readonly roots = new Set<string>();

  constructor(private readonly limit: number) {}

  has(folder: string): boolean {
    return this.roots.has(folder) || this.recent.has(folder);
  }

  remember(folder: string): void {
    this.recent.delete(folder);
    this.recent.add(folder);
    if (this.recent.size <= this.limit) return;
    const oldest = this.recent.values().next().value;
    if (oldest !== undefined) this.recent.delete(oldest);
  }

  /** One root per process in a deployment; a test process holds one per instance it starts. */
  pinRoot(root: string): void {
    this.roots.add(root);
  }
}
