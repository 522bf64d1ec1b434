import net from "node:net";

/**
 * A TCP proxy on loopback in front of a PostgreSQL server, for tests of a hung config store. `hang()`
 * stops reading from both sides of every connection, new ones included: the kernel still accepts and
 * buffers, nothing is answered, exactly what clients see of a server frozen with SIGSTOP. `resume()`
 * lets the buffered bytes through, like SIGCONT.
 */
export async function startHangProxy(target: { host: string; port: number }) {
  const pairs = new Set<{ client: net.Socket; upstream: net.Socket }>();
  let hung = false;
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host);
    const pair = { client, upstream };
    pairs.add(pair);
    // Plain forwarding (no pipe(), which resumes a paused source when its destination drains).
    client.on("data", (d) => upstream.write(d));
    upstream.on("data", (d) => client.write(d));
    if (hung) {
      client.pause();
      upstream.pause();
    }
    const close = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on("error", close);
    upstream.on("error", close);
    client.on("close", close);
    upstream.on("close", close);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    /** Rewrites a connection string's host and port to go through the proxy. */
    urlFor(url: string): string {
      const u = new URL(url);
      u.hostname = "127.0.0.1";
      u.port = String(port);
      return u.toString();
    },
    hang(): void {
      hung = true;
      for (const p of pairs) {
        p.client.pause();
        p.upstream.pause();
      }
    },
    resume(): void {
      hung = false;
      for (const p of pairs) {
        p.client.resume();
        p.upstream.resume();
      }
    },
    /** Stops listening and drops every connection: clients see a server that is down (ECONNREFUSED). */
    async stop(): Promise<void> {
      for (const p of pairs) {
        p.client.destroy();
        p.upstream.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
    /** Listens again on the same port after stop(). */
    async start(): Promise<void> {
      await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
    },
    /** Connections open through the proxy now. */
    get connections(): number {
      return pairs.size;
    },
    async close(): Promise<void> {
      for (const p of pairs) {
        p.client.destroy();
        p.upstream.destroy();
      }
      if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type HangProxy = Awaited<ReturnType<typeof startHangProxy>>;
