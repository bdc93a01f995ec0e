import { checksumAddress, parseAddress } from "../domain/address.js";
import { DELIVERY_LIST_LIMIT_MAX } from "../domain/limits.js";
import { addressMessage } from "../domain/messages.js";
import { PointsApiError, PointsCursorError, PointsInputError, PointsNetworkError } from "./errors.js";
import { ApiKeys } from "./api-keys.js";
import { ApiKeySession, OperatorSession, signerOf, type ContractSession, type OperatorCredential, type SessionOptions } from "./session.js";
import { EventFeed, eventQueryOf, type EventFeedOptions } from "./events.js";
import { streamEvents, type EventStreamOptions, type StreamedEvent } from "./event-stream.js";
import { transferQueryOf, type TransferPage, type TransferPageQuery } from "./transfers.js";
import {
  balancesQueryOf,
  boardEntries,
  boardPageOf,
  leaderboardQueryOf,
  standingOf,
  type BalancesAsOf,
  type BalancesOptions,
  type LeaderboardEntry,
  type LeaderboardPage,
  type LeaderboardPageQuery,
  type LeaderboardQuery,
  type LeaderboardStanding,
  type StandingQuery,
} from "./leaderboards.js";
import {
  openDownload,
  transferExportQueryOf,
  type DownloadTarget,
  type ExportOptions,
  type TextDownload,
  type TransferExportQuery,
} from "./exports.js";
import { TransparencyLog, type EventProof } from "./log.js";
import { parseTreeDump, type Snapshot, type SnapshotProof, type SnapshotTreeDump } from "./snapshots.js";
import { submitAll, type SubmitAllOptions, type SubmitAllSummary } from "./submit-all.js";
import { Transport, type TransportOptions } from "./transport.js";
import { readChain, type ChainInfo } from "./chain.js";
import type {
  Address,
  Balances,
  Batch,
  BatchFilter,
  BatchPage,
  BatchPageQuery,
  BatchRequest,
  BatchWithTransfers,
  Challenge,
  EventPage,
  EventPageQuery,
  Parameters,
  Session,
  SubmitResult,
  Transfer,
  CreatedWebhookEndpoint,
  NewWebhookEndpoint,
  WebhookDelivery,
  WebhookDeliveryPage,
  WebhookDeliveryQuery,
  WebhookDeliveryStatus,
  WebhookEndpoint,
  WebhookEndpointChange,
} from "./types.js";

interface ContractClientOptions extends TransportOptions, SessionOptions {
  /** The contract this client acts for. */
  contractAddress: string;
}

/**
 * The credential: the contract's operator (a 0x private key, any signer such as a viem Account,
 * or a bearer token), or an API key (`plk_…`) limited to its scopes — the better choice for a
 * backend, which then never holds the operator's key (docs/api-keys.md).
 */
export type PointsClientOptions = ContractClientOptions &
  ({ operator: OperatorCredential; apiKey?: undefined } | { apiKey: string; operator?: undefined });

/** A page size for iteration, within the server's PAGE_LIMIT_MAX (1000). */
const DEFAULT_PAGE_SIZE = 500;
/** The server's largest page of webhook deliveries. */
const DELIVERY_PAGE_SIZE = DELIVERY_LIST_LIMIT_MAX;
/** A page loop that has not ended after this many pages is a bug somewhere, not a big ledger. */
const MAX_PAGES = 1_000_000;
/** A download's wait for its headers, then for each chunk, unless `timeoutMs` says otherwise (the transport's default). */
const DOWNLOAD_TIMEOUT_MS = 30_000;

/**
 * Requests that need no sign-in: parameters, health, readiness, metrics; and the reads that the
 * admin token opens, or nothing when the service runs with PUBLIC_READS=true (address balances,
 * snapshots and their proofs). A PublicClient sends no token; PointsAdminClient sends its own.
 */
