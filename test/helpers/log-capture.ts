import { Writable } from "node:stream";

/** A stream that keeps every line pino writes, for tests that read what was logged. */
export function logCapture(): { stream: Writable; lines: string[] } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(
        ...chunk
          .toString("utf8")
          .split("\n")
          .filter((line) => line !== ""),
      );
      done();
    },
  });
  return { stream, lines };
}
