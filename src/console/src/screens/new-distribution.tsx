import { useEffect, useState } from "preact/hooks";
import type { SubmitAllSummary } from "../../../client/index.js";
import { useConsole } from "../context.js";
import { displayPoints } from "../lib/amounts.js";
import { clearPendingRun, loadPendingRun, savePendingRun, type PendingRun } from "../lib/runs.js";
import { newRunId, previewDistribution, type DistributionPreview } from "../lib/upload.js";

/** Bad lines listed on the page; the count always covers all of them. */
const BAD_LINES_SHOWN = 500;

interface Draft {
  fileName: string;
  text: string;
  runId: string;
}

export function NewDistribution() {
  const { client, parameters, session, fail } = useConsole();
  const [pointType, setPointType] = useState(parameters.POINT_TYPES[0] ?? "");
  const [seconds, setSeconds] = useState(String(parameters.DEFAULT_FINALIZE_SECONDS));
  const [draft, setDraft] = useState<Draft | null>(null);
  const [preview, setPreview] = useState<DistributionPreview | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [progress, setProgress] = useState<{ done: number; total: number } | null>(null);
  const [summary, setSummary] = useState<SubmitAllSummary | null>(null);
  const [pendingRun, setPendingRun] = useState<PendingRun | null>(() => loadPendingRun(session.contractAddress));

  useEffect(() => {
    if (draft === null) return setPreview(null);
    let current = true;
    client.getBalances().then(
      (balances) => {
        if (!current) return;
        try {
          setPreview(
            previewDistribution({
              text: draft.text,
              parameters,
              pointType,
              contractAddress: session.contractAddress,
              availablePoints: balances[pointType]?.available ?? "0",
              runId: draft.runId,
            }),
          );
          setError(null);
        } catch (failure) {
          setError(fail(failure));
        }
      },
      (failure: unknown) => current && setError(fail(failure)),
    );
    return () => {
      current = false;
    };
  }, [draft, pointType]);

  const secondsToFinalize = /^[0-9]{1,9}$/.test(seconds) ? Number(seconds) : NaN;
  const secondsProblem =
    Number.isNaN(secondsToFinalize) ||
    secondsToFinalize < parameters.MINIMUM_FINALIZE_SECONDS ||
    secondsToFinalize > parameters.DEFAULT_FINALIZE_SECONDS
      ? `must be a whole number from ${parameters.MINIMUM_FINALIZE_SECONDS} to ${parameters.DEFAULT_FINALIZE_SECONDS}`
      : null;

  const send = async (run: PendingRun) => {
    setError(null);
    setSummary(null);
    setProgress({ done: 0, total: 1 });
    const stored = savePendingRun(run);
    setPendingRun(run);
    try {
      const lines = previewDistribution({
        text: run.text,
        parameters,
        pointType: run.pointType,
        contractAddress: run.contractAddress,
        availablePoints: "0",
        runId: run.runId,
      });
      const result = await client.submitAll(lines.transfers, {
        runId: run.runId,
        pointType: run.pointType,
        secondsToFinalize: run.secondsToFinalize,
        onProgress: (p) => setProgress({ done: p.transfersDone, total: p.transfersTotal }),
      });
      setProgress({ done: 1, total: 1 });
      setSummary(result);
      clearPendingRun(run.contractAddress);
      setPendingRun(null);
      setDraft(null);
    } catch (failure) {
      setError(`${fail(failure)}${stored ? " — the upload is saved: Resume sends only what the service does not have yet." : ""}`);
    }
  };

  const submit = () => {
    if (draft === null || preview === null || secondsProblem !== null) return;
    void send({
      runId: draft.runId,
      contractAddress: session.contractAddress,
      pointType,
      secondsToFinalize,
      fileName: draft.fileName,
      text: draft.text,
      startedAt: new Date().toISOString(),
    });
  };

  const percent = progress === null ? 0 : Math.floor((progress.done * 100) / Math.max(1, progress.total));
  const sending = progress !== null && summary === null && error === null;
  return (
    <section aria-labelledby="new-title">
      <h1 id="new-title">New distribution</h1>
      {pendingRun && !sending && summary === null && (
        <div class="notice" role="status" data-testid="resume">
          An upload was interrupted: {pendingRun.fileName} ({pendingRun.pointType}, run {pendingRun.runId}, started {pendingRun.startedAt}).{" "}
          <button type="button" onClick={() => void send(pendingRun)}>
            Resume
          </button>{" "}
          <button type="button" onClick={() => (clearPendingRun(session.contractAddress), setPendingRun(null))}>
            Discard
          </button>
        </div>
      )}
      <form class="filters" onSubmit={(e) => (e.preventDefault(), submit())}>
        <label>
          Point type
          <select name="pointType" value={pointType} onChange={(e) => setPointType(e.currentTarget.value)}>
            {parameters.POINT_TYPES.map((t) => (
              <option value={t}>{t}</option>
            ))}
          </select>
        </label>
        <label>
          Seconds to finalize
          <input
            name="secondsToFinalize"
            inputMode="numeric"
            value={seconds}
            onInput={(e) => setSeconds(e.currentTarget.value)}
            aria-invalid={secondsProblem !== null}
          />
          {secondsProblem && <span class="error">{secondsProblem}</span>}
        </label>
        <label>
          Transfers file (CSV <code>address,points</code> or JSON lines)
          <input
            type="file"
            name="file"
            accept=".csv,.jsonl,.txt,text/csv,application/json"
            onChange={async (e) => {
              const file = e.currentTarget.files?.[0];
              setSummary(null);
              setProgress(null);
              setDraft(file ? { fileName: file.name, text: await file.text(), runId: newRunId() } : null);
            }}
          />
        </label>
      </form>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {preview && summary === null && <Preview preview={preview} />}
      {preview && summary === null && (
        <button
          type="button"
          class="primary"
          disabled={sending || preview.badLines.length > 0 || preview.overAvailable || secondsProblem !== null}
          onClick={submit}
        >
          Submit {preview.batches.length} batch{preview.batches.length === 1 ? "" : "es"}
        </button>
      )}
      {progress && (
        <div class="progress">
          <progress max={100} value={percent} aria-label="Upload progress" />
          <span data-testid="progress-text">{percent} %</span>
        </div>
      )}
      {summary && (
        <div role="status" class="notice" data-testid="submit-summary">
          Sent {summary.recipients} transfers (<span class="amount">{displayPoints(summary.totalPoints)}</span> {summary.pointType}) in{" "}
          {summary.batchIds.length} batches
          {summary.batchesAlreadyStored > 0 ? `, ${summary.batchesAlreadyStored} of them already stored` : ""}:{" "}
          {summary.batchIds.map((id) => (
            <a class="mono" href={`#/batches/${encodeURIComponent(id)}`}>
              {id}{" "}
            </a>
          ))}
        </div>
      )}
    </section>
  );
}

