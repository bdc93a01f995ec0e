import { randomBytes } from "node:crypto";
import { Webhook } from "standardwebhooks";

/**
 * Standard Webhooks signatures (docs/api.md Webhooks), made with the `standardwebhooks` package that
 * receivers verify with, so sender and receiver cannot drift apart on the format.
 */

/** Random bytes of a secret (the HMAC-SHA256 key). */
const SECRET_BYTES = 32;
export const SECRET_PREFIX = "whsec_";

/** How long a rotated-out secret keeps signing beside the new one. */
export const SECRET_ROTATION_OVERLAP_MS = 24 * 3600 * 1000;

export function newSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(SECRET_BYTES).toString("base64")}`;
}

/**
 * The `webhook-signature` value: one `v1,<base64>` per live secret, space-separated (a receiver
 * that knows either secret accepts it during a rotation).
 */
export function signatureHeader(secrets: readonly string[], webhookId: string, timestampSeconds: number, payload: string): string {
  const at = new Date(timestampSeconds * 1000);
  return secrets.map((secret) => new Webhook(secret).sign(webhookId, at, payload)).join(" ");
}
