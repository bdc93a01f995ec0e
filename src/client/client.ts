import { checksumAddress, parseAddress } from "../domain/address.js";
import { PointsApiError, PointsCursorError, PointsInputError, PointsNetworkError } from "./errors.js";
import { OperatorSession, signerOf, type OperatorCredential, type SessionOptions } from "./session.js";
import { submitAll, type SubmitAllOptions, type SubmitAllSummary } from "./submit-all.js";
import { Transport, type TransportOptions } from "./transport.js";
import type {
  Address,
  Balances,
  Batch,
  BatchFilter,
  BatchPage,
  BatchPageQuery,
  BatchRequest,
  BatchWithTransfers,
  Parameters,
  Session,
  SubmitResult,
  Transfer,
} from "./types.js";

export interface PointsClientOptions extends TransportOptions, SessionOptions {
  /** The contract this client acts for. */
  contractAddress: string;
  /** The contract's operator: a 0x private key or any signer (a viem Account). */
  operator: OperatorCredential;
}

/** A page size for iteration; the server allows up to 1000. */
const DEFAULT_PAGE_SIZE = 500;
/** A page loop that has not ended after this many pages is a bug somewhere, not a big ledger. */
const MAX_PAGES = 1_000_000;

/** Requests that need no sign-in: parameters, health, readiness, metrics. */
export class PublicClient {
  protected readonly transport: Transport;

  constructor(options: TransportOptions) {
    this.transport = new Transport(options);
  }

  async getParameters(): Promise<Parameters> {
    const body = await this.transport.request<{ parameters: Parameters }>({ method: "GET", path: "/v1/parameters", idempotent: true });
    return body.parameters;
  }

  /** True when the process answers /healthz; false on an error answer or none (no retries). */
  async health(): Promise<boolean> {
    return this.probe("/healthz");
  }

  /** True when the service and its database answer (/readyz); false on 503. */
  async ready(): Promise<boolean> {
    return this.probe("/readyz");
  }

  /** Prometheus text of GET /metrics. */
  async metrics(): Promise<string> {
    return this.transport.request<string>({ method: "GET", path: "/metrics", idempotent: true, text: true });
  }

  private async probe(path: string): Promise<boolean> {
    try {
      await this.transport.exchange({ method: "GET", path, idempotent: true });
      return true;
    } catch (error) {
      if (error instanceof PointsApiError || error instanceof PointsNetworkError) return false;
      throw error;
    }
  }
}

/**
 * The operator's client for one contract: signs in with the operator key, renews the token
 * before it expires, retries what is safe to retry, and throws PointsApiError with the
 * catalogue code otherwise.
 */
export class PointsClient extends PublicClient {
  readonly contractAddress: Address;
  private readonly session: OperatorSession;
  private readonly contractPath: string;
  private parametersCache: Promise<Parameters> | null = null;

  constructor(options: PointsClientOptions) {
    super(options);
    this.contractAddress = requireAddress(options.contractAddress, "contractAddress");
    this.contractPath = `/v1/contracts/${this.contractAddress}`;
    this.session = new OperatorSession(this.transport, this.contractAddress, signerOf(options.operator), options);
  }

  get operatorAddress(): string {
    return this.session.operatorAddress;
  }

  /** How many times this client has signed in (first sign-in and renewals). */
  get signIns(): number {
    return this.session.signIns;
  }

  /** Signs in now; otherwise the first request does it. */
  async signIn(): Promise<Session> {
    return this.session.signIn();
  }

  async getBalances(): Promise<Balances> {
    const body = await this.session.request<{ balancesByPointType: Balances }>({
      method: "GET",
      path: `${this.contractPath}/point-balances`,
      idempotent: true,
    });
    return body.balancesByPointType;
  }