export class PublicClient {
  protected readonly transport: Transport;
  /** For answers read as they arrive (exports, the event stream), outside the transport. */
  protected readonly download: DownloadTarget;
  /** The transparency log: its checkpoints, key and proofs, verified locally (src/client/log.ts). */
  readonly log: TransparencyLog;

  constructor(options: TransportOptions) {
    this.transport = new Transport(options);
    this.log = new TransparencyLog(this.transport, (eventId, treeSize) => this.eventProof(eventId, treeSize));
    this.download = {
      baseUrl: options.baseUrl.replace(/\/+$/, ""),
      fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
      timeoutMs: options.timeoutMs ?? DOWNLOAD_TIMEOUT_MS,
    };
  }

  /** An event's inclusion proof: a contract's client or the admin client asks it; a public client cannot. */
  protected async eventProof(eventId: string, _treeSize: number): Promise<EventProof> {
    throw new TypeError(`the proof of event ${eventId} needs the contract's client or the admin client`);
  }

  /** The token of the read routes: none here (PUBLIC_READS); the admin client's is ADMIN_TOKEN. */
  protected readToken(): string | undefined {
    return undefined;
  }

  async getParameters(): Promise<Parameters> {
    const body = await this.transport.request<{ parameters: Parameters }>({ method: "GET", path: "/v1/parameters", idempotent: true });
    return body.parameters;
  }

  /** Where operators come from under CHAIN_RPC_URL (GET /v1/chain); null when an administrator sets them. */
  readonly getChain = (): Promise<ChainInfo | null> => readChain(this.transport);

  /** A sign-in challenge for the operator (POST /v1/dapp-auth/challenge): sign its `message`, then solve it. */
  async requestChallenge(contractAddress: string, operatorAddress: string): Promise<Challenge> {
    const body = await this.transport.request<Challenge>({
      method: "POST",
      path: "/v1/dapp-auth/challenge",
      body: {
        contractAddress: requireAddress(contractAddress, "contractAddress"),
        operatorAddress: requireAddress(operatorAddress, "operatorAddress"),
      },
      idempotent: true,
    });
    return { challengeData: body.challengeData, message: body.message };
  }

