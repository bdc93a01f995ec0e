import { useRef, useState } from "preact/hooks";
import {
  BATCH_STATUSES,
  PublicClient,
  type PointsAdminClient,
  type PointsClient,
  type Snapshot,
  type SnapshotMeasure,
  type SnapshotProof,
  type TextDownload,
} from "../../../client/index.js";
import { POINT_DECIMALS } from "../../../domain/points.js";
import { shortTime, useConsole, useFail } from "../context.js";
import { displayPoints } from "../lib/amounts.js";
import { blobOf, byteText, saveBlob } from "../lib/download.js";
import { loadKnownSnapshots, rememberSnapshot, type KnownSnapshot } from "../lib/known-snapshots.js";
import { loadAdminToken } from "../lib/session-store.js";
import { adminClientOf } from "./admin.js";
import { ClaimCall, DistributorField, useDistributor } from "./claim-parts.js";

/** The API's bounds of `decimals` (docs/api.md, Snapshots): at least the points' own decimals, so every amount is whole. */
const SNAPSHOT_DECIMALS_MIN = POINT_DECIMALS;
const SNAPSHOT_DECIMALS_MAX = 36;
const SNAPSHOT_DECIMALS_DEFAULT = 18;
const MEASURES: { value: SnapshotMeasure; text: string }[] = [
  { value: "available", text: "what each address holds now" },
  { value: "receivedCumulative", text: "all each address ever received" },
];

export interface PayoutsProps {
  /** Reads snapshots: the admin client, or a client without a token (works when the service has PUBLIC_READS). */
  reader: PublicClient;
  /** Takes snapshots and exports balances.csv; null without the admin token. */
  admin: PointsAdminClient | null;
  /** Exports the contract's transfers.csv; null in the admin console (no operator session). */
  operator: PointsClient | null;
  pointTypes: string[];
}

/** The operator console's Payouts screen: the admin parts appear when this tab holds the admin token (Admin screen). */
export function Payouts() {
  const { client, parameters } = useConsole();
  const [admin] = useState(() => adminClientOf(loadAdminToken()));
  const [reader] = useState(() => admin ?? new PublicClient({ baseUrl: location.origin }));
  return <PayoutScreens reader={reader} admin={admin} operator={client} pointTypes={parameters.POINT_TYPES} />;
}

export function PayoutScreens(props: PayoutsProps) {
  return (
    <section aria-labelledby="payouts-title">
      <h1 id="payouts-title">Payouts</h1>
      <Snapshots {...props} />
      <Exports {...props} />
    </section>
  );
}

function Snapshots({ reader, admin, pointTypes }: PayoutsProps) {
  const fail = useFail();
  const [known, setKnown] = useState<KnownSnapshot[]>(loadKnownSnapshots);
  const [shown, setShown] = useState<Snapshot | null>(null);
  const [openId, setOpenId] = useState("");
  const [error, setError] = useState<string | null>(null);
  const show = (snapshot: Snapshot) => {
    setKnown(rememberSnapshot(snapshot));
    setShown(snapshot);
    setError(null);
  };
  const open = (id: string) => {
    setError(null);
    reader.getSnapshot(id).then(show, (failure: unknown) => setError(fail(failure)));
  };
  return (
    <>
      <h2>Snapshots</h2>
      {admin === null ? (
        <p class="muted">
          Taking a snapshot needs the admin token (Admin screen). Reading one needs it too, unless the service has PUBLIC_READS.
        </p>
      ) : (
        <>
          <h3>Take a snapshot</h3>
          <TakeSnapshot admin={admin} pointTypes={pointTypes} onTaken={show} />
        </>
      )}
      <h3>Open a snapshot</h3>
      <form
        class="inline-form"
        onSubmit={(e) => {
          e.preventDefault();
          if (openId.trim() !== "") open(openId.trim());
        }}
      >
        <label>
          Snapshot id
          <input name="openSnapshotId" class="mono" value={openId} onInput={(e) => setOpenId(e.currentTarget.value)} autoComplete="off" />
        </label>
        <button type="submit" disabled={openId.trim() === ""}>
          Open snapshot
        </button>
      </form>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {known.length > 0 && (
        <>
          <p class="muted">Taken or opened in this browser (the API has no list of snapshots):</p>
          <ul class="events" data-testid="known-snapshots">
            {known.map((s) => (
              <li data-snapshot-id={s.id}>
                <button type="button" class="link" onClick={() => open(s.id)}>
                  <span class="mono">{s.id}</span>
                </button>{" "}
                {s.pointType} · {shortTime(s.takenAt)}
              </li>
            ))}
          </ul>
        </>
      )}
      {shown && <SnapshotDetail key={shown.id} snapshot={shown} reader={reader} />}
    </>
  );
}

