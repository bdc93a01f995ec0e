import { verifyMessage } from "viem";
import { createSiweMessage } from "viem/siwe";
import { checksumAddress, type AddressKey } from "../domain/address.js";

export const SERVICE_NAME = "points-ledger";

/**
 * EIP-4361 requires a chain id. The operator signs in to this service, not to a chain, so the
 * value only has to be a valid one: 1, which every wallet knows.
 */
const SIWE_CHAIN_ID = 1;

export interface ChallengeInput {
  contract: AddressKey;
  operator: AddressKey;
  nonce: string;
  issuedAtMs: number;
  expiresAtMs: number;
  /** PUBLIC_URL: when set, the message is an EIP-4361 (Sign-In with Ethereum) text for that site. */
  publicUrl?: string | null;
}

/**
 * The text the operator signs (ERC-191 personal_sign): human-readable, one fact per line. With a
 * PUBLIC_URL it is a Sign-In with Ethereum message, so wallets show their sign-in screen and
 * check the site; clients sign whatever `message` says either way, so both forms verify alike.
 */
export function challengeMessage(input: ChallengeInput): string {
  if (input.publicUrl) return siweMessage(input, input.publicUrl);
  return [
    `${SERVICE_NAME} wants you to sign in as the operator of a contract.`,
    "",
    `Contract: ${checksumAddress(input.contract)}`,
    `Operator: ${checksumAddress(input.operator)}`,
    `Nonce: ${input.nonce}`,
    `Issued At: ${new Date(input.issuedAtMs).toISOString()}`,
    `Expires At: ${new Date(input.expiresAtMs).toISOString()}`,
  ].join("\n");
}

function siweMessage(input: ChallengeInput, publicUrl: string): string {
  const url = new URL(publicUrl);
  const contract = checksumAddress(input.contract);
  return createSiweMessage({
    domain: url.host,
    address: checksumAddress(input.operator) as `0x${string}`,
    statement: `Sign in to ${SERVICE_NAME} as the operator of contract ${contract}.`,
    uri: publicUrl,
    version: "1",
    chainId: SIWE_CHAIN_ID,
    nonce: input.nonce,
    issuedAt: new Date(input.issuedAtMs),
    expirationTime: new Date(input.expiresAtMs),
    resources: [`urn:points-ledger:contract:${contract}`],
  });
}

/** True when `signature` is `operator`'s ERC-191 signature of `message`; never throws. */
export async function signatureMatches(message: string, signature: string, operator: AddressKey): Promise<boolean> {
  try {
    return await verifyMessage({ address: checksumAddress(operator), message, signature: signature as `0x${string}` });
  } catch {
    return false;
  }
}
