import { createServer } from "node:net";

// Asks the kernel for an unused port, then releases it for the child to bind. Racy in principle,
// but on a loopback-only bench box nothing else is grabbing ports, and Atrium needs the port
// up front (it goes into instance.json) so binding port 0 in the child is not an option.
export function findFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => (port ? resolve(port) : reject(new Error("could not determine a free port"))));
    });
  });
}