  /**
   * Idempotent submit (PUT). Safe to call again with the same batchId and body: a batch the
   * service already holds with the same content counts as success (`created: false`); one with
   * different content is a BATCH_ID_EXISTS PointsApiError.
   */
  async submitBatch(batchId: string, request: BatchRequest): Promise<SubmitResult> {
    try {
      await this.session.request({ method: "PUT", path: this.batchPath(batchId), body: request, idempotent: true });
      return { batchId, created: true };
    } catch (error) {
      if (PointsApiError.is(error, "BATCH_ID_EXISTS") && error.details?.matchesRequest === true) {
        return { batchId, created: false, status: error.details.status };
      }
      throw error;
    }
  }

  /**
   * Convenience submit (POST): the service picks the batchId. Not retried when an answer is lost
   * (it could create a second batch); prefer submitBatch for anything that matters.
   */
  async createBatch(request: BatchRequest): Promise<{ batchId: string }> {
    const body = await this.session.request<{ batchId: string }>({
      method: "POST",
      path: `${this.contractPath}/batches`,
      body: request,
      idempotent: false,
    });
    return { batchId: body.batchId };
  }

  async getBatch(batchId: string): Promise<BatchWithTransfers> {
    const body = await this.session.request<{ batch: BatchWithTransfers }>({ method: "GET", path: this.batchPath(batchId), idempotent: true });
    return body.batch;
  }

  /** Cancels a PENDING batch; cancelling a CANCELLED batch again is a success. */
  async cancelBatch(batchId: string): Promise<Batch> {
    const body = await this.session.request<{ batch: Batch }>({ method: "DELETE", path: this.batchPath(batchId), idempotent: true });
    return body.batch;
  }

  /** One page of GET /batches. */
  async listBatches(query: BatchPageQuery = {}): Promise<BatchPage> {
    const body = await this.session.request<BatchPage>({
      method: "GET",
      path: `${this.contractPath}/batches`,
      query: {
        pointType: query.pointType,
        status: query.status,
        createdBefore: isoOf(query.createdBefore),
        createdAfter: isoOf(query.createdAfter),
        sort: query.sort,
        limit: query.limit === undefined ? undefined : String(query.limit),
        cursor: query.cursor,
      },
      idempotent: true,
    });
    return { batches: body.batches, cursor: body.cursor };
  }

  /** Every batch matching `filter`, page by page, following the cursor until it is null. */
  async *batches(filter: BatchFilter & { pageSize?: number } = {}): AsyncGenerator<Batch, void, undefined> {
    const { pageSize = DEFAULT_PAGE_SIZE, ...query } = filter;
    const seen = new Set<string>();
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const result = await this.listBatches({ ...query, limit: pageSize, cursor });
      yield* result.batches;
      if (result.cursor === null) return;
      // A cursor seen before would replay pages forever.
      if (seen.has(result.cursor)) throw new PointsCursorError(result.cursor);
      seen.add(result.cursor);
      cursor = result.cursor;
    }
    throw new Error(`batch listing did not end after ${MAX_PAGES} pages`);
  }

  /** The server's parameters, read once per client (they change only with a restart). */
  async cachedParameters(): Promise<Parameters> {
    this.parametersCache ??= this.getParameters().catch((error: unknown) => {
      this.parametersCache = null;
      throw error;
    });
    return this.parametersCache;
  }

  /**
   * Sends a whole distribution: merges repeated recipients, splits into full batches, names
   * them from `runId` so a rerun after a crash resumes without sending anything twice.
   */
  async submitAll(transfers: Iterable<Transfer>, options: SubmitAllOptions): Promise<SubmitAllSummary> {
    const parameters = await this.cachedParameters();
    return submitAll(this, transfers, options, parameters);
  }

  private batchPath(batchId: string): string {
    return `${this.contractPath}/batches/${encodeURIComponent(batchId)}`;
  }
}

function isoOf(value: string | Date | undefined): string | undefined {
  return value instanceof Date ? value.toISOString() : value;
}

export function requireAddress(value: string, path: string): Address {
  const key = parseAddress(value);
  if (key === null) throw new PointsInputError([{ path, message: `"${value}" is not a valid address` }]);
  return checksumAddress(key);
}
