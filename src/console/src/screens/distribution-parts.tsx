import type { SubmitAllSummary } from "../../../client/index.js";
import { displayPoints } from "../lib/amounts.js";
import type { PendingRun } from "../lib/runs.js";
import type { DistributionPreview } from "../lib/upload.js";

/**
 * The parts of the New distribution screen (./new-distribution.tsx), each drawn from what it is
 * given: the interrupted upload, the file's preview, the upload's progress and its summary.
 */

/** Bad lines listed on the page; the count always covers all of them. */
const BAD_LINES_SHOWN = 500;

/** An upload saved before it finished (lib/runs.ts): resume it (only what the service lacks is sent) or drop it. */
export function ResumeNotice({ run, onResume, onDiscard }: { run: PendingRun; onResume: () => void; onDiscard: () => void }) {
  return (
    <div class="notice" role="status" data-testid="resume">
      An upload was interrupted: {run.fileName} ({run.pointType}, run {run.runId}, started {run.startedAt}).{" "}
      <button type="button" onClick={onResume}>
        Resume
      </button>{" "}
      <button type="button" onClick={onDiscard}>
        Discard
      </button>
    </div>
  );
}

/** What the file would send: its totals against the contract's available points, and every bad line (the first BAD_LINES_SHOWN listed). */
export function Preview({ preview }: { preview: DistributionPreview }) {
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
      {preview.badLines.length > 0 && <BadLines badLines={preview.badLines} />}
    </div>
  );
}

function BadLines({ badLines }: { badLines: DistributionPreview["badLines"] }) {
  return (
    <>
      <h2 data-testid="bad-count">
        {badLines.length} bad line{badLines.length === 1 ? "" : "s"}: fix {badLines.length === 1 ? "it" : "them"} and upload again
      </h2>
      <ul class="bad-lines" data-testid="bad-lines">
        {badLines.slice(0, BAD_LINES_SHOWN).map((bad) => (
          <li data-line={bad.line}>
            Line {bad.line}: {bad.reason}
          </li>
        ))}
      </ul>
      {badLines.length > BAD_LINES_SHOWN && <p>… and {badLines.length - BAD_LINES_SHOWN} more.</p>}
    </>
  );
}

/** Transfers sent so far, as a percentage. */
export function UploadProgress({ progress }: { progress: { done: number; total: number } }) {
  const percent = Math.floor((progress.done * 100) / Math.max(1, progress.total));
  return (
    <div class="progress">
      <progress max={100} value={percent} aria-label="Upload progress" />
      <span data-testid="progress-text">{percent} %</span>
    </div>
  );
}

/** What a finished upload sent, each batch linked to its page. */
export function SubmitSummary({ summary }: { summary: SubmitAllSummary }) {
  return (
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
  );
}
