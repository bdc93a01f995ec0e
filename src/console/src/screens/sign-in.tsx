import { useEffect, useState } from "preact/hooks";
import { PointsClient, type Parameters } from "../../../client/index.js";
import { parseAddress, checksumAddress } from "../../../domain/address.js";
import { addressMessage } from "../../../domain/messages.js";
import { NOT_A_VALID_TOKEN, errorText, refusedTokenText } from "../lib/errors.js";
import type { StoredSession } from "../lib/session-store.js";
import { checkedAdminClient, tokenKind } from "../lib/tokens.js";
import { discoverWallets, walletSigner, type DiscoveredWallet } from "../lib/wallet.js";

interface Props {
  parameters: Parameters;
  notice: string | null;
  onSignedIn(session: StoredSession): void;
  /** The admin token was accepted: the admin console opens, without an operator session. */
  onAdmin(adminToken: string): void;
}

function contractOf(text: string): string | null {
  const key = parseAddress(text.trim());
  return key === null ? null : checksumAddress(key);
}

export function SignIn({ parameters, notice, onSignedIn, onAdmin }: Props) {
  const [contract, setContract] = useState("");
  const [token, setToken] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const wallets = useWallets();

  const contractAddress = contractOf(contract);
  const needContract = () => {
    if (contractAddress === null) setError(`Contract address: ${addressMessage(contract.trim())}`);
    return contractAddress;
  };

  const run = async (attempt: () => Promise<StoredSession>) => {
    setBusy(true);
    setError(null);
    try {
      onSignedIn(await attempt());
    } catch (failure) {
      setError(errorText(failure));
    } finally {
      setBusy(false);
    }
  };

  const withWallet = (wallet: DiscoveredWallet) => {
    const address = needContract();
    if (address === null) return;
    void run(async () => {
      const signer = await walletSigner(wallet.provider);
      const client = new PointsClient({ baseUrl: location.origin, contractAddress: address, operator: signer, retry: { maxAttempts: 2 } });
      const session = await client.signIn();
      return { contractAddress: address, ...session, via: "wallet", operatorAddress: checksumAddress(parseAddress(signer.address)!) };
    });
  };

  const withToken = (event: Event) => {
    event.preventDefault();
    const pasted = token.trim();
    const kind = tokenKind(pasted);
    if (kind === "unsendable") return setError(`${NOT_A_VALID_TOKEN}.`);
    if (kind === "admin") {
      setBusy(true);
      setError(null);
      checkedAdminClient(pasted)
        .then(
          () => onAdmin(pasted),
          (failure: unknown) => setError(errorText(failure)),
        )
        .finally(() => setBusy(false));
      return;
    }
    const address = needContract();
    if (address === null) return;
    void run(() => operatorTokenSession(address, pasted, parameters));
  };

  return (
    <main class="signin">
      <h1>points-ledger console</h1>
      {notice && (
        <p role="status" class="notice">
          {notice}
        </p>
      )}
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      <label>
        Contract address
        <input
          name="contract"
          class="mono"
          value={contract}
          onInput={(e) => setContract(e.currentTarget.value)}
          placeholder="0x…"
          autoComplete="off"
          spellcheck={false}
        />
      </label>
      <WalletSignIn wallets={wallets} busy={busy} onWallet={withWallet} />
      <LoginLinkHelp ttlSeconds={parameters.CHALLENGE_TTL_SECONDS} />
      <TokenSignIn token={token} onToken={setToken} busy={busy} onSubmit={withToken} />
    </main>
  );
}

/** The browser wallets announced on this page (EIP-6963), each once. */
function useWallets(): DiscoveredWallet[] {
  const [wallets, setWallets] = useState<DiscoveredWallet[]>([]);
  useEffect(
    () =>
      discoverWallets((wallet) =>
        setWallets((known) => (known.some((w) => w.info.uuid === wallet.info.uuid) ? known : [...known, wallet])),
      ),
    [],
  );
  return wallets;
}

/** A button per browser wallet found; each signs a challenge for the contract above. */
function WalletSignIn({
  wallets,
  busy,
  onWallet,
}: {
  wallets: DiscoveredWallet[];
  busy: boolean;
  onWallet: (wallet: DiscoveredWallet) => void;
}) {
  return (
    <section aria-labelledby="wallet-title">
      <h2 id="wallet-title">Browser wallet</h2>
      {wallets.length === 0 ? (
        <p class="muted">No browser wallet found on this page.</p>
      ) : (
        <div class="row">
          {wallets.map((wallet) => (
            <button type="button" disabled={busy} onClick={() => onWallet(wallet)}>
              <img src={wallet.info.icon} alt="" width={20} height={20} /> Sign in with {wallet.info.name}
            </button>
          ))}
        </div>
      )}
    </section>
  );
}

/** Where a server-held operator key signs the console in: `points-ledger console-login`. */
function LoginLinkHelp({ ttlSeconds }: { ttlSeconds: number }) {
  return (
    <section aria-labelledby="link-title">
      <h2 id="link-title">Login link</h2>
      <p class="muted">
        Operator keys usually live on servers. There, run <code>points-ledger console-login --contract &lt;address&gt;</code> and open the
        link it prints: it works once, within {ttlSeconds} s.
      </p>
    </section>
  );
}

/** A pasted operator token (of the contract above) or the service's admin token. */
function TokenSignIn({
  token,
  onToken,
  busy,
  onSubmit,
}: {
  token: string;
  onToken: (token: string) => void;
  busy: boolean;
  onSubmit: (event: Event) => void;
}) {
  return (
    <section aria-labelledby="token-title">
      <h2 id="token-title">Token</h2>
      <p class="muted">
        An operator token (<code>plt_…</code>) of the contract above; or the service's admin token, which opens the admin screens without a
        contract.
      </p>
      <form onSubmit={onSubmit}>
        <label>
          Token
          <input
            name="token"
            type="password"
            class="mono"
            value={token}
            onInput={(e) => onToken(e.currentTarget.value)}
            autoComplete="off"
          />
        </label>
        <button type="submit" disabled={busy || token.trim() === ""}>
          Sign in with token
        </button>
      </form>
    </section>
  );
}

/** A session from a pasted operator token or API key, once the service has answered a read with it. */
async function operatorTokenSession(address: string, token: string, parameters: Parameters): Promise<StoredSession> {
  // The token's own expiry is not visible to the page: assume the longest a token lives.
  const expiresAt = new Date(Date.now() + parameters.BEARER_TOKEN_TTL_SECONDS * 1000).toISOString();
  const client = new PointsClient({ baseUrl: location.origin, contractAddress: address, operator: { bearerToken: token, expiresAt } });
  try {
    await client.getBalances();
  } catch (error) {
    const refused = refusedTokenText(error, address);
    throw refused === null ? error : new Error(refused);
  }
  return { contractAddress: address, bearerToken: token, expiresAt, via: "token", operatorAddress: null };
}
