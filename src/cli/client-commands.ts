import { apiKeys } from "./api-key-commands.js";
import type { ClientCommand } from "./client-common.js";
import { leaderboard, rank } from "./leaderboard-commands.js";
import { balances, batches, events } from "./ledger-commands.js";
import { consoleLogin, devKey, login, signMessage } from "./login-commands.js";
import { submit } from "./submit-commands.js";
import { webhooks } from "./webhook-commands.js";

/**
 * The operator's commands, one file per command group (each parses its own raw arguments and talks
 * to a running service over HTTP through the client, like any integration would); what they share
 * (options, credentials, failures, CLIENT_USAGE) is ./client-common.ts.
 */
export { CLIENT_USAGE, type ClientCommand } from "./client-common.js";

export const clientCommands: Record<string, ClientCommand> = {
  leaderboard,
  rank,
  "api-keys": apiKeys,
  login,
  "sign-message": signMessage,
  "dev-key": devKey,
  submit,
  batches,
  balances,
  events,
  webhooks,
  "console-login": consoleLogin,
};
