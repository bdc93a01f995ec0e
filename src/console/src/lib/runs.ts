/**
 * An upload being sent is remembered in localStorage until it completes, so closing the tab
 * (or a crash) loses nothing: reopening the console offers to resume it, and the resumed
 * submitAll sends only the batches the service does not have yet (deterministic batch ids).
 */

export interface PendingRun {
  runId: string;
  contractAddress: string;
  pointType: string;
  secondsToFinalize: number | undefined;
  fileName: string;
  /** The file as uploaded: re-validated on resume, so the same batches come out. */
  text: string;
  startedAt: string;
}

const KEY_PREFIX = "points-ledger.console.run.";

function keyOf(contractAddress: string): string {
  return `${KEY_PREFIX}${contractAddress.toLowerCase()}`;
}

export function loadPendingRun(contractAddress: string): PendingRun | null {
  const raw = localStorage.getItem(keyOf(contractAddress));
  if (raw === null) return null;
  try {
    return JSON.parse(raw) as PendingRun;
  } catch {
    return null;
  }
}

/** false when the browser refused to store it (full storage): the run works, but cannot resume. */
export function savePendingRun(run: PendingRun): boolean {
  try {
    localStorage.setItem(keyOf(run.contractAddress), JSON.stringify(run));
    return true;
  } catch {
    return false;
  }
}

export function clearPendingRun(contractAddress: string): void {
  localStorage.removeItem(keyOf(contractAddress));
}