function newSnapshotId(): string {
  const stamp = new Date().toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
  return `snapshot-${stamp}`;
}

function TakeSnapshot(props: { admin: PointsAdminClient; pointTypes: string[]; onTaken(snapshot: Snapshot): void }) {
  const fail = useFail();
  const dialog = useRef<HTMLDialogElement>(null);
  const [id, setId] = useState(newSnapshotId);
  const [pointType, setPointType] = useState(props.pointTypes[0] ?? "");
  const [measure, setMeasure] = useState<SnapshotMeasure>("available");
  const [decimals, setDecimals] = useState(String(SNAPSHOT_DECIMALS_DEFAULT));
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const decimalsValue = /^\d{1,2}$/.test(decimals) ? Number(decimals) : NaN;
  const decimalsOk = decimalsValue >= SNAPSHOT_DECIMALS_MIN && decimalsValue <= SNAPSHOT_DECIMALS_MAX;
  const take = async () => {
    setBusy(true);
    setError(null);
    try {
      const taken = await props.admin.takeSnapshot(id.trim(), { pointType, measure, decimals: decimalsValue });
      dialog.current?.close();
      props.onTaken(taken.snapshot);
      setId(newSnapshotId());
    } catch (failure) {
      setError(fail(failure));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="filters" onSubmit={(e) => (e.preventDefault(), setError(null), dialog.current?.showModal())}>
      <label>
        New snapshot id
        <input name="snapshotId" class="mono" value={id} onInput={(e) => setId(e.currentTarget.value)} autoComplete="off" />
      </label>
      <label>
        Point type
        <select name="snapshotPointType" value={pointType} onChange={(e) => setPointType(e.currentTarget.value)}>
          {props.pointTypes.map((t) => (
            <option value={t}>{t}</option>
          ))}
        </select>
      </label>
      <label>
        Measure
        <select name="measure" value={measure} onChange={(e) => setMeasure(e.currentTarget.value as SnapshotMeasure)}>
          {MEASURES.map((m) => (
            <option value={m.value}>{m.value}</option>
          ))}
        </select>
      </label>
      <label>
        Token decimals ({SNAPSHOT_DECIMALS_MIN}–{SNAPSHOT_DECIMALS_MAX})
        <input name="decimals" inputMode="numeric" value={decimals} onInput={(e) => setDecimals(e.currentTarget.value)} />
      </label>
      <button type="submit" disabled={id.trim() === "" || !decimalsOk}>
        Take snapshot…
      </button>
      <dialog ref={dialog} aria-labelledby="take-title">
        <h2 id="take-title">Take snapshot {id.trim()}?</h2>
        <dl class="facts" data-testid="take-confirmation">
          <dt>Point type</dt>
          <dd>{pointType}</dd>
          <dt>Measure</dt>
          <dd>
            {measure} ({MEASURES.find((m) => m.value === measure)?.text})
          </dd>
          <dt>Decimals</dt>
          <dd>
            {decimals} (each leaf's amount is points × 10^{decimals})
          </dd>
        </dl>
        <p>Every address's balance is frozen into a Merkle tree now. The id cannot be used again for other values.</p>
        {error && (
          <p role="alert" class="error">
            {error}
          </p>
        )}
        <div class="row">
          <button type="button" class="primary" disabled={busy} onClick={take}>
            Yes, take the snapshot
          </button>
          <button type="button" onClick={() => dialog.current?.close()} autofocus>
            Back
          </button>
        </div>
      </dialog>
    </form>
  );
}

function SnapshotDetail({ snapshot, reader }: { snapshot: Snapshot; reader: PublicClient }) {
  const [distributor, setDistributor] = useDistributor(snapshot.id);
  return (
    <article class="card snapshot" data-testid="snapshot" data-snapshot-id={snapshot.id}>
      <h2 class="mono-wrap">Snapshot {snapshot.id}</h2>
      <dl>
        <dt>Point type</dt>
        <dd>{snapshot.pointType}</dd>
        <dt>Measure</dt>
        <dd>{snapshot.measure}</dd>
        <dt>Decimals</dt>
        <dd>{snapshot.decimals}</dd>
        <dt>Taken</dt>
        <dd>{shortTime(snapshot.takenAt)}</dd>
        <dt>Root</dt>
        <dd class="mono" data-testid="snapshot-root">
          {snapshot.root}
        </dd>
        <dt>Addresses</dt>
        <dd data-testid="snapshot-leaf-count">{snapshot.leafCount.toLocaleString("en-US")}</dd>
        <dt>Total</dt>
        <dd data-testid="snapshot-total">
          {displayPoints(snapshot.total)} {snapshot.pointType}
        </dd>
      </dl>
      <DownloadButton
        label="Download tree (JSON)"
        filename={`snapshot-${snapshot.id}-tree.json`}
        type="application/json"
        open={(signal) => reader.downloadSnapshotTree(snapshot.id, { signal })}
      />
      <DistributorField distributor={distributor} onChange={setDistributor} />
      <ProofLookup snapshot={snapshot} reader={reader} distributor={distributor} />
    </article>
  );
}

function ProofLookup({ snapshot, reader, distributor }: { snapshot: Snapshot; reader: PublicClient; distributor: string }) {
  const fail = useFail();
  const [address, setAddress] = useState("");
  const [proof, setProof] = useState<SnapshotProof | null>(null);
  const [error, setError] = useState<string | null>(null);
  const look = (event: Event) => {
    event.preventDefault();
    setError(null);
    setProof(null);
    reader.getProof(snapshot.id, address.trim()).then(setProof, (failure: unknown) => setError(fail(failure)));
  };
  return (
    <>
      <h3>Proof of an address</h3>
      <form class="inline-form" onSubmit={look}>
        <label>
          Address
          <input name="proofAddress" class="mono" value={address} onInput={(e) => setAddress(e.currentTarget.value)} placeholder="0x…" />
        </label>
        <button type="submit" disabled={address.trim() === ""}>
          Look up proof
        </button>
      </form>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {proof && (
        <dl data-testid="proof">
          <dt>Address</dt>
          <dd class="mono">{proof.address}</dd>
          <dt>Points</dt>
          <dd data-testid="proof-points">{displayPoints(proof.points)}</dd>
          <dt>Amount (× 10^{snapshot.decimals})</dt>
          <dd class="mono" data-testid="proof-amount">
            {proof.amount}
          </dd>
          <dt>Proof</dt>
          <dd>
            <ol class="proof mono" data-testid="proof-hashes">
              {proof.proof.map((hash) => (
                <li>{hash}</li>
              ))}
            </ol>
          </dd>
        </dl>
      )}
      {proof && distributor !== "" && <ClaimCall distributor={distributor} proof={proof} />}
    </>
  );
}

function Exports({ admin, operator, pointTypes }: PayoutsProps) {
  return (
    <>
      <h2>Exports</h2>
      {operator && <TransfersExport operator={operator} pointTypes={pointTypes} />}
      {admin ? (
        <BalancesExport admin={admin} pointTypes={pointTypes} />
      ) : (
        <p class="muted">balances.csv (every address) needs the admin token (Admin screen).</p>
      )}
    </>
  );
}

function TransfersExport({ operator, pointTypes }: { operator: PointsClient; pointTypes: string[] }) {
  const [toAddress, setToAddress] = useState("");
  const [pointType, setPointType] = useState("");
  const [status, setStatus] = useState("");
  const filters = {
    toAddress: toAddress.trim() || undefined,
    pointType: pointType || undefined,
    status: (status || undefined) as (typeof BATCH_STATUSES)[number] | undefined,
  };
  return (
    <section aria-labelledby="transfers-export-title">
      <h3 id="transfers-export-title">This contract's transfers (transfers.csv)</h3>
      <div class="filters">
        <label class="address-field">
          Recipient (optional)
          <input
            name="exportToAddress"
            class="mono"
            value={toAddress}
            onInput={(e) => setToAddress(e.currentTarget.value)}
            placeholder="0x…"
          />
        </label>
        <label>
          Point type
          <select name="exportPointType" value={pointType} onChange={(e) => setPointType(e.currentTarget.value)}>
            <option value="">any</option>
            {pointTypes.map((t) => (
              <option value={t}>{t}</option>
            ))}
          </select>
        </label>
        <label>
          Status
          <select name="exportStatus" value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
            <option value="">any</option>
            {BATCH_STATUSES.map((s) => (
              <option value={s}>{s}</option>
            ))}
          </select>
        </label>
      </div>
      <DownloadButton
        label="Download transfers.csv"
        filename={`transfers-${operator.contractAddress}.csv`}
        type="text/csv"
        open={(signal) => operator.exportTransfersCsv(filters, { signal })}
      />
    </section>
  );
}

function BalancesExport({ admin, pointTypes }: { admin: PointsAdminClient; pointTypes: string[] }) {
  const [pointType, setPointType] = useState("");
  return (
    <section aria-labelledby="balances-export-title">
      <h3 id="balances-export-title">Balances of every address (balances.csv)</h3>
      <div class="filters">
        <label>
          Point type
          <select name="balancesPointType" value={pointType} onChange={(e) => setPointType(e.currentTarget.value)}>
            <option value="">every type</option>
            {pointTypes.map((t) => (
              <option value={t}>{t}</option>
            ))}
          </select>
        </label>
      </div>
      <DownloadButton
        label="Download balances.csv"
        filename="balances.csv"
        type="text/csv"
        open={(signal) => admin.exportBalancesCsv({ pointType: pointType || undefined }, { signal })}
      />
    </section>
  );
}

/** A button that streams one export into a file, with its progress and a way to stop it. */
function DownloadButton(props: { label: string; filename: string; type: string; open(signal: AbortSignal): Promise<TextDownload> }) {
  const fail = useFail();
  const [progress, setProgress] = useState<{ bytes: number; done: boolean } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const abort = useRef<AbortController | null>(null);
  const start = async () => {
    const controller = new AbortController();
    abort.current = controller;
    setError(null);
    setProgress({ bytes: 0, done: false });
    try {
      const download = await props.open(controller.signal);
      const blob = await blobOf(download, props.type, (bytes) => setProgress({ bytes, done: false }));
      saveBlob(blob, props.filename);
      setProgress({ bytes: blob.size, done: true });
    } catch (failure) {
      setProgress(null);
      setError(controller.signal.aborted ? "Download stopped." : fail(failure));
    } finally {
      abort.current = null;
    }
  };
  const running = progress !== null && !progress.done;
  return (
    <div class="download">
      <div class="row">
        <button type="button" disabled={running} onClick={() => void start()}>
          {props.label}
        </button>
        {running && (
          <button type="button" onClick={() => abort.current?.abort()}>
            Stop
          </button>
        )}
      </div>
      {progress && (
        <p role="status" class="muted mono-wrap" data-testid="download-progress">
          {progress.done ? `Saved ${props.filename} (${byteText(progress.bytes)}).` : `Downloading… ${byteText(progress.bytes)}`}
        </p>
      )}
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
    </div>
  );
}
