import type { Principal } from "../identity/principal.ts";
import { KeyedLock } from "../storage/keyed-lock.ts";
import { MAX_WORKSPACE_NAME_CHARS, type Workspace } from "./model.ts";
import type { WorkspaceStore } from "./store.ts";

/** What a first workspace is called when its person's name leaves nothing showable. */
const FALLBACK_WORKSPACE_NAME = "My workspace";
const SUFFIX = "'s workspace";
/** Controls (C0, DEL, C1, tab and newline among them) read as a space: they separate words. */
const CONTROLS = /[\p{Cc}]+/gu;
/** What a reader cannot see, and half of a surrogate pair: dropped. */
const HIDDEN = /[\p{Default_Ignorable_Code_Point}\uD800-\uDFFF]/gu;

/**
 * A person who belongs to no workspace gets an ordinary one, named for them, with them as
 * admin. The lock makes two concurrent bootstraps of one person create one workspace.
 */
export class FirstWorkspace {
  private readonly locks = new KeyedLock();

  constructor(private readonly store: WorkspaceStore) {}

  ensure(principal: Principal): Promise<Workspace[]> {
    return this.locks.run(principal.id, async () => {
      const mine = this.store.listFor(principal.id);
      if (mine.length > 0) return mine;
      await this.store.create(firstWorkspaceName(principal.displayName), principal.id);
      return this.store.listFor(principal.id);
    });
  }
}

/**
 * "<name>'s workspace", made to pass the check a name a person types goes through. The display
 * name is the identity provider's, not the person's input here: one that is long or holds a
 * control character refused every bootstrap with a 400 (test/unit/workspace/first-workspace.test.ts).
 * Controls become spaces, invisible characters go, and the name is cut on a code-point boundary
 * to fit; nothing showable left, it is "My workspace".
 */
export function firstWorkspaceName(displayName: string): string {
  const shown = displayName.replace(CONTROLS, " ").replace(HIDDEN, "").replace(/\s+/gu, " ").trim();
  let cut = "";
  for (const codePoint of shown) {
    if (cut.length + codePoint.length + SUFFIX.length > MAX_WORKSPACE_NAME_CHARS) break;
    cut += codePoint;
  }
  cut = cut.trim();
  return cut.length === 0 ? FALLBACK_WORKSPACE_NAME : `${cut}${SUFFIX}`;
}
