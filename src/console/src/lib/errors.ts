import { PointsApiError, PointsInputError, PointsNetworkError } from "../../../client/index.js";

/** What went wrong, in words an operator can act on; the API's catalogue code stays visible. */
export function errorText(error: unknown): string {
  if (error instanceof PointsApiError) {
    const fields = Array.isArray(error.details)
      ? (error.details as { path: string; message: string }[]).map((d) => `${d.path}: ${d.message}`).join("; ")
      : "";
    const extra = error.code === "INSUFFICIENT_BALANCE" && error.details ? ` (available ${JSON.stringify(error.details)})` : "";
    return `${error.code}: ${error.message}${fields ? ` — ${fields}` : ""}${extra}`;
  }
  if (error instanceof PointsInputError) return `${error.message}: ${error.details.map((d) => `${d.path}: ${d.message}`).join("; ")}`;
  if (error instanceof PointsNetworkError) return `The service did not answer (${error.message}). Check the connection and try again.`;
  if (error instanceof Error) return error.message;
  return String(error);
}

/** A 401: the token expired or was revoked (operator changed); the console returns to sign-in. */
export function isSessionOver(error: unknown): boolean {
  return PointsApiError.is(error, "UNAUTHORIZED");
}

/**
 * Why a token pasted at sign-in was refused, or null when the error is not a refusal. A 401 or a
 * wrong admin token means the service does not know the token: "not a valid token", never
 * "expired or revoked", which would tell an operator to look for a cause that is not there.
 */
export function refusedTokenText(error: unknown, contractAddress: string | null): string | null {
  if (PointsApiError.is(error, "UNAUTHORIZED")) return `${NOT_A_VALID_TOKEN}.`;
  if (!PointsApiError.is(error, "FORBIDDEN")) return null;
  if (contractAddress === null) return `${NOT_A_VALID_TOKEN} (the service said: ${error.message}).`;
  return `This token is valid but not for contract ${contractAddress}: ${error.message}.`;
}

export const NOT_A_VALID_TOKEN =
  "This is not a valid token: the service does not accept it. Paste an operator token (plt_…) of the contract, or the service's admin token";
