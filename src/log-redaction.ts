/**
 * Secrets never reach a log line. Redacting by field name (`req.headers.authorization`, a query
 * parameter called `token`) misses a token pasted where nobody expected one: `?cursor=plt_…`, a
 * header of another name, a JSON body echoed in an error. So every line is scrubbed as written,
 * whatever field or message holds it, by the shapes of the secrets this service issues or
 * accepts: bearer tokens (`plt_`), API keys (`plk_`), webhook secrets (`whsec_`), anything after
 * `Bearer ` or `Basic `, and the configured admin token itself, which has no shape of its own.
 *
 * It runs on the serialized line (pino's `streamWrite` hook): one pass of a few regular
 * expressions over a line of a few hundred bytes, about a microsecond, once per logged line.
 */

const REDACTED = "[REDACTED]";

/** Issued secrets by prefix: the prefix is kept (it says what leaked), the rest replaced. */
const PREFIXED_SECRET = /(?<![A-Za-z0-9])(plt_|plk_|whsec_)[A-Za-z0-9_\-+/=]{8,}/g;
/** A credential (token68, 8 characters or more) after its scheme, in a header value, a URL (`%20`, `+`) or a JSON string. */
const SCHEME_CREDENTIAL = /\b(Bearer|Basic)(?:\s|%20|\+)+[A-Za-z0-9\-._~+/%]{8,}=*/gi;
/** Below this a literal match would hit ordinary text (ADMIN_TOKEN must have 16 characters or more). */
const EXACT_SECRET_MIN_LENGTH = 8;

/** Replaces every secret-shaped string in `line`, and every occurrence of each `exact` secret. */
export function redactSecrets(line: string, exact: readonly string[] = []): string {
  let redacted = line.replace(PREFIXED_SECRET, `$1${REDACTED}`).replace(SCHEME_CREDENTIAL, `$1 ${REDACTED}`);
  for (const secret of exact) {
    if (secret.length < EXACT_SECRET_MIN_LENGTH) continue;
    for (const form of new Set([secret, encodeURIComponent(secret), JSON.stringify(secret).slice(1, -1)])) {
      redacted = redacted.split(form).join(REDACTED);
    }
  }
  return redacted;
}

/** pino options with the scrubbing hook added (and the authorization header redacted by path, as before). */
export function redactingLoggerOptions(options: object, exact: readonly (string | null)[]): object {
  const secrets = exact.filter((secret): secret is string => secret !== null);
  return {
    ...options,
    redact: ["req.headers.authorization"],
    hooks: { streamWrite: (line: string) => redactSecrets(line, secrets) },
  };
}
