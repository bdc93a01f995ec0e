import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { redactSecrets } from "../src/log-redaction.js";
import { buildAppOverStore, temporarySqliteStore } from "./helpers/app-over-store.js";
import { addContract } from "./helpers/http.js";
import { pollUntil } from "./helpers/process.js";
import { logCapture } from "./helpers/log-capture.js";

/**
 * Issue 21: logs never contain a secret, wherever it appears in a logged line (URL, header, body
 * excerpt, an error's message), not only under known parameter names. Before, a token pasted as
 * `?cursor=<token>` was logged in clear.
 */

const apiKey = `plk_${randomBytes(30).toString("base64url")}`;
const webhookSecret = `whsec_${randomBytes(24).toString("base64")}`;

describe("log lines are scrubbed of secrets by their shape", () => {
  it("redactSecrets replaces bearer tokens, API keys, webhook secrets, scheme credentials and the exact admin token", () => {
    const token = `plt_${randomBytes(32).toString("base64url")}`;
    const admin = "an-admin-token-of-any-shape";
    const line = JSON.stringify({
      url: `/v1/x?cursor=${token}&q=${encodeURIComponent(apiKey)}&a=${encodeURIComponent(admin)}`,
      headers: { "x-forwarded-auth": `Bearer ${token}`, other: `Basic dXNlcjpwYXNz` },
      body: { secret: webhookSecret, note: `key:${apiKey}`, admin },
      msg: `could not parse "${token}"`,
    });
    const scrubbed = redactSecrets(line, [admin]);
    for (const secret of [token, apiKey, webhookSecret, admin, "dXNlcjpwYXNz"]) expect(scrubbed).not.toContain(secret);
    expect(scrubbed).toContain("cursor=plt_[REDACTED]");
    expect(scrubbed).toContain("whsec_[REDACTED]");
    expect(scrubbed).toContain("Bearer plt_[REDACTED]");
    expect(scrubbed).toContain("Basic [REDACTED]");
    expect(JSON.parse(scrubbed)).toMatchObject({ body: { admin: "[REDACTED]" } });
    // Ordinary text is left alone: ids, addresses, words that merely contain the prefixes.
    const plain = JSON.stringify({
      url: "/v1/contracts/0xabc/batches?cursor=v2.abc&limit=10",
      msg: "bearer of good news",
      batchId: "splt_1",
    });
    expect(redactSecrets(plain, [admin])).toBe(plain);
  });

  it("a token and an API key sent in a query string, headers and a JSON body appear nowhere in the captured log", async () => {
    const sqlite = temporarySqliteStore();
    const { stream, lines } = logCapture();
    const testApp = await buildAppOverStore(sqlite.store, sqlite.databaseUrl, { logger: { level: "info", stream } });
    try {
      const ledger = await addContract(testApp);
      const base = `/v1/contracts/${ledger.contract}`;
      // Query values under names that say nothing of secrets (redaction by name misses these).
      await testApp.send({ method: "GET", url: `${base}/point-balances?cursor=${ledger.token}`, token: ledger.token });
      await testApp.send({ method: "GET", url: `${base}/batches?q=${apiKey}&admin=${testApp.adminToken}`, token: ledger.token });
      // Headers of any name, and a JSON body that the route refuses.
      await testApp.app.inject({
        method: "PUT",
        url: `${base}/batches/logged-secrets`,
        headers: {
          authorization: `Bearer ${ledger.token}`,
          "x-api-key": apiKey,
          "x-note": `Bearer ${apiKey}`,
          "content-type": "application/json",
        },
        payload: JSON.stringify({ pointType: ledger.token, transfers: [{ toAddress: apiKey, points: webhookSecret }] }),
      });
      // A line that carries the request's own parts, as an error report would.
      testApp.app.log.error(
        { headers: { authorization: `Bearer ${ledger.token}` }, body: { apiKey, webhookSecret } },
        `failed on ${ledger.token}`,
      );
      await pollUntil("the requests logged", 5_000, async () =>
        lines.filter((line) => line.includes('"msg":"request"')).length >= 3 && lines.some((line) => line.includes("failed on"))
          ? true
          : undefined,
      );
      const everything = lines.join("\n");
      for (const secret of [ledger.token, apiKey, webhookSecret, testApp.adminToken]) expect(everything).not.toContain(secret);
      expect(everything).toContain("cursor=plt_[REDACTED]");
      expect(everything).toContain("q=plk_[REDACTED]");
    } finally {
      await testApp.close();
      await sqlite.remove();
    }
  });
});
