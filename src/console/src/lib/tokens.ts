import { PointsAdminClient } from "../../../client/index.js";
import { NOT_A_VALID_TOKEN, refusedTokenText } from "./errors.js";

/**
 * Telling the tokens a person may paste apart. Operator tokens (`plt_`) and API keys (`plk_`) have
 * a fixed prefix (src/auth/tokens.ts, docs/api.md API keys); the admin token is whatever the
 * service's ADMIN_TOKEN is. So a prefixed token is an operator's, anything else is tried as the
 * admin token: one request per sign-in, and no operator token is ever sent to an admin route.
 */
const OPERATOR_TOKEN_PREFIX = /^pl[tk]_/;
/** What an Authorization header can carry (the service's bearerTokenOf): anything else is refused before sending. */
const SENDABLE_TOKEN = /^[\x21-\x7e]{1,512}$/;

export type TokenKind = "operator" | "admin" | "unsendable";

export function tokenKind(token: string): TokenKind {
  if (!SENDABLE_TOKEN.test(token)) return "unsendable";
  return OPERATOR_TOKEN_PREFIX.test(token) ? "operator" : "admin";
}

/** An admin client for `token` once the service has accepted it (GET /v1/admin/contracts); throws with words to show otherwise. */
export async function checkedAdminClient(token: string): Promise<PointsAdminClient> {
  if (tokenKind(token) === "unsendable") throw new Error(`${NOT_A_VALID_TOKEN}.`);
  const admin = new PointsAdminClient({ baseUrl: location.origin, adminToken: token, retry: { maxAttempts: 2 } });
  try {
    await admin.listContracts({ limit: 1 });
  } catch (error) {
    const refused = refusedTokenText(error, null);
    if (refused !== null) throw new Error(refused);
    throw error;
  }
  return admin;
}
