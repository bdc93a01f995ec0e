import { useEffect, useState } from "preact/hooks";
import type { Parameters, SubmitAllSummary } from "../../../client/index.js";
import { useConsole } from "../context.js";
import { clearPendingRun, loadPendingRun, savePendingRun, type PendingRun } from "../lib/runs.js";
import { newRunId, previewDistribution, type DistributionPreview } from "../lib/upload.js";
import { Preview, ResumeNotice, SubmitSummary, UploadProgress } from "./distribution-parts.js";

/**
 * New distribution: a transfers file previewed against the contract's available points, then sent
 * in batches (client.submitAll), the run saved first so an interrupted upload can be resumed.
 * The parts it draws are ./distribution-parts.tsx.
 */

interface Draft {
  fileName: string;
  text: string;
  runId: string;
}

type SetError = (error: string | null) => void;

export function NewDistribution() {
  const { parameters, session } = useConsole();
  const [pointType, setPointType] = useState(parameters.POINT_TYPES[0] ?? "");
  const [seconds, setSeconds] = useState(String(parameters.DEFAULT_FINALIZE_SECONDS));
  const [draft, setDraft] = useState<Draft | null>(null);
  const [error, setError] = useState<string | null>(null);
  const preview = useDistributionPreview(draft, pointType, setError);
  const upload = useUpload(setError, () => setDraft(null));
  const secondsProblem = finalizeSecondsProblem(seconds, parameters);

  const submit = () => {
    if (draft === null || preview === null || secondsProblem !== null) return;
    void upload.send({
      runId: draft.runId,
      contractAddress: session.contractAddress,
      pointType,
      secondsToFinalize: Number(seconds),
      fileName: draft.fileName,
      text: draft.text,
      startedAt: new Date().toISOString(),
    });
  };

  const sending = upload.progress !== null && upload.summary === null && error === null;
  const pendingRun = upload.pendingRun;
  return (
    <section aria-labelledby="new-title">
      <h1 id="new-title">New distribution</h1>
      {pendingRun && !sending && upload.summary === null && (
        <ResumeNotice run={pendingRun} onResume={() => void upload.send(pendingRun)} onDiscard={upload.discard} />
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
              upload.reset();
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
      {preview && upload.summary === null && <Preview preview={preview} />}
      {preview && upload.summary === null && (
        <button
          type="button"
          class="primary"
          disabled={sending || preview.badLines.length > 0 || preview.overAvailable || secondsProblem !== null}
          onClick={submit}
        >
          Submit {preview.batches.length} batch{preview.batches.length === 1 ? "" : "es"}
        </button>
      )}
      {upload.progress && <UploadProgress progress={upload.progress} />}
      {upload.summary && <SubmitSummary summary={upload.summary} />}
    </section>
  );
}

/** Why the seconds to finalize cannot be sent (a whole number within the service's bounds), or null. */
function finalizeSecondsProblem(seconds: string, parameters: Parameters): string | null {
  const value = /^[0-9]{1,9}$/.test(seconds) ? Number(seconds) : NaN;
  const { MINIMUM_FINALIZE_SECONDS: minimum, DEFAULT_FINALIZE_SECONDS: maximum } = parameters;
  return Number.isNaN(value) || value < minimum || value > maximum ? `must be a whole number from ${minimum} to ${maximum}` : null;
}

/** The draft's preview against the contract's available points of `pointType`, read again whenever either changes. */
function useDistributionPreview(draft: Draft | null, pointType: string, setError: SetError): DistributionPreview | null {
  const { client, parameters, session, fail } = useConsole();
  const [preview, setPreview] = useState<DistributionPreview | null>(null);
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
  return preview;
}

/**
 * Sending a run: saved first (lib/runs.ts), so an interrupted upload can be resumed from the
 * contract's saved run; its progress, and its summary once every batch is stored.
 */
function useUpload(setError: SetError, onSent: () => void) {
  const { client, parameters, session, fail } = useConsole();
  const [progress, setProgress] = useState<{ done: number; total: number } | null>(null);
  const [summary, setSummary] = useState<SubmitAllSummary | null>(null);
  const [pendingRun, setPendingRun] = useState<PendingRun | null>(() => loadPendingRun(session.contractAddress));

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
      onSent();
    } catch (failure) {
      setError(`${fail(failure)}${stored ? " — the upload is saved: Resume sends only what the service does not have yet." : ""}`);
    }
  };
  const discard = () => (clearPendingRun(session.contractAddress), setPendingRun(null));
  const reset = () => (setSummary(null), setProgress(null));
  return { progress, summary, pendingRun, send, discard, reset };
}
