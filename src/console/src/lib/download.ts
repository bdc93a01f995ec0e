import type { TextDownload } from "../../../client/index.js";

/**
 * Saving a streamed export (transfers.csv, balances.csv, a snapshot's tree) as a file. The API
 * wants `Authorization: Bearer …`, which a plain link cannot send (and a token in a URL would end
 * up in logs and history), so the page reads the body itself with the client's streamed reader
 * and hands the browser a Blob. Chunks are encoded to bytes as they arrive and folded into the
 * Blob every FOLD_BYTES: the page never builds the export as one string, and a browser keeps a
 * large Blob outside the JavaScript heap (Chromium spills it to disk).
 */
const FOLD_BYTES = 8 * 1024 * 1024;
/** The object URL outlives the click long enough for the browser to start saving. */
const REVOKE_URL_AFTER_MS = 60_000;

export async function blobOf(download: TextDownload, type: string, onProgress: (bytes: number) => void): Promise<Blob> {
  const encoder = new TextEncoder();
  let blob = new Blob([], { type });
  let pending: Uint8Array<ArrayBuffer>[] = [];
  let pendingBytes = 0;
  let totalBytes = 0;
  for await (const chunk of download) {
    const bytes = encoder.encode(chunk);
    pending.push(bytes);
    pendingBytes += bytes.byteLength;
    totalBytes += bytes.byteLength;
    if (pendingBytes >= FOLD_BYTES) {
      blob = new Blob([blob, ...pending], { type });
      pending = [];
      pendingBytes = 0;
    }
    onProgress(totalBytes);
  }
  return new Blob([blob, ...pending], { type });
}

/** Offers `blob` to the browser as a download named `filename`. */
export function saveBlob(blob: Blob, filename: string): void {
  const url = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = url;
  link.download = filename;
  link.hidden = true;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), REVOKE_URL_AFTER_MS);
}

/** "12.3 MB", for progress. */
export function byteText(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}