  /**
   * Exchanges a signed challenge for a bearer token (POST /v1/dapp-auth/solve). Not retried: a
   * challenge solves once, so a lost answer means asking for a new challenge.
   */
  async solveChallenge(challengeData: string, signature: string): Promise<Session> {
    const body = await this.transport.request<Session>({
      method: "POST",
      path: "/v1/dapp-auth/solve",
      body: { challengeData, signature },
      idempotent: false,
    });
    return { bearerToken: body.bearerToken, expiresAt: body.expiresAt };
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

  /**
   * Any address's balances, one key per point type (GET /v1/addresses/{address}/point-balances);
   * with `asOf`, as they stood then (without byAsset).
   */
  async getAddressBalances(address: string): Promise<Balances>;
  async getAddressBalances(address: string, options: BalancesOptions & { asOf: string | Date }): Promise<BalancesAsOf>;
  async getAddressBalances(address: string, options?: BalancesOptions): Promise<Balances | BalancesAsOf>;
  async getAddressBalances(address: string, options: BalancesOptions = {}): Promise<Balances | BalancesAsOf> {
    const body = await this.transport.request<{ balancesByPointType: Balances }>({
      method: "GET",
      path: `/v1/addresses/${requireAddress(address, "address")}/point-balances`,
      query: balancesQueryOf(options),
      token: this.readToken(),
      idempotent: true,
    });
    return body.balancesByPointType;
  }

  /**
   * One page of any contract's leaderboard (GET /v1/contracts/{c}/leaderboard) with the admin
   * token, or without a token when the service runs with PUBLIC_READS=true (a program's site
   * showing its users where they stand). The operator's client has the same as leaderboardPage.
   */
  async leaderboardPageOf(contractAddress: string, query: LeaderboardPageQuery): Promise<LeaderboardPage> {
    const body = await this.transport.request<LeaderboardPage>({
      method: "GET",
      path: `/v1/contracts/${requireAddress(contractAddress, "contractAddress")}/leaderboard`,
      query: leaderboardQueryOf(query),
      token: this.readToken(),
      idempotent: true,
    });
    return boardPageOf(body);
  }

  /** Every entry of any contract's leaderboard, page by page (as leaderboardPageOf: admin token or PUBLIC_READS). */
  leaderboardOf(contractAddress: string, query: LeaderboardQuery): AsyncGenerator<LeaderboardEntry, void, undefined> {
    const limit = query.limit ?? DEFAULT_PAGE_SIZE;
    return boardEntries((cursor) => this.leaderboardPageOf(contractAddress, { ...query, limit, cursor }), MAX_PAGES);
  }

  /** One address's place on any contract's leaderboard (as leaderboardPageOf: admin token or PUBLIC_READS). */
  async rankOf(contractAddress: string, address: string, query: StandingQuery): Promise<LeaderboardStanding> {
    const contract = requireAddress(contractAddress, "contractAddress");
    const body = await this.transport.request<LeaderboardStanding>({
      method: "GET",
      path: `/v1/contracts/${contract}/leaderboard/${requireAddress(address, "address")}`,
      query: leaderboardQueryOf(query),
      token: this.readToken(),
      idempotent: true,
    });
    return standingOf(body);
  }

  async getSnapshot(snapshotId: string): Promise<Snapshot> {
    const body = await this.transport.request<{ snapshot: Snapshot }>({
      method: "GET",
      path: snapshotPath(snapshotId),
      token: this.readToken(),
      idempotent: true,
    });
    return body.snapshot;
  }

  /**
   * An address's leaf and proof in a snapshot, for a claim. NOT_FOUND when the snapshot does not
   * exist or the address is not in it (it held nothing of the point type then).
   */
  async getProof(snapshotId: string, address: string): Promise<SnapshotProof> {
    const body = await this.transport.request<SnapshotProof>({
      method: "GET",
      path: `${snapshotPath(snapshotId)}/proofs/${requireAddress(address, "address")}`,
      token: this.readToken(),
      idempotent: true,
    });
    return { address: body.address, amount: body.amount, points: body.points, proof: body.proof };
  }

  /**
   * The whole tree as the standard-v1 dump, for `StandardMerkleTree.load`. It is read into memory
   * (about 250 bytes of JSON per address, more once parsed) within one `timeoutMs`: for a snapshot
   * of millions of addresses, stream it with downloadSnapshotTree (or `points-ledger snapshot export`).
   */
  async getSnapshotTree(snapshotId: string): Promise<SnapshotTreeDump> {
    const text = await this.transport.request<string>({
      method: "GET",
      path: `${snapshotPath(snapshotId)}/tree`,
      token: this.readToken(),
      idempotent: true,
      // The dump is bare JSON, without the `success` envelope.
      text: true,
    });
    return parseTreeDump(text, snapshotId);
  }

  /**
   * The same dump as getSnapshotTree, read as it arrives (`for await` over its text chunks, e.g.
   * into a file): constant memory for a snapshot of any size. Nothing is parsed or checked here.
   */
  async downloadSnapshotTree(snapshotId: string, options: ExportOptions = {}): Promise<TextDownload> {
    return openDownload(this.download, this.transport, {
      path: `${snapshotPath(snapshotId)}/tree`,
      query: {},
      token: this.readToken(),
      accept: "application/json",
      signal: options.signal,
    });
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
  /** The contract's API keys: create, list, get, revoke (operator only). */
  readonly apiKeys: ApiKeys;
  private readonly session: ContractSession;
  private readonly contractPath: string;
  private parametersCache: Promise<Parameters> | null = null;

  constructor(options: PointsClientOptions) {
    super(options);
    this.contractAddress = requireAddress(options.contractAddress, "contractAddress");
    this.contractPath = `/v1/contracts/${this.contractAddress}`;
    this.session =
      options.apiKey !== undefined
        ? new ApiKeySession(this.transport, options.apiKey)
        : new OperatorSession(this.transport, this.contractAddress, signerOf(options.operator), options);
    this.apiKeys = new ApiKeys(this.session, `${this.contractPath}/api-keys`);
  }

  protected override async eventProof(eventId: string, treeSize: number): Promise<EventProof> {
    const body = await this.session.request<EventProof>({
      method: "GET",
      path: `${this.contractPath}/events/${encodeURIComponent(eventId)}/proof`,
      query: { treeSize: String(treeSize) },
      idempotent: true,
    });
    return { eventId: body.eventId, logIndex: body.logIndex, treeSize: body.treeSize, leafHash: body.leafHash, proof: body.proof };
  }

  /** null when the client was given a bearer token or an API key instead of the operator's key. */
  get operatorAddress(): string | null {
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

  /** The contract's balances, one key per point type; with `asOf`, as they stood then (without byAsset). */
  async getBalances(): Promise<Balances>;
  async getBalances(options: BalancesOptions & { asOf: string | Date }): Promise<BalancesAsOf>;
  async getBalances(options?: BalancesOptions): Promise<Balances | BalancesAsOf>;
  async getBalances(options: BalancesOptions = {}): Promise<Balances | BalancesAsOf> {
    const body = await this.session.request<{ balancesByPointType: Balances }>({
      method: "GET",
      path: `${this.contractPath}/point-balances`,
      query: balancesQueryOf(options),
      idempotent: true,
    });
    return body.balancesByPointType;
  }

  /**
   * One page of the contract's leaderboard (GET …/leaderboard): the addresses its finalized
   * transfers of `pointType` reached (from/to: whole UTC days, `to` exclusive), most points first.
   */
  async leaderboardPage(query: LeaderboardPageQuery): Promise<LeaderboardPage> {
    const body = await this.session.request<LeaderboardPage>({
      method: "GET",
      path: `${this.contractPath}/leaderboard`,
      query: leaderboardQueryOf(query),
      idempotent: true,
    });
    return boardPageOf(body);
  }

  /** The whole leaderboard, `limit` entries per request (default 500), following the cursor until it is null. */
  leaderboard(query: LeaderboardQuery): AsyncGenerator<LeaderboardEntry, void, undefined> {
    const limit = query.limit ?? DEFAULT_PAGE_SIZE;
    return boardEntries((cursor) => this.leaderboardPage({ ...query, limit, cursor }), MAX_PAGES);
  }

  /** One address's rank, points and the board's participants (GET …/leaderboard/{address}); rank null when it has nothing. */
  async rank(address: string, query: StandingQuery): Promise<LeaderboardStanding> {
    const body = await this.session.request<LeaderboardStanding>({
      method: "GET",
      path: `${this.contractPath}/leaderboard/${requireAddress(address, "address")}`,
      query: leaderboardQueryOf(query),
      idempotent: true,
    });
    return standingOf(body);
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
    const body = await this.session.request<{ batch: BatchWithTransfers }>({
      method: "GET",
      path: this.batchPath(batchId),
      idempotent: true,
    });
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

  /**
   * One page of GET …/transfers: the contract's transfers, newest first; with `toAddress`, what it
   * sent that recipient. A filtered page examines a bounded number of transfers, so it can hold
   * fewer than `limit`, even none, while `cursor` is not null: follow the cursor until it is null.
   */
  async listTransfers(query: TransferPageQuery = {}): Promise<TransferPage> {
    const body = await this.session.request<TransferPage>({
      method: "GET",
      path: `${this.contractPath}/transfers`,
      query: transferQueryOf(query),
      idempotent: true,
    });
    return { transfers: body.transfers, cursor: body.cursor };
  }

  /**
   * Every transfer matching `query` as CSV (GET …/transfers.csv), newest first, header row
   * included: resolves once the service has accepted the request, then yields text chunks as they
   * arrive (`for await`), so an export of any size passes through in constant memory.
   */
  async exportTransfersCsv(query: TransferExportQuery = {}, options: ExportOptions = {}): Promise<TextDownload> {
    const open = (token: string) =>
      openDownload(this.download, this.transport, {
        path: `${this.contractPath}/transfers.csv`,
        query: transferExportQueryOf(query),
        token,
        accept: "text/csv",
        signal: options.signal,
      });
    const token = await this.session.token();
    try {
      return await open(token);
    } catch (error) {
      // As session.request: a token revoked or expired early gets one new sign-in.
      if (!PointsApiError.is(error, "UNAUTHORIZED")) throw error;
      return open((await this.session.signIn()).bearerToken);
    }
  }

  /** One page of GET …/events (docs/api.md Events). */
  async listEvents(query: EventPageQuery = {}): Promise<EventPage> {
    const body = await this.session.request<EventPage>({
      method: "GET",
      path: `${this.contractPath}/events`,
      query: eventQueryOf(query),
      idempotent: true,
    });
    return { events: body.events, cursor: body.cursor, hasMore: body.hasMore };
  }

  /**
   * The contract's events as an async iterator that keeps its cursor (`feed.cursor`, to persist
   * and pass back as `after`); with `follow: true` it waits for new events instead of ending.
   */
  events(options: EventFeedOptions = {}): EventFeed {
    return new EventFeed((query) => this.listEvents(query), options);
  }

  /**
   * The contract's events as they happen (server-sent events of GET …/events/stream): an async
   * iterator of `{cursor, event}` that reconnects after a drop and resumes after the last event.
   */
  liveEvents(options: EventStreamOptions = {}): AsyncGenerator<StreamedEvent, void, undefined> {
    const url = `${this.download.baseUrl}${this.contractPath}/events/stream`;
    return streamEvents({ url, fetch: this.download.fetch, token: () => this.session.token() }, options);
  }

  /**
   * Registers a webhook endpoint (docs/api.md Webhooks). The secret is in this answer only: keep it.
   * Not retried when an answer is lost (it could register a second endpoint); list the
   * endpoints to see whether it was stored.
   */
  async createWebhookEndpoint(request: NewWebhookEndpoint): Promise<CreatedWebhookEndpoint> {
    const body = await this.session.request<CreatedWebhookEndpoint>({
      method: "POST",
      path: this.webhooksPath(),
      body: request,
      idempotent: false,
    });
    return { endpoint: body.endpoint, secret: body.secret };
  }

  async listWebhookEndpoints(): Promise<WebhookEndpoint[]> {
    const body = await this.session.request<{ endpoints: WebhookEndpoint[] }>({
      method: "GET",
      path: this.webhooksPath(),
      idempotent: true,
    });
    return body.endpoints;
  }

  async getWebhookEndpoint(endpointId: string): Promise<WebhookEndpoint> {
    const body = await this.session.request<{ endpoint: WebhookEndpoint }>({
      method: "GET",
      path: this.webhooksPath(endpointId),
      idempotent: true,
    });
    return body.endpoint;
  }

  /** Changes only the fields given; `disabled: false` enables an endpoint again (a 410 disabled it, or the operator). */
  async updateWebhookEndpoint(endpointId: string, change: WebhookEndpointChange): Promise<WebhookEndpoint> {
    const body = await this.session.request<{ endpoint: WebhookEndpoint }>({
      method: "PATCH",
      path: this.webhooksPath(endpointId),
      body: change,
      idempotent: true,
    });
    return body.endpoint;
  }

  /**
   * Deletes an endpoint and its deliveries. Retried when an answer is lost, so a NOT_FOUND may
   * mean an earlier attempt deleted it.
   */
  async deleteWebhookEndpoint(endpointId: string): Promise<void> {
    await this.session.request({ method: "DELETE", path: this.webhooksPath(endpointId), idempotent: true });
  }

  /**
   * A new signing secret; the old one keeps signing beside it for 24 hours. Not retried: a
   * second rotation would end the old secret's overlap while the first new one is lost.
   */
  async rotateWebhookSecret(endpointId: string): Promise<{ secret: string }> {
    const body = await this.session.request<{ secret: string }>({
      method: "POST",
      path: `${this.webhooksPath(endpointId)}/rotate-secret`,
      idempotent: false,
    });
    return { secret: body.secret };
  }

  /** Queues a `webhook.test` event for this endpoint only; its delivery shows in the deliveries list. */
  async testWebhookEndpoint(endpointId: string): Promise<{ deliveryId: string }> {
    const body = await this.session.request<{ deliveryId: string }>({
      method: "POST",
      path: `${this.webhooksPath(endpointId)}/test`,
      idempotent: false,
    });
    return { deliveryId: body.deliveryId };
  }

  /** One page of an endpoint's deliveries, newest first, with their attempts. */
  async listWebhookDeliveries(endpointId: string, query: WebhookDeliveryQuery = {}): Promise<WebhookDeliveryPage> {
    const body = await this.session.request<WebhookDeliveryPage>({
      method: "GET",
      path: `${this.webhooksPath(endpointId)}/deliveries`,
      query: { status: query.status, cursor: query.cursor, limit: query.limit === undefined ? undefined : String(query.limit) },
      idempotent: true,
    });
    return { deliveries: body.deliveries, cursor: body.cursor };
  }

  /** Every delivery of an endpoint (newest first), page by page, following the cursor until it is null. */
  async *webhookDeliveries(
    endpointId: string,
    filter: { status?: WebhookDeliveryStatus; pageSize?: number } = {},
  ): AsyncGenerator<WebhookDelivery, void, undefined> {
    const limit = Math.min(filter.pageSize ?? DELIVERY_PAGE_SIZE, DELIVERY_PAGE_SIZE);
    const seen = new Set<string>();
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const result = await this.listWebhookDeliveries(endpointId, { status: filter.status, limit, cursor });
      yield* result.deliveries;
      if (result.cursor === null) return;
      if (seen.has(result.cursor)) throw new PointsCursorError(result.cursor);
      seen.add(result.cursor);
      cursor = result.cursor;
    }
    throw new Error(`delivery listing did not end after ${MAX_PAGES} pages`);
  }

  /** Sends a delivery again now (whatever its status); safe to repeat: it stays queued once. */
  async retryWebhookDelivery(endpointId: string, deliveryId: string): Promise<WebhookDelivery> {
    const body = await this.session.request<{ delivery: WebhookDelivery }>({
      method: "POST",
      path: `${this.webhooksPath(endpointId)}/deliveries/${encodeURIComponent(deliveryId)}/retry`,
      idempotent: true,
    });
    return body.delivery;
  }

  /**
   * Queues again every FAILED delivery of the endpoint since `since` (after an outage of the
   * receiver) and returns how many; safe to repeat: a requeued delivery is no longer FAILED.
   */
  async recoverWebhookDeliveries(endpointId: string, since: string | Date): Promise<number> {
    const body = await this.session.request<{ requeued: number }>({
      method: "POST",
      path: `${this.webhooksPath(endpointId)}/recover`,
      body: { since: isoOf(since) },
      idempotent: true,
    });
    return body.requeued;
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

  private webhooksPath(endpointId?: string): string {
    const base = `${this.contractPath}/webhook-endpoints`;
    return endpointId === undefined ? base : `${base}/${encodeURIComponent(endpointId)}`;
  }

  private batchPath(batchId: string): string {
    return `${this.contractPath}/batches/${encodeURIComponent(batchId)}`;
  }
}

function snapshotPath(snapshotId: string): string {
  return `/v1/snapshots/${encodeURIComponent(snapshotId)}`;
}

function isoOf(value: string | Date | undefined): string | undefined {
  return value instanceof Date ? value.toISOString() : value;
}

export function requireAddress(value: string, path: string): Address {
  const key = parseAddress(value);
  if (key === null) throw new PointsInputError([{ path, message: addressMessage(value) }]);
  return checksumAddress(key);
}
