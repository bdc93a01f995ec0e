import type { Signer } from "../../../client/index.js";

/**
 * Browser wallets: found through EIP-6963 (each announces itself; several can coexist) and
 * asked through EIP-1193 for an account and a personal_sign of the challenge message.
 */

export interface Eip1193Provider {
  request(args: { method: string; params?: unknown[] }): Promise<unknown>;
}

export interface WalletInfo {
  uuid: string;
  name: string;
  /** A data: URI (EIP-6963 requires one), so showing it loads nothing from elsewhere. */
  icon: string;
  rdns: string;
}

export interface DiscoveredWallet {
  info: WalletInfo;
  provider: Eip1193Provider;
}

interface AnnounceEvent extends Event {
  detail: DiscoveredWallet;
}

/** Calls `onWallet` for each wallet that announces itself (now or later); returns the unsubscribe. */
export function discoverWallets(onWallet: (wallet: DiscoveredWallet) => void): () => void {
  const listener = (event: Event) => {
    const detail = (event as AnnounceEvent).detail;
    if (detail?.info?.uuid && typeof detail.provider?.request === "function") onWallet(detail);
  };
  window.addEventListener("eip6963:announceProvider", listener);
  window.dispatchEvent(new Event("eip6963:requestProvider"));
  return () => window.removeEventListener("eip6963:announceProvider", listener);
}

/** UTF-8 text as 0x hex, the form personal_sign takes. */
function hexOf(text: string): string {
  return `0x${Array.from(new TextEncoder().encode(text), (byte) => byte.toString(16).padStart(2, "0")).join("")}`;
}

/** Asks the wallet for its account, and signs with it (the wallet shows each message). */
export async function walletSigner(provider: Eip1193Provider): Promise<Signer> {
  const accounts = await provider.request({ method: "eth_requestAccounts" });
  const address = Array.isArray(accounts) && typeof accounts[0] === "string" ? accounts[0] : null;
  if (address === null) throw new Error("the wallet returned no account");
  return {
    address,
    signMessage: async ({ message }) => {
      const signature = await provider.request({ method: "personal_sign", params: [hexOf(message), address] });
      if (typeof signature !== "string") throw new Error("the wallet returned no signature");
      return signature;
    },
  };
}
