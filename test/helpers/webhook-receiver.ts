import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** A real HTTP receiver on 127.0.0.1 for webhook tests: records every request and answers as told. */

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  atMs: number;
}

export interface Answer {
  status: number;
  headers?: Record<string, string>;
  /** Never answer (the sender's timeout must end the attempt). */
  hang?: boolean;
}

export interface Receiver {
  url: string;
  port: number;
  received: ReceivedRequest[];
  /** Resolves once `count` requests have arrived. */
  waitFor(count: number): Promise<void>;
  close(): Promise<void>;
}

export async function startReceiver(
  answer: (request: ReceivedRequest, index: number) => Answer = () => ({ status: 200 }),
  port = 0,
): Promise<Receiver> {
  const received: ReceivedRequest[] = [];
  const waiters: { count: number; resolve: () => void }[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const entry = {
        method: request.method ?? "",
        path: request.url ?? "",
        headers: request.headers,
        body: Buffer.concat(chunks).toString("utf8"),
        atMs: Date.now(),
      };
      received.push(entry);
      const reply = answer(entry, received.length - 1);
      for (const waiter of waiters.filter((w) => received.length >= w.count)) waiter.resolve();
      if (reply.hang) return;
      response.writeHead(reply.status, reply.headers ?? {});
      response.end("ok");
    });
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  const actualPort = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${actualPort}/hook`,
    port: actualPort,
    received,
    waitFor: (count) => (received.length >= count ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ count, resolve }))),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
