import { type ApiKey, type ApiKeyScope } from "../client/index.js";
import { UsageError } from "./commands.js";
import { type ClientCommand, parse, required, clientFor, reportingFailures, usage } from "./client-common.js";

/** `points-ledger api-keys …`: the contract's API keys (the operator's credential only). */

const API_KEYS_USAGE =
  "usage: api-keys create --name <name> --scopes read,submit,cancel,webhooks [--expires <iso>] | list [--json] | show <keyId> | revoke <keyId>";

function apiKeyLine(key: ApiKey): string {
  const state =
    key.revokedAt !== null
      ? `revoked ${key.revokedAt} (${key.revokedReason ?? ""})`
      : key.expiresAt !== null
        ? `expires ${key.expiresAt}`
        : "active";
  return `${key.id}  ${key.prefix}…  ${key.scopes.join(",")}  ${state}  last used ${key.lastUsedAt ?? "never"}  ${key.name}`;
}

/** `api-keys …`: the contract's API keys (operator only). The secret is printed once, on stdout, alone. */
export const apiKeys: ClientCommand = async (argv) => {
  const { values, positionals } = parse(argv, {
    name: { type: "string" },
    scopes: { type: "string" },
    expires: { type: "string" },
    json: { type: "boolean" },
  });
  if (values.help) return usage();
  const [action, ...ids] = positionals;
  const wanted = { create: 0, list: 0, show: 1, revoke: 1 }[action ?? ""];
  if (wanted === undefined || ids.length !== wanted) throw new UsageError(API_KEYS_USAGE);
  const client = clientFor(values);
  return reportingFailures(async () => {
    if (action === "create") {
      const scopes = required(values.scopes, "scopes").split(",") as ApiKeyScope[];
      const expiresAt = typeof values.expires === "string" ? values.expires : null;
      const { apiKey, secret } = await client.apiKeys.create({ name: required(values.name, "name"), scopes, expiresAt });
      console.error(`created ${apiKeyLine(apiKey)}\nthe secret below is shown only now: keep it in your secret store`);
      console.log(secret);
      return 0;
    }
    if (action === "list") {
      const keys = await client.apiKeys.list();
      for (const key of keys) console.log(values.json ? JSON.stringify(key) : apiKeyLine(key));
      return 0;
    }
    const key = action === "show" ? await client.apiKeys.get(ids[0]!) : await client.apiKeys.revoke(ids[0]!);
    console.log(values.json ? JSON.stringify(key) : apiKeyLine(key));
    return 0;
  });
};