function Preview({ preview }: { preview: DistributionPreview }) {
  return (
    <div class="preview" data-testid="preview">
      <dl class="facts">
        <dt>Transfer lines</dt>
        <dd>{preview.transfers.length}</dd>
        <dt>Recipients</dt>
        <dd data-testid="recipients">{preview.recipients}</dd>
        <dt>Repeated recipients merged</dt>
        <dd>{preview.mergedDuplicates}</dd>
        <dt>Total</dt>
        <dd class="amount" data-testid="total">
          {displayPoints(preview.totalPoints)}
        </dd>
        <dt>Available</dt>
        <dd class="amount">{displayPoints(preview.availablePoints)}</dd>
        <dt>Batches</dt>
        <dd>{preview.batches.length}</dd>
      </dl>
      {preview.overAvailable && (
        <p role="alert" class="error">
          The total is more than the contract has available of this point type.
        </p>
      )}
      {preview.badLines.length > 0 && (
        <>
          <h2 data-testid="bad-count">
            {preview.badLines.length} bad line{preview.badLines.length === 1 ? "" : "s"}: fix{" "}
            {preview.badLines.length === 1 ? "it" : "them"} and upload again
          </h2>
          <ul class="bad-lines" data-testid="bad-lines">
            {preview.badLines.slice(0, BAD_LINES_SHOWN).map((bad) => (
              <li data-line={bad.line}>
                Line {bad.line}: {bad.reason}
              </li>
            ))}
          </ul>
          {preview.badLines.length > BAD_LINES_SHOWN && <p>… and {preview.badLines.length - BAD_LINES_SHOWN} more.</p>}
        </>
      )}
    </div>
  );
}
