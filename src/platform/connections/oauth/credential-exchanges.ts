import { Conflict } from "../../../errors.ts";

/**
 * The exchanges of credentials under way with authorization servers — a token refresh, its
 * discovery included, and the callback's code exchange with its activation — which a graceful
 * stop lets finish: once a server has answered one, its answer may be the only one (a rotated
 * refresh token, a spent code), so it is stored while the root is still this process's
 * (adr/0122, amended). One place tracks both, so the stop waits for either, whenever it began.
 */
export class CredentialExchanges {
  private readonly underWay = new Set<Promise<unknown>>();
  /** Aborts just before the stop lets the root go; set once the stop waits here. */
  private letGo: AbortSignal | undefined;

  /** Runs `exchange` as one under way until it ends; once the root is being let go, none starts. */
  run<T>(exchange: () => Promise<T>): Promise<T> {
    if (this.letGo?.aborted) return Promise.reject(rootLetGo("was not started"));
    const running = exchange();
    this.underWay.add(running);
    const done = () => void this.underWay.delete(running);
    running.then(done, done);
    return running;
  }

  /**
   * Called before an exchange writes its answer: once the root is being let go, the next process
   * may own it, and nothing is written there (the answer is lost, as it would be with the process).
   */
  checkMayWrite(): void {
    if (this.letGo?.aborted) throw rootLetGo("was answered, but its answer was not stored");
  }

  /** How many exchanges are under way now. */
  count(): number {
    return this.underWay.size;
  }

  /**
   * Once no exchange is under way, those begun while it waited included. A graceful stop waits
   * here once the requests have drained, bounded by its drain deadline and a second signal
   * (graceful-stop.ts); `letGo` aborts before it lets the root go, after which no exchange starts
   * and none writes its answer.
   */
  async settled(letGo: AbortSignal): Promise<void> {
    this.letGo = letGo;
    while (this.underWay.size > 0) await Promise.allSettled([...this.underWay]);
  }
}

/** An exchange refused or left unstored because the stop was letting the root go. */
export class RootLetGo extends Conflict {}

function rootLetGo(what: string): RootLetGo {
  return new RootLetGo(
    "stopping",
    `Atrium is stopping and letting go of its data, so this exchange of credentials with the authorization server ${what}: once Atrium is back, sign in again if the connection asks for it.`,
  );
}
