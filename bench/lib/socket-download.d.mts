/** What the server answered: its status and the body's bytes that arrived. */
export interface Downloaded {
  status: number;
  bytes: number;
}

export function download(url: string, timeoutMs: number): Promise<Downloaded>;
