import { PointsApiError } from "./errors.js";
import { PublicClient, requireAddress } from "./client.js";
import type { TransportOptions } from "./transport.js";
import type { Address, PointType } from "./types.js";

export interface AdminClientOptions extends TransportOptions {
  /** The service's ADMIN_TOKEN. */
  adminToken: string;
}

/** The administrator's routes: register operators, credit points. Both are idempotent PUTs. */
export class PointsAdminClient extends PublicClient {
  private readonly adminToken: string;

  constructor(options: AdminClientOptions) {
    super(options);
    this.adminToken = options.adminToken;
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
   */
  async credit(address: string, creditId: string, pointType: PointType, points: string): Promise<{ creditId: string; created: boolean }> {
    const contract = requireAddress(address, "address");
    try {
      await this.transport.request({
        method: "PUT",
        path: `/v1/admin/contracts/${contract}/credits/${encodeURIComponent(creditId)}`,
        body: { pointType, points },
        token: this.adminToken,
        idempotent: true,
      });
      return { creditId, created: true };
    } catch (error) {
      if (PointsApiError.is(error, "CREDIT_ID_EXISTS") && error.details?.matchesRequest === true) return { creditId, created: false };
      throw error;
    }
  }
}
