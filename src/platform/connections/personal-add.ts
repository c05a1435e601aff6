import { Conflict } from "../../errors.ts";
import { makeFolderPathIfMissing } from "../../storage/folders.ts";
import type { Connections } from "./connections.ts";
import type { NewConnection, PersonalDeps } from "./connections-deps.ts";
import {
  type AuthRequest,
  type ConnectionRecord,
  checkAuth,
  checkServerUrl,
  newConnectionId,
  sealedCredentialOf,
} from "./model.ts";
import { addPendingOAuth } from "./oauth/pending.ts";
import { requireMember } from "./personal-access.ts";
import { PersonalCap } from "./personal-cap.ts";
import { personalSourceName } from "./personal-name.ts";
import type { PersonalServing } from "./personal-serving.ts";
import {
  type PersonalAuthorizationStarted,
  type PersonalConnectionView,
  viewPersonal,
} from "./personal-view.ts";
import { sealCredential } from "./seal-credential.ts";

/**
 * Adding a member's own connection, stored under its owner: one with `auth` none or static is
 * photographed and served now, an OAuth one waits for its owner's authorization. The owner's
 * membership is asked again just before the record is written (adr/0129, amended), and an owner
 * holds at most MAX_PERSONAL_CONNECTIONS, adds under way included (personal-cap.ts).
 */
export class PersonalAdds {
  private readonly cap = new PersonalCap();

  constructor(
    private readonly deps: PersonalDeps,
    /** The workspace connections' service over the personal store, which photographs. */
    private readonly core: Connections,
    private readonly serving: PersonalServing,
  ) {}

  async add(
    workspaceId: string,
    ownerId: string,
    request: NewConnection,
  ): Promise<PersonalConnectionView | PersonalAuthorizationStarted> {
    requireMember(this.deps, workspaceId, ownerId);
    const name = personalSourceName(request.name);
    const target = checkServerUrl(request.url);
    const url = target.href;
    const auth = checkAuth(request.auth, target);
    const { store } = this.deps;
    if (store.names(ownerId).includes(name)) {
      throw new Conflict(
        "connection_exists",
        `You have a personal connection named "${name}"; remove it first or choose another name.`,
      );
    }
    const place = this.cap.reserve(ownerId, store.names(ownerId).length);
    try {
      if (auth.kind === "oauth")
        return await this.addOAuth(workspaceId, ownerId, name, url, auth.scopes ?? []);
      return await this.addStatic(workspaceId, ownerId, name, url, auth);
    } finally {
      place.release();
    }
  }

  private async addStatic(
    workspaceId: string,
    ownerId: string,
    name: string,
    url: string,
    auth: Exclude<AuthRequest, { kind: "oauth" }>,
  ): Promise<PersonalConnectionView> {
    const { store, vault, clock, log } = this.deps;
    const id = newConnectionId();
    const stored = await sealCredential(this.deps.vault, id, auth);
    const record: ConnectionRecord = {
      id,
      name,
      workspaceId,
      owner: ownerId,
      url,
      auth: stored,
      createdAt: new Date(clock()).toISOString(),
      createdBy: ownerId,
      authorizationGeneration: 1,
      snapshotVersion: 1,
      disabled: false,
    };
    try {
      const snapshot = await this.core.photograph(record, 1);
      // The person's folder exists once they have signed in; made here for an owner who reached
      // Atrium only with a token, never before it was recorded.
      await makeFolderPathIfMissing(this.deps.layout.userConnectionsDir(ownerId));
      // Again after the photograph, whose length the server chose (adr/0129, amended).
      await store.create(record, snapshot, () => requireMember(this.deps, workspaceId, ownerId));
    } catch (error) {
      const sealed = sealedCredentialOf(stored);
      if (sealed) await vault.delete(sealed);
      throw error;
    }
    await this.serving.serveEverywhere(ownerId, name);
    log.info({ workspaceId, connection: name }, "personal connection added");
    return viewPersonal(this.core, this.deps, workspaceId, ownerId, name);
  }

  /**
   * A personal OAuth connection in `pending_auth`, as a workspace's is (Connections.addOAuth), but
   * stored under its owner and its flow theirs alone: the go_url opens for nobody else.
   */
  private async addOAuth(
    workspaceId: string,
    ownerId: string,
    name: string,
    url: string,
    scopes: string[],
  ): Promise<PersonalAuthorizationStarted> {
    const at = { workspaceId, name, url, scopes, createdBy: ownerId, owner: ownerId };
    const link = await addPendingOAuth(this.deps, at, async (record, signal) => {
      await makeFolderPathIfMissing(this.deps.layout.userConnectionsDir(ownerId));
      // Again after discovery, whose length the server chose (adr/0129, amended).
      await this.deps.store.create(record, undefined, () => {
        signal.throwIfAborted();
        requireMember(this.deps, workspaceId, ownerId);
      });
    });
    this.deps.log.info({ workspaceId, connection: name }, "personal connection added, pending authorization");
    return { ...link, connection: await viewPersonal(this.core, this.deps, workspaceId, ownerId, name) };
  }
}
