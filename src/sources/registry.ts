import type { Source } from "./source.ts";
import { isPersonalSourceName, isSourceName } from "./tool-names.ts";

/**
 * The sources of one workspace, by source name. Only this registry is consulted for a call.
 * Shared sources (platform apps, workspace connections) are everyone's; a personal source
 * (`my_<name>`, with an `owner`) is kept under its owner and found only by them, so two members
 * may each have a `my_notes` and neither can list, find or call the other's (ADR 0042).
 */
export class SourceRegistry {
  private readonly shared = new Map<string, Source>();
  /** Owner → their personal sources by name. */
  private readonly personal = new Map<string, Map<string, Source>>();
  /** Sources the instance owns and lends to every registry (the platform apps'): never closed here. */
  private readonly lent: ReadonlySet<Source>;

  /**
   * `instanceSources` are shared sources that serve every workspace (a platform app's one server,
   * adr/0057): listed and found like any shared source, but closed by the instance, not by this
   * registry when it is evicted.
   */
  constructor(
    readonly workspaceId: string,
    instanceSources: readonly Source[] = [],
  ) {
    this.lent = new Set(instanceSources);
    for (const source of instanceSources) this.add(source);
  }

  add(source: Source): void {
    // A name that breaks the grammar could not be split back out of `<source>__<tool>`.
    if (!isSourceName(source.name)) throw new Error(`"${source.name}" is not a valid source name.`);
    // `my_` and an owner go together: a shared source named `my_…` would be listed to everyone
    // under a name that promises it is the caller's own.
    if (isPersonalSourceName(source.name) !== (source.owner !== undefined))
      throw new Error(`Source "${source.name}": only a personal source, with an owner, is named my_….`);
    const names = this.namesOf(source.owner, true);
    if (names?.has(source.name)) throw new Error(`Source "${source.name}" is already registered.`);
    names?.set(source.name, source);
  }

  /**
   * Puts `source` in place of the one with its name (and owner), if any, and answers that one for
   * the caller to close: a connection's closes it as superseded, outside its turn, and cuts it if
   * the connection is withdrawn meanwhile (platform/connections/serving.ts). A lent source is
   * never replaced: its name is refused as `add` refuses any name held. Replacing it served a
   * connection in a platform app's place once an upgrade gave the app the connection's name
   * (adr/0128, test/unit/sources/registry.test.ts "a lent source").
   */
  replace(source: Source): Source | undefined {
    const names = this.namesOf(source.owner);
    const previous = names?.get(source.name);
    if (previous && !this.lent.has(previous)) names?.delete(source.name);
    this.add(source);
    return previous;
  }

  /**
   * Takes the named source (of `owner`, for a personal one) out and closes it now: what it has
   * under way with its server, a connect included, ends (Source.close). A lent source is not
   * taken out: the name is the instance's, and whatever asks to remove it (a connection still
   * bearing a platform app's name, disabled or removed) held nothing here (adr/0128).
   */
  async remove(name: string, owner?: string): Promise<void> {
    const names = this.namesOf(owner);
    const source = names?.get(name);
    if (source && this.lent.has(source)) return;
    names?.delete(name);
    if (owner !== undefined && names?.size === 0) this.personal.delete(owner);
    await this.closeOwn(source);
  }

  /** The source `principalId` reaches by this name: a shared one, or their own personal one. */
  get(name: string, principalId: string): Source | undefined {
    return isPersonalSourceName(name) ? this.personal.get(principalId)?.get(name) : this.shared.get(name);
  }

  /** What `principalId` lists: every shared source, then their own personal ones. */
  visibleTo(principalId: string): Source[] {
    return [...this.shared.values(), ...(this.personal.get(principalId)?.values() ?? [])];
  }

  async close(): Promise<void> {
    const every = [...this.shared.values(), ...[...this.personal.values()].flatMap((m) => [...m.values()])];
    await Promise.allSettled(every.map((source) => this.closeOwn(source)));
    this.shared.clear();
    this.personal.clear();
  }

  private async closeOwn(source: Source | undefined): Promise<void> {
    if (source && !this.lent.has(source)) await source.close();
  }

  private namesOf(owner: string | undefined, create = false): Map<string, Source> | undefined {
    if (owner === undefined) return this.shared;
    let names = this.personal.get(owner);
    if (!names && create) {
      names = new Map();
      this.personal.set(owner, names);
    }
    return names;
  }
}
