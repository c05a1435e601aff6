import type { Clock } from "../../../kernel/clock.ts";
import type { ExclusiveLeases } from "../../../kernel/leases.ts";
import type { Logger } from "../../../log.ts";
import type { AccessCheck } from "../../../workspace/access-check.ts";
import type { ConnectionRecord } from "../model.ts";
import { type ConnectionTokens, tokenLease } from "./connection-tokens.ts";
import { RootLetGo } from "./credential-exchanges.ts";
import type { Flow } from "./flows.ts";
import { type ConnectionStores, recordHome } from "./record-home.ts";
import type { TokenSet } from "./tokens.ts";

/** An activation found the connection moved on since its flow started (or removed). */
export class Superseded extends Error {}

export interface ActivationDeps {
  stores: ConnectionStores;
  tokens: ConnectionTokens;
  leases: ExclusiveLeases;
  clock: Clock;
  log: Logger;
}

/**
 * Seals the tokens, then compare-and-swaps them in under the connection's token lease (so no
 * refresh of the old family runs across it): the record must still be at the generation and
 * activation time the flow started from. Both together change at every activation — the first
 * sets the time, each later one adds a generation — so no flow started before one can pass after
 * it. A loser's sealed tokens are removed; the winner's predecessor too (its tokens still sought
 * in answers until they expire, ConnectionTokens.superseded), and the credential's lapsed mark is
 * cleared (re-authorization is what ends it). A personal connection's record is its owner's
 * (recordHome), so the lease, the record and the tokens are that one connection's. `admitted` is
 * the standing of the flow's opener (opener-standing.ts), asked with the compare-and-swap under
 * the connection's lock just before the record is written: refused, nothing activates and the new
 * set is removed.
 */
export function activate(
  deps: ActivationDeps,
  flow: Flow,
  tokens: TokenSet,
  admitted: AccessCheck,
): Promise<ConnectionRecord> {
  return deps.leases.run(tokenLease({ id: flow.connectionId }), async () => {
    const { store, key } = recordHome(deps.stores, flow);
    const before = await store.get(key, flow.name).catch(() => undefined);
    if (!before || before.id !== flow.connectionId) throw new Superseded();
    const credential = await deps.tokens.seal(before, tokens);
    let previous: string | undefined;
    let updated: ConnectionRecord;
    try {
      updated = await store.update(
        key,
        flow.name,
        (current) => {
          deps.tokens.checkMayWrite();
          const auth = current.auth.kind === "oauth" ? current.auth : undefined;
          if (
            !auth ||
            current.id !== flow.connectionId ||
            current.authorizationGeneration !== flow.generation ||
            auth.activatedAt !== flow.activatedAt
          ) {
            throw new Superseded();
          }
          previous = auth.tokens;
          return {
            ...current,
            authorizationGeneration:
              current.authorizationGeneration + (auth.activatedAt === undefined ? 0 : 1),
            auth: {
              ...auth,
              ...(flow.scope ? { scopes: flow.scope.split(" ") } : {}),
              granted: (tokens.scope ?? flow.scope ?? "").split(" ").filter(Boolean),
              tokens: credential,
              activatedAt: new Date(deps.clock()).toISOString(),
            },
          };
        },
        undefined,
        admitted,
      );
    } catch (error) {
      // Once the root is let go, not even the new set's removal is written: it stays sealed with
      // no record naming it, as an answer the process never stored.
      if (!(error instanceof RootLetGo)) await deps.tokens.discard(credential);
      throw error;
    }
    // The record naming the new set is the activation: written, it is answered as stored. The set
    // it replaced is sought until it expires, as a refresh's is: its access token is still good at
    // the server, which may quote it in an answer after.
    if (previous) deps.tokens.superseded(updated, previous);
    // What follows tidies, and each write asks again, as the stop may let go of the root while the
    // one before it ran; what it cannot write then is left and said.
    try {
      deps.tokens.checkMayWrite();
      await store.writeCredential(key, flow.name, { lapsed: false });
      deps.tokens.checkMayWrite();
      if (previous) await deps.tokens.discard(previous);
    } catch (error) {
      if (!(error instanceof RootLetGo)) throw error;
      deps.log.warn(
        { workspaceId: flow.workspaceId, connection: flow.name, previousLeft: previous !== undefined },
        "connection authorized, but Atrium let go of its data before it cleared the lapsed mark or removed the previous token set",
      );
    }
    deps.log.info(
      {
        workspaceId: flow.workspaceId,
        connection: flow.name,
        personal: flow.owner !== undefined,
        generation: updated.authorizationGeneration,
      },
      "connection authorized",
    );
    return updated;
  });
}
