import type { Address } from "./types.js";

/** A contract with a registered operator, as GET /v1/admin/contracts lists it (docs/api.md Administration). */
export interface RegisteredContract {
  contractAddress: Address;
  operatorAddress: Address;
  /** When the operator was registered or last changed (ISO 8601). */
  updatedAt: string;
}

export interface ContractPageQuery {
  /** 1–1000; the service's default is 100. */
  limit?: number;
  /** The `cursor` of the previous page. */
  cursor?: string;
}

export interface ContractPage {
  /** By contract address. */
  contracts: RegisteredContract[];
  /** null: no more pages. */
  cursor: string | null;
}

/** The query string of GET /v1/admin/contracts. */
export function contractQueryOf(query: ContractPageQuery): Record<string, string | undefined> {
  return { limit: query.limit === undefined ? undefined : String(query.limit), cursor: query.cursor };
}
