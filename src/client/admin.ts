import { PointsApiError } from "./errors.js";
import type { EventProof } from "./log.js";
import { PublicClient, requireAddress } from "./client.js";
import { contractQueryOf, type ContractPage, type ContractPageQuery } from "./contracts.js";
import { EventFeed, eventQueryOf, type EventFeedOptions } from "./events.js";
import { openDownload, type BalanceExportQuery, type ExportOptions, type TextDownload } from "./exports.js";
import type { Snapshot, SnapshotRequest, TakenSnapshot } from "./snapshots.js";
import type { TransportOptions } from "./transport.js";
import type { Address, EventPage, EventPageQuery, PointType } from "./types.js";

export interface AdminClientOptions extends TransportOptions {
  /** The service's ADMIN_TOKEN. */
  adminToken: string;
}

export interface CreditSource {
  /** The asset the points were earned on, e.g. "ETH" (`^[A-Z][A-Z0-9_]{0,15}$`). */
  asset?: string;
  /** The block up to which they were earned (an integer ≥ 0). */
  block?: number;
}

/**
 * The administrator's routes: register operators, credit points, take snapshots, export every
 * balance; and PublicClient's reads (address balances, snapshots, proofs) with the admin token,
 * so they work whether or not the service has PUBLIC_READS.
 */
export class PointsAdminClient extends PublicClient {
  private readonly adminToken: string;

  constructor(options: AdminClientOptions) {
    super(options);
    this.adminToken = options.adminToken;
  }

  protected override readToken(): string {
    return this.adminToken;
  }

  protected override async eventProof(eventId: string, treeSize: number): Promise<EventProof> {
    const body = await this.transport.request<EventProof>({
      method: "GET",
      path: `/v1/admin/events/${encodeURIComponent(eventId)}/proof`,
      query: { treeSize: String(treeSize) },
      token: this.adminToken,
      idempotent: true,
    });
    return { eventId: body.eventId, logIndex: body.logIndex, treeSize: body.treeSize, leafHash: body.leafHash, proof: body.proof };
  }

  /** One page of GET /v1/admin/events: every stream's events, admin ones included. */
  async listEvents(query: EventPageQuery = {}): Promise<EventPage> {
    const body = await this.transport.request<EventPage>({
      method: "GET",
      path: "/v1/admin/events",
      query: eventQueryOf(query),
      token: this.adminToken,
      idempotent: true,
    });
    return { events: body.events, cursor: body.cursor, hasMore: body.hasMore };
  }

  /** Every event of the ledger (the audit trail) as an async iterator that keeps its cursor; see PointsClient.events. */
  events(options: EventFeedOptions = {}): EventFeed {
    return new EventFeed((query) => this.listEvents(query), options);
  }

  /** Registers or changes a contract's operator; a change revokes the contract's tokens. */
  async setOperator(contractAddress: string, operatorAddress: string): Promise<{ contractAddress: Address; operatorAddress: Address }> {
    const contract = requireAddress(contractAddress, "contractAddress");
    const body = await this.transport.request<{ contractAddress: Address; operatorAddress: Address }>({
      method: "PUT",
      path: `/v1/admin/contracts/${contract}/operator`,
      body: { operatorAddress: requireAddress(operatorAddress, "operatorAddress") },
      token: this.adminToken,
      idempotent: true,
    });
    return { contractAddress: body.contractAddress, operatorAddress: body.operatorAddress };
  }

  /**
   * Adds points to an address's earnedCumulative. A creditId already used with the same content
   * counts as success (`created: false`); with other content it is a CREDIT_ID_EXISTS error.
   * `source` names what the points were earned on (`asset`) and up to which `block` (byAsset).
   */
  async credit(
    address: string,
    creditId: string,
    pointType: PointType,
    points: string,
    source: CreditSource = {},
  ): Promise<{ creditId: string; created: boolean }> {
    const contract = requireAddress(address, "address");
    try {
      await this.transport.request({
        method: "PUT",
        path: `/v1/admin/contracts/${contract}/credits/${encodeURIComponent(creditId)}`,
        // Absent fields stay out of the JSON, so a credit without a source is sent as before.
        body: { pointType, points, asset: source.asset, block: source.block },
        token: this.adminToken,
        idempotent: true,
      });
      return { creditId, created: true };
    } catch (error) {
      if (PointsApiError.is(error, "CREDIT_ID_EXISTS") && error.details?.matchesRequest === true) return { creditId, created: false };
      throw error;
    }
  }

  /**
   * Freezes every address's balance of `pointType` into a Merkle tree (PUT /v1/admin/snapshots/{id}).
   * Retried when an answer is lost: a snapshotId the service already holds with the same
   * pointType, measure, decimals and asOf counts as success (`created: false`, the stored snapshot);
   * with other values it is a SNAPSHOT_ID_EXISTS error. A point type nobody holds is
   * VALIDATION_FAILED (a tree needs a leaf).
   */
  async takeSnapshot(snapshotId: string, request: SnapshotRequest): Promise<TakenSnapshot> {
    try {
      const body = await this.transport.request<{ snapshot: Snapshot }>({
        method: "PUT",
        path: `/v1/admin/snapshots/${encodeURIComponent(snapshotId)}`,
        body: {
          pointType: request.pointType,
          measure: request.measure,
          decimals: request.decimals,
          asOf: request.asOf instanceof Date ? request.asOf.toISOString() : request.asOf,
        },
        token: this.adminToken,
        idempotent: true,
      });
      return { snapshot: body.snapshot, created: true };
    } catch (error) {
      if (PointsApiError.is(error, "SNAPSHOT_ID_EXISTS") && error.details?.matchesRequest === true) {
        return { snapshot: await this.getSnapshot(snapshotId), created: false };
      }
      throw error;
    }
  }

  /**
   * Every account's balances as CSV (GET /v1/admin/balances.csv), header row included: resolves
   * once the service has accepted the request, then yields text chunks as they arrive.
   */
  async exportBalancesCsv(query: BalanceExportQuery = {}, options: ExportOptions = {}): Promise<TextDownload> {
    return openDownload(this.download, this.transport, {
      path: "/v1/admin/balances.csv",
      query: { pointType: query.pointType },
      token: this.adminToken,
      accept: "text/csv",
      signal: options.signal,
    });
  }

  /** One page of GET /v1/admin/contracts: the registered contracts and their operators, by contract address. */
  async listContracts(query: ContractPageQuery = {}): Promise<ContractPage> {
    const body = await this.transport.request<ContractPage>({
      method: "GET",
      path: "/v1/admin/contracts",
      query: contractQueryOf(query),
      token: this.adminToken,
      idempotent: true,
    });
    return { contracts: body.contracts, cursor: body.cursor };
  }
}
