import { useState } from "preact/hooks";
import { encodeFunctionData, parseAbi } from "viem";
import type { SnapshotProof } from "../../../client/index.js";
import { checksumAddress, parseAddress } from "../../../domain/address.js";
import { addressMessage } from "../../../domain/messages.js";
import { CopyButton } from "../copy-button.js";
import { loadDistributor, rememberDistributor } from "../lib/distributors.js";

/** PointsDistributor's claim (contracts/PointsDistributor.sol; docs/onchain.md): anyone may send it, the tokens go to `account`. */
const CLAIM_ABI = parseAbi(["function claim(address account, uint256 cumulativeAmount, bytes32[] proof)"]);

/** The distributor of one snapshot as this browser remembers it (lib/distributors.ts); its detail is keyed by snapshot, so one id per mount. */
export function useDistributor(snapshotId: string): [string, (address: string) => void] {
  const [distributor, setDistributor] = useState(() => loadDistributor(snapshotId));
  return [
    distributor,
    (address: string) => {
      rememberDistributor(snapshotId, address);
      setDistributor(address);
    },
  ];
}

/** Where the snapshot's root was published: entered once, checked as an address, remembered for the snapshot. */
export function DistributorField({ distributor, onChange }: { distributor: string; onChange(address: string): void }) {
  const [draft, setDraft] = useState(distributor);
  const [error, setError] = useState<string | null>(null);
  const save = (event: Event) => {
    event.preventDefault();
    const text = draft.trim();
    if (text === "") {
      setError(null);
      onChange("");
      return;
    }
    const key = parseAddress(text);
    if (key === null) {
      setError(`Distributor: ${addressMessage(text)}`);
      return;
    }
    setError(null);
    setDraft(checksumAddress(key));
    onChange(checksumAddress(key));
  };
  return (
    <>
      <h3>Distributor</h3>
      <p class="muted">
        The PointsDistributor this snapshot's root was published to (<code>points-ledger payout publish --distributor</code>,
        docs/onchain.md). Remembered in this browser for this snapshot; with it, a proof below shows the claim to send.
      </p>
      <form class="inline-form" onSubmit={save}>
        <label>
          Distributor address
          <input name="distributor" class="mono" value={draft} onInput={(e) => setDraft(e.currentTarget.value)} placeholder="0x…" />
        </label>
        <button type="submit">Save distributor</button>
      </form>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
    </>
  );
}

/**
 * How a recipient claims a proof: the distributor's `claim(account, cumulativeAmount, proof)`
 * with its arguments (a block explorer's "write contract" form takes them as shown) and the same
 * call as calldata (a wallet's or a multisig's raw transaction, value 0). The amount stays the
 * decimal integer string the service sent, made a bigint only to encode it: never a float.
 */
export function ClaimCall({ distributor, proof }: { distributor: string; proof: SnapshotProof }) {
  const account = checksumAddress(proof.address.toLowerCase());
  const args = JSON.stringify([account, proof.amount, proof.proof]);
  const data = encodeFunctionData({ abi: CLAIM_ABI, functionName: "claim", args: [account, BigInt(proof.amount), proof.proof] });
  return (
    <div class="claim-call" data-testid="claim-call">
      <h3>How this address claims</h3>
      <p>
        Call <code>claim(account, cumulativeAmount, proof)</code> on the distributor <code class="mono-wrap">{distributor}</code>. Anyone
        may send it; the tokens always go to the account, and a claim pays what the account gained since its own last claim.
      </p>
      <dl>
        <dt>Arguments</dt>
        <dd>
          <code class="mono mono-wrap" data-testid="claim-args">
            {args}
          </code>{" "}
          <CopyButton text={args} label="Copy arguments" what="the arguments" />
        </dd>
        <dt>Calldata (to the distributor, value 0)</dt>
        <dd>
          <code class="mono mono-wrap" data-testid="claim-calldata">
            {data}
          </code>{" "}
          <CopyButton text={data} label="Copy calldata" what="the calldata" />
        </dd>
      </dl>
    </div>
  );
}
