import { readFileSync } from "node:fs";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { PointsClient, PublicClient, consoleLoginUrl } from "../client/index.js";
import { UsageError } from "./commands.js";
import { type ClientCommand, parse, KEY_PATTERN, operatorKey, contractOf, urlOf, reportingFailures, usage } from "./client-common.js";

/** `points-ledger login|console-login|dev-key|sign-message`: the operator's key, its signatures and its sign-ins. */

/**
 * Signs a fresh challenge with OPERATOR_PRIVATE_KEY and prints the console link that solves it
 * (src/client/console-login.ts): single use, valid for CHALLENGE_TTL_SECONDS, and no token
 * exists until the browser opens it.
 */
export const consoleLogin: ClientCommand = async (argv) => {
  const { values } = parse(argv, {});
  const key = operatorKey();
  const contractAddress = contractOf(values.contract);
  const baseUrl = urlOf(values);
  return reportingFailures(async () => {
    const account = privateKeyToAccount(key);
    const service = new PublicClient({ baseUrl });
    const challenge = await service.requestChallenge(contractAddress, account.address);
    const signature = await account.signMessage({ message: challenge.message });
    const parameters = await service.getParameters();
    console.log(consoleLoginUrl(baseUrl, { contractAddress, challengeData: challenge.challengeData, signature }));
    console.error(`open it within ${parameters.CHALLENGE_TTL_SECONDS} s; it signs in once`);
    return 0;
  });
};

/** --key-file's contents (surrounding whitespace ignored), else OPERATOR_PRIVATE_KEY. */
function loginKey(keyFile: string | boolean | undefined): `0x${string}` {
  if (typeof keyFile !== "string") return operatorKey();
  let key: string;
  try {
    key = readFileSync(keyFile, "utf8").trim();
  } catch (error) {
    throw new UsageError(`cannot read ${keyFile}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
  if (!KEY_PATTERN.test(key)) throw new UsageError(`${keyFile} must hold the operator's 0x-prefixed 32-byte private key`);
  return key as `0x${string}`;
}

/**
 * Signs in as the contract's operator and prints the bearer token, for curl and for the other
 * commands (POINTS_LEDGER_TOKEN); `--export` prints it as a shell line to eval.
 */
export const login: ClientCommand = async (argv) => {
  const { values } = parse(argv, { "key-file": { type: "string" }, export: { type: "boolean" } });
  if (values.help) return usage();
  const contractAddress = contractOf(values.contract);
  const key = loginKey(values["key-file"]);
  return reportingFailures(async () => {
    const client = new PointsClient({ baseUrl: urlOf(values), contractAddress, operator: key });
    const session = await client.signIn();
    console.log(values.export ? `export POINTS_LEDGER_TOKEN=${session.bearerToken}` : session.bearerToken);
    console.error(`signed in as ${client.operatorAddress ?? ""} for ${client.contractAddress}; the token expires at ${session.expiresAt}`);
    return 0;
  });
};

const DEV_KEY_WARNING = "for trying points-ledger locally only, NOT for production: this key was printed in clear";

/** A fresh operator key and its address, as shell lines to eval. */
export const devKey: ClientCommand = async (argv) => {
  const { values } = parse(argv, {});
  if (values.help) return usage();
  const key = generatePrivateKey();
  console.log(`# ${DEV_KEY_WARNING}\nexport OPERATOR_PRIVATE_KEY=${key}\nexport OPERATOR=${privateKeyToAccount(key).address}`);
  console.error(`points-ledger dev-key: ${DEV_KEY_WARNING}`);
  return 0;
};

/**
 * Signs one message with OPERATOR_PRIVATE_KEY (ERC-191 personal_sign) and prints the signature:
 * the middle step of signing in by hand with curl (challenge, sign, solve).
 */
export const signMessage: ClientCommand = async (argv) => {
  const { values, positionals } = parse(argv, {});
  if (values.help) return usage();
  if (positionals.length !== 1) throw new UsageError("usage: sign-message <message>");
  console.log(await privateKeyToAccount(operatorKey()).signMessage({ message: positionals[0]! }));
  return 0;
};
