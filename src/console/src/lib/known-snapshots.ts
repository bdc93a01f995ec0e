/**
 * The API has no route that lists snapshots (docs/api.md, Snapshots: take one by id, read one by
 * id), so the console remembers the snapshots taken or opened in this browser, in localStorage:
 * ids only, no secret, kept across tabs and restarts. Any other snapshot opens by its id.
 */

export interface KnownSnapshot {
  id: string;
  pointType: string;
  takenAt: string;
}

const KNOWN_SNAPSHOTS_KEY = "points-ledger.console.snapshots";
/** The newest this many are kept. */
const KNOWN_SNAPSHOTS_KEPT = 50;

export function loadKnownSnapshots(): KnownSnapshot[] {
  try {
    const parsed: unknown = JSON.parse(localStorage.getItem(KNOWN_SNAPSHOTS_KEY) ?? "[]");
    return Array.isArray(parsed) ? (parsed as KnownSnapshot[]).filter((s) => typeof s?.id === "string") : [];
  } catch {
    return [];
  }
}

/** Puts `snapshot` first (once) and returns the list as stored. */
export function rememberSnapshot(snapshot: KnownSnapshot): KnownSnapshot[] {
  const entry = { id: snapshot.id, pointType: snapshot.pointType, takenAt: snapshot.takenAt };
  const list = [entry, ...loadKnownSnapshots().filter((s) => s.id !== snapshot.id)].slice(0, KNOWN_SNAPSHOTS_KEPT);
  localStorage.setItem(KNOWN_SNAPSHOTS_KEY, JSON.stringify(list));
  return list;
}
