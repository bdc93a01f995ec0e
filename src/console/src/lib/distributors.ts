/**
 * The distributor each snapshot's root was published to (`points-ledger payout publish
 * --distributor`), as entered in this browser: the service does not know where a root went, so
 * the console remembers it in localStorage (addresses only, no secret), kept across tabs.
 */

const DISTRIBUTORS_KEY = "points-ledger.console.distributors";
/** The newest this many snapshots' distributors are kept. */
const DISTRIBUTORS_KEPT = 50;

function load(): [string, string][] {
  try {
    const parsed: unknown = JSON.parse(localStorage.getItem(DISTRIBUTORS_KEY) ?? "[]");
    return Array.isArray(parsed) ? (parsed as unknown[]).filter((e): e is [string, string] => Array.isArray(e) && e.length === 2) : [];
  } catch {
    return [];
  }
}

export function loadDistributor(snapshotId: string): string {
  return load().find(([id]) => id === snapshotId)?.[1] ?? "";
}

/** Remembers (or, with "", forgets) the distributor of `snapshotId`. */
export function rememberDistributor(snapshotId: string, address: string): void {
  const rest = load().filter(([id]) => id !== snapshotId);
  const list = address === "" ? rest : [[snapshotId, address] as [string, string], ...rest].slice(0, DISTRIBUTORS_KEPT);
  localStorage.setItem(DISTRIBUTORS_KEY, JSON.stringify(list));
}
