import { PointsNetworkError, errorFromResponse } from "./errors.js";
import { retryAfterSeconds, type Transport } from "./transport.js";
import type { BatchStatus, PointType } from "./types.js";

/**
 * The CSV exports (docs/api.md, Transfers and exports) read with fetch as they arrive, so an
 * export of any size passes through in constant memory, in Node and in browsers alike.
 */

/** The filters of GET …/transfers.csv: those of listTransfers, without paging. */
export interface TransferExportQuery {
  /** What the contract sent this recipient. */
  toAddress?: string;
  pointType?: PointType;
  status?: BatchStatus;
}

export interface BalanceExportQuery {
  /** Only this point type; absent: every type. */
  pointType?: PointType;
}

export interface ExportOptions {
  /**
   * Aborting stops the download, also while waiting for the answer: the call or the iteration
   * then throws the signal's reason (never a quiet end that would pass for a complete export).
   */
  signal?: AbortSignal;
}

/** Where downloads go; the same base URL and fetch as the client's transport. */
export interface DownloadTarget {
  baseUrl: string;
  fetch: typeof fetch;
  /** Bounds the wait for the answer's headers, then each wait for the next chunk. */
  timeoutMs: number;
}

export interface DownloadSpec {
  path: string;
  query: Record<string, string | undefined>;
  token: string | undefined;
  accept: string;
  signal?: AbortSignal;
}

/**
 * A streamed text body, opened: the status was 2xx. Iterate it once (`for await`) for its text
 * chunks as they arrive, or `text()` for all of it (small exports only: it holds everything).
 * A download left unread holds its connection until `cancel()`.
 */
export class TextDownload implements AsyncIterable<string> {
  private consumed = false;

  constructor(
    private readonly response: Response,
    private readonly controller: AbortController,
    private readonly timeoutMs: number,
    private readonly signal: AbortSignal | undefined,
    /** Detaches the caller's signal from the controller once the download ends. */
    private readonly release: () => void,
  ) {}

  /** The answer's Content-Type, e.g. `text/csv; charset=utf-8`. */
  get contentType(): string | null {
    return this.response.headers.get("content-type");
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<string, void, undefined> {
    if (this.consumed) throw new Error("this download was already read: open it again for a second pass");
    this.consumed = true;
    if (this.response.body === null) return this.release();
    const reader = this.response.body.pipeThrough(new TextDecoderStream()).getReader();
    try {
      for (;;) {
        const { done, value } = await this.readWithin(reader);
        if (done) return;
        if (value !== "") yield value;
      }
    } finally {
      // Also when the caller stops early (break): the rest of the body is not downloaded.
      await reader.cancel().catch(() => undefined);
      this.release();
    }
  }

  /** All of the body as one string. */
  async text(): Promise<string> {
    let text = "";
    for await (const chunk of this) text += chunk;
    return text;
  }

  /** Stops the download without reading it. */
  async cancel(): Promise<void> {
    this.consumed = true;
    this.controller.abort();
    await this.response.body?.cancel().catch(() => undefined);
    this.release();
  }

  /** One read, bounded by timeoutMs: a server that stops sending mid-export is a lost answer, not a hang. */
  private async readWithin(reader: ReadableStreamDefaultReader<string>): Promise<ReadableStreamReadResult<string>> {
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      this.controller.abort();
    }, this.timeoutMs);
    try {
      return await reader.read();
    } catch (error) {
      if (this.signal?.aborted) throw this.signal.reason;
      const why = timedOut ? `no data for ${this.timeoutMs} ms` : describe(error);
      throw new PointsNetworkError(`the download stopped: ${why}`, { cause: error });
    } finally {
      clearTimeout(timer);
    }
  }
}

/**
 * GET of a streamed body: resolves once a 2xx answer's headers are in. Retried like any read
 * (no answer, 5xx, 429, 503); a non-2xx answer is the catalogue's PointsApiError. Once the body
 * flows nothing is retried: chunks already handed out cannot be taken back.
 */
export async function openDownload(target: DownloadTarget, transport: Transport, spec: DownloadSpec): Promise<TextDownload> {
  return transport.withRetry(true, () => openOnce(target, spec));
}

async function openOnce(target: DownloadTarget, spec: DownloadSpec): Promise<TextDownload> {
  const controller = new AbortController();
  const abort = () => controller.abort();
  spec.signal?.addEventListener("abort", abort, { once: true });
  const release = () => spec.signal?.removeEventListener("abort", abort);
  if (spec.signal?.aborted) controller.abort();
  const timer = setTimeout(abort, target.timeoutMs);
  let response: Response;
  try {
    response = await target.fetch(urlOf(target.baseUrl, spec), { method: "GET", headers: headersOf(spec), signal: controller.signal });
  } catch (error) {
    release();
    // The caller's own abort is not a lost answer: nothing to retry.
    if (spec.signal?.aborted) throw spec.signal.reason;
    throw new PointsNetworkError(`GET ${spec.path}: ${describe(error)}`, { cause: error });
  } finally {
    clearTimeout(timer);
  }
  if (response.ok) return new TextDownload(response, controller, target.timeoutMs, spec.signal, release);
  release();
  const text = await response.text().catch(() => "");
  throw errorFromResponse(response.status, parseJson(text), retryAfterSeconds(response.headers.get("retry-after")));
}

function urlOf(baseUrl: string, spec: DownloadSpec): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(spec.query)) if (value !== undefined) params.set(name, value);
  const query = params.toString();
  return `${baseUrl}${spec.path}${query === "" ? "" : `?${query}`}`;
}

function headersOf(spec: DownloadSpec): Record<string, string> {
  const headers: Record<string, string> = { accept: spec.accept };
  if (spec.token !== undefined) headers.authorization = `Bearer ${spec.token}`;
  return headers;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: unknown }).cause;
  return cause instanceof Error ? `${error.message} (${cause.message})` : error.message;
}

/** The query of GET …/transfers.csv: only the filters, since the export has no pages. */
export function transferExportQueryOf(query: TransferExportQuery): Record<string, string | undefined> {
  return { toAddress: query.toAddress, pointType: query.pointType, status: query.status };
}
