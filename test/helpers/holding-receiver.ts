import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A webhook receiver on 127.0.0.1 that holds every request `holdMs` before answering 200, so
 * deliveries are in flight for a while (a sender can be killed mid-request), and that records,
 * per `webhook-id`, how many requests for it were in flight when each one arrived: a second
 * sender of the same delivery at the same time shows as a count above 0.
 */

export interface HeldRequest {
  webhookId: string;
  /** 1 for the first request of this webhook-id, 2 for the next, … */
  attempt: number;
  arrivedMs: number;
  /** Requests of the same webhook-id still in flight when this one arrived. */
  concurrentSameId: number;
  /** The sender's TCP port: which process sent it (the tests map ports to processes). */
  remotePort: number;
  /** Answered 200 (false: the sender went away first, or the receiver closed). */
  answered: boolean;
}

export interface HoldingReceiver {
  url: string;
  requests: HeldRequest[];
  /** Requests arrived and neither answered nor abandoned yet. */
  inFlight(): HeldRequest[];
  /** Distinct webhook-ids received at least once. */
  receivedIds(): Set<string>;
  close(): Promise<void>;
}

export async function startHoldingReceiver(holdMs: number): Promise<HoldingReceiver> {
  const requests: HeldRequest[] = [];
  const open = new Set<HeldRequest>();
  const openById = new Map<string, number>();
  const attemptsById = new Map<string, number>();
  const timers = new Set<NodeJS.Timeout>();
  const server: Server = createServer((request, response) => {
    const webhookId = String(request.headers["webhook-id"] ?? "");
    const attempt = (attemptsById.get(webhookId) ?? 0) + 1;
    attemptsById.set(webhookId, attempt);
    const held: HeldRequest = {
      webhookId,
      attempt,
      arrivedMs: Date.now(),
      concurrentSameId: openById.get(webhookId) ?? 0,
      remotePort: request.socket.remotePort ?? 0,
      answered: false,
    };
    requests.push(held);
    open.add(held);
    openById.set(webhookId, (openById.get(webhookId) ?? 0) + 1);
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      open.delete(held);
      openById.set(webhookId, openById.get(webhookId)! - 1);
    };
    // "close" comes after the answer is sent, or when the sender's connection goes away first.
    response.on("close", finish);
    request.resume();
    const timer = setTimeout(() => {
      timers.delete(timer);
      if (response.destroyed) return;
      response.writeHead(200, { "content-type": "text/plain" });
      response.end("ok", () => {
        held.answered = true;
      });
    }, holdMs);
    timers.add(timer);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    requests,
    inFlight: () => [...open],
    receivedIds: () => new Set(requests.map((request) => request.webhookId)),
    close: () =>
      new Promise<void>((resolve) => {
        for (const timer of timers) clearTimeout(timer);
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * The local TCP ports of the sockets process `pid` holds open (Linux /proc: its fds name socket
 * inodes, /proc/net/tcp{,6} maps inodes to ports). Tells which server process sent a request.
 */
export function localTcpPorts(pid: number): Set<number> {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (match) inodes.add(match[1]!);
    } catch {
      // The fd closed between the listing and the read.
    }
  }
  const ports = new Set<number>();
  for (const table of ["tcp", "tcp6"]) {
    const lines = readFileSync(`/proc/${pid}/net/${table}`, "utf8").trim().split("\n").slice(1);
    for (const line of lines) {
      const fields = line.trim().split(/\s+/);
      // fields: sl, local_address (hex ip:port), rem_address, st, queues, tr, retrnsmt, uid, timeout, inode
      if (inodes.has(fields[9]!)) ports.add(parseInt(fields[1]!.split(":")[1]!, 16));
    }
  }
  return ports;
}
