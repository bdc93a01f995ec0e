import { verifyMessage } from "viem";
import { checksumAddress, type AddressKey } from "../domain/address.js";

export const SERVICE_NAME = "points-ledger";

/** The text the operator signs (ERC-191 personal_sign): human-readable, one fact per line. */
export function challengeMessage(input: {
  contract: AddressKey;
  operator: AddressKey;
  nonce: string;
  issuedAtMs: number;
  expiresAtMs: number;
}): string {
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

/** True when `signature` is `operator`'s ERC-191 signature of `message`; never throws. */
export async function signatureMatches(message: string, signature: string, operator: AddressKey): Promise<boolean> {
  try {
    return await verifyMessage({ address: checksumAddress(operator), message, signature: signature as `0x${string}` });
  } catch {
    return false;
  }
}
