/** One frame of a Server-Sent Events stream: an event, or a comment line (a heartbeat). */
export interface SseFrame {
  id?: string;
  event?: string;
  data?: unknown;
  comment?: string;
}

/** Reads a `text/event-stream` body frame by frame, as a client would. */
export class SseReader {
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private readonly decoder = new TextDecoder();
  private buffered = "";

  constructor(readonly response: Response) {
    if (!response.body) throw new Error(`no body (HTTP ${response.status})`);
    this.reader = response.body.getReader();
  }

  /** The next frame, or undefined once the server ended the stream. */
  async next(): Promise<SseFrame | undefined> {
    for (;;) {
      const end = this.buffered.indexOf("\n\n");
      if (end !== -1) {
        const block = this.buffered.slice(0, end);
        this.buffered = this.buffered.slice(end + 2);
        return parse(block);
      }
      const { done, value } = await this.reader.read();
      if (done) return undefined;
      this.buffered += this.decoder.decode(value, { stream: true });
    }
  }

  /** The next event, skipping heartbeats; undefined once the stream ended. */
  async nextEvent(): Promise<SseFrame | undefined> {
    for (;;) {
      const frame = await this.next();
      if (frame === undefined || frame.comment === undefined) return frame;
    }
  }

  /** Every event until the server ends the stream. */
  async rest(): Promise<SseFrame[]> {
    const events: SseFrame[] = [];
    for (let frame = await this.nextEvent(); frame; frame = await this.nextEvent()) events.push(frame);
    return events;
  }

  close(): Promise<void> {
    return this.reader.cancel();
  }
}

function parse(block: string): SseFrame {
  const frame: SseFrame = {};
  for (const line of block.split("\n")) {
    if (line.startsWith(":")) frame.comment = line.slice(1).trim();
    else if (line.startsWith("id: ")) frame.id = line.slice(4);
    else if (line.startsWith("event: ")) frame.event = line.slice(7);
    else if (line.startsWith("data: ")) frame.data = JSON.parse(line.slice(6));
  }
  return frame;
}
