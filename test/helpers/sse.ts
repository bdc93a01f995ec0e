import { request as httpRequest, type ClientRequest, type IncomingMessage } from "node:http";

/**
 * A server-sent-events reader over a real socket: frames are parsed as they arrive, and a test
 * awaits the next one it wants (with a deadline) instead of sleeping.
 */

export interface SseFrame {
  /** `id:`, `event:` and `data:` fields; a comment line (`: keep-alive`) is a frame of its own with `comment`. */
  id?: string;
  event?: string;
  data?: string;
  retry?: string;
  comment?: string;
}

export interface SseConnection {
  status: number;
  headers: IncomingMessage["headers"];
  /** The whole body when the answer is not a stream (an error). */
  body(): Promise<string>;
  /** Waits for the next frame matching `match` (skipping others), failing after `timeoutMs`. */
  next(match?: (frame: SseFrame) => boolean, timeoutMs?: number): Promise<SseFrame>;
  /** Resolves when the server ends the response. */
  ended: Promise<void>;
  close(): void;
}

const DEFAULT_WAIT_MS = 5000;

function parseFrame(block: string): SseFrame {
  const frame: SseFrame = {};
  for (const line of block.split("\n")) {
    if (line.startsWith(":")) frame.comment = line.slice(1).trim();
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    const name = line.slice(0, colon);
    const value = line.slice(colon + 1).replace(/^ /, "");
    if (name === "id" || name === "event" || name === "data" || name === "retry") frame[name] = value;
  }
  return frame;
}

export function openSse(baseUrl: string, path: string, headers: Record<string, string>): Promise<SseConnection> {
  const base = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const outgoing: ClientRequest = httpRequest({
      host: base.hostname,
      port: base.port,
      method: "GET",
      path,
      headers: { accept: "text/event-stream", ...headers },
    });
    outgoing.on("error", reject);
    outgoing.on("response", (incoming) => {
      const frames: SseFrame[] = [];
      let waiter: (() => void) | null = null;
      let buffer = "";
      let text = "";
      let isEnded = false;
      const ended = new Promise<void>((resolveEnd) => {
        const end = () => {
          isEnded = true;
          resolveEnd();
        };
        incoming.on("end", end);
        incoming.on("close", end);
      });
      incoming.setEncoding("utf8");
      incoming.on("data", (chunk: string) => {
        text += chunk;
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf("\n\n")) !== -1) {
          frames.push(parseFrame(buffer.slice(0, end)));
          buffer = buffer.slice(end + 2);
        }
        waiter?.();
      });
      incoming.on("error", () => undefined);
      const next = async (match: (frame: SseFrame) => boolean = () => true, timeoutMs = DEFAULT_WAIT_MS): Promise<SseFrame> => {
        const deadline = Date.now() + timeoutMs;
        for (;;) {
          const index = frames.findIndex(match);
          if (index !== -1) return frames.splice(0, index + 1).at(-1)!;
          if (isEnded) throw new Error(`the stream ended without a matching frame; received:\n${text}`);
          const left = deadline - Date.now();
          if (left <= 0) throw new Error(`no matching frame within ${timeoutMs} ms; received so far:\n${text}`);
          await Promise.race([
            new Promise<void>((resolveWait) => (waiter = resolveWait)),
            new Promise<void>((resolveWait) => setTimeout(resolveWait, left)),
            ended,
          ]);
          waiter = null;
        }
      };
      resolve({
        status: incoming.statusCode ?? 0,
        headers: incoming.headers,
        body: async () => {
          await ended;
          return text;
        },
        next,
        ended,
        close: () => {
          incoming.destroy();
          outgoing.destroy();
        },
      });
    });
    outgoing.end();
  });
}

/** Only event frames (not the retry hint or keep-alive comments). */
export const isEvent = (frame: SseFrame): boolean => frame.event !== undefined;
