import { PointsApiError } from "./errors.js";
import type { Transport } from "./transport.js";
import type { ChainInfo } from "./types.js";

export type { ChainInfo };

/** GET /v1/chain: the chain's view, or null where the service answers 404 (operators set by an administrator). */
export async function readChain(transport: Transport): Promise<ChainInfo | null> {
  try {
    const { success: _success, ...chain } = await transport.request<ChainInfo & { success: true }>({
      method: "GET",
      path: "/v1/chain",
      idempotent: true,
    });
    return chain;
  } catch (error) {
    if (error instanceof PointsApiError && error.status === 404) return null;
    throw error;
  }
}
