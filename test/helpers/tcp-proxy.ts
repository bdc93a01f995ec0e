import { connect, createServer, type AddressInfo, type Socket } from "node:net";

/**
 * A TCP proxy on 127.0.0.1 in front of another local port (PostgreSQL in the outage tests). It
 * fails in the two ways a database link fails:
 * - cut(): as a database restart or a refused connection: open connections are reset and new ones
 *   are reset as soon as they are accepted;
 * - blackhole(): as a host that died or a partition that drops packets: nothing is answered,
 *   open connections and new ones stay open but every byte is dropped. Connections silenced
 *   this way stay silent for good, as a TCP connection to a dead host does.
 * restore() lets new connections through again. retarget() sends new connections to another port
 * and leaves open ones where they are, as a DNS name or a proxy switched to a promoted standby
 * does (HAProxy without shutdown-sessions). The listening port stays bound the whole time,
 * so no other process can take it during the outage.
 */

const LOOPBACK = "127.0.0.1";

type Mode = "forward" | "cut" | "blackhole";

export interface TcpProxy {
  /** The proxy's own port on 127.0.0.1. */
  port: number;
  cut(): void;
  blackhole(): void;
  restore(): void;
  /** New connections go to `port` from now on; open ones stay on the old target. */
  retarget(port: number): void;
  /** Connections forwarded, reset (open at a cut, or arriving during one) and silenced. */
  readonly stats: { forwarded: number; reset: number; silenced: number };
  close(): Promise<void>;
}

/** A connection pair: what the client opened, and the proxy's connection upstream (if any). */
interface Link {
  client: Socket;
  upstream: Socket | null;
}

export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  const links = new Set<Link>();
  const stats = { forwarded: 0, reset: 0, silenced: 0 };
  let mode: Mode = "forward";
  let target = targetPort;

  const destroy = (link: Link) => {
    if (!links.delete(link)) return;
    link.client.destroy();
    link.upstream?.destroy();
  };
  const reset = (link: Link) => {
    stats.reset += 1;
    links.delete(link);
    link.client.resetAndDestroy();
    link.upstream?.destroy();
  };
  const silence = (link: Link) => {
    stats.silenced += 1;
    for (const socket of [link.client, link.upstream]) {
      socket?.unpipe();
      // A 'data' listener keeps the stream flowing, so whatever arrives is read and dropped.
      socket?.on("data", () => undefined);
    }
  };
  const track = (link: Link) => {
    links.add(link);
    // Either side failing or closing ends both, as a real connection would.
    for (const socket of [link.client, link.upstream]) {
      socket?.on("error", () => destroy(link));
      socket?.on("close", () => destroy(link));
    }
  };

  const server = createServer((client) => {
    if (mode === "cut") {
      stats.reset += 1;
      client.resetAndDestroy();
      return;
    }
    if (mode === "blackhole") {
      const link = { client, upstream: null };
      track(link);
      silence(link);
      return;
    }
    const upstream = connect(target, LOOPBACK);
    stats.forwarded += 1;
    client.pipe(upstream);
    upstream.pipe(client);
    track({ client, upstream });
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, LOOPBACK, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    stats,
    cut: () => {
      mode = "cut";
      for (const link of [...links]) reset(link);
    },
    blackhole: () => {
      mode = "blackhole";
      for (const link of links) silence(link);
    },
    restore: () => {
      mode = "forward";
    },
    retarget: (port) => {
      target = port;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const link of [...links]) destroy(link);
        server.close(() => resolve());
      }),
  };
}

/** `url` (a postgres:// URL on this machine) pointed at the proxy's port instead. */
export function throughProxy(url: string, proxy: TcpProxy): string {
  const parsed = new URL(url);
  if (parsed.hostname !== LOOPBACK && parsed.hostname !== "localhost") {
    throw new Error(`the proxy only fronts a local database, not ${parsed.hostname}`);
  }
  parsed.hostname = LOOPBACK;
  parsed.port = String(proxy.port);
  return parsed.toString();
}
