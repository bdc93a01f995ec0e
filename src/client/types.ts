/** The JSON shapes of API.md, as the client receives and sends them. */

export const POINT_TYPES = ["PHASE2_POINTS", "PHASE2_GOLD"] as const;
export type PointType = (typeof POINT_TYPES)[number];

export const BATCH_STATUSES = ["PENDING", "FINALIZING", "FINALIZED", "CANCELLED"] as const;
export type BatchStatus = (typeof BATCH_STATUSES)[number];

/** `0x` + 40 hex digits; responses give the EIP-55 spelling. */
export type Address = `0x${string}`;

/** Points are decimal strings ("1.05", "2000"), never floats. */
export type Points = string;

export interface Transfer {
  toAddress: string;
  points: Points;
}

export interface Parameters {
  MINIMUM_FINALIZE_SECONDS: number;
  DEFAULT_FINALIZE_SECONDS: number;
  MAX_TRANSFERS_PER_BATCH: number;
  MAX_TRANSFER_DECIMALS: number;
  MINIMUM_PHASE2_POINTS_TRANSFER_SIZE: Points;
  MINIMUM_PHASE2_GOLD_TRANSFER_SIZE: Points;
  BATCH_ID_MAX_LENGTH: number;
  BEARER_TOKEN_TTL_SECONDS: number;
  CHALLENGE_TTL_SECONDS: number;
}

export interface Balance {
  available: Points;
  pendingSent: Points;
  earnedCumulative: Points;
  receivedCumulative: Points;
  finalizedSentCumulative: Points;
}

export type Balances = Record<PointType, Balance>;

export interface Batch {
  id: string;
  contractAddress: Address;
  pointType: PointType;
  status: BatchStatus;
  /** The batch total. */
  points: Points;
  transferCount: number;
  secondsToFinalize: number;
  createdAt: string;
  finalizeAt: string;
  updatedAt: string | null;
  finalizedAt: string | null;
  cancelledAt: string | null;
}

export interface BatchWithTransfers extends Batch {
  transfers: { toAddress: Address; points: Points }[];
}

export interface BatchRequest {
  pointType: PointType;
  transfers: Transfer[];
  /** Absent means the server's DEFAULT_FINALIZE_SECONDS. */
  secondsToFinalize?: number;
}

export interface BatchFilter {
  pointType?: PointType;
  status?: BatchStatus;
  /** Exclusive bounds: ISO 8601 strings or Dates. */
  createdBefore?: string | Date;
  createdAfter?: string | Date;
  sort?: "ASC" | "DESC";
}

export interface BatchPageQuery extends BatchFilter {
  /** 1–1000; the server's default is 100. */
  limit?: number;
  cursor?: string;
}

export interface BatchPage {
  batches: Batch[];
  cursor: string | null;
}

export interface SubmitResult {
  batchId: string;
  /**
   * false when the service already had this batchId with the same content: an earlier attempt
   * (whose answer was lost, or an earlier run) stored it. `status` is then its current status.
   */
  created: boolean;
  status?: BatchStatus;
}

export interface Challenge {
  challengeData: string;
  message: string;
}

export interface Session {
  bearerToken: string;
  /** Server time, ISO 8601. */
  expiresAt: string;
}
