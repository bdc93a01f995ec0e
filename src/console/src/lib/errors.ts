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
