import { useEffect, useRef, useState } from "preact/hooks";
import { throughText, type PointsClient } from "../../../client/index.js";
import { checksumAddress, parseAddress } from "../../../domain/address.js";
import { addressMessage } from "../../../domain/messages.js";
import { useConsole, useLoad, useThrottled } from "../context.js";
import { displayPoints } from "../lib/amounts.js";
import { WINDOW_CHOICES, boardDays, windowText, type BoardDays, type CustomDays, type WindowChoice } from "../lib/board-window.js";
import { Pager, useCursorPages } from "../pager.js";

/** Entries per page: a screenful that still reads as a list at 390 px. */
const PAGE_SIZE = 50;

type BoardPage = Awaited<ReturnType<PointsClient["leaderboardPage"]>>;
type BoardRank = Awaited<ReturnType<PointsClient["rank"]>>;

/** The live feed's version, changing at most this often: a busy ledger does not reload the board on every event. */
const BOARD_RELOAD_MS = 1000;

/** A window as a dependency: a refused custom pick (null) differs from all time ({}), so leaving one reloads. */
function windowKey(days: BoardDays | null): string {
  return days === null ? "refused" : `${days.from ?? ""}/${days.to ?? ""}`;
}

function useBoardVersion(): number {
  return useThrottled(useConsole().ledgerVersion, BOARD_RELOAD_MS);
}

/** How often, and how many times, a board answered as of a time before the live feed's last change is read again. */
const THROUGH_RETRY_MS = 400;
const THROUGH_RETRIES = 8;

/**
 * Boards are kept just after the finalization (their `through`), so a reload on a batch.finalized
 * event may come before the batch is counted: while the answer's through is earlier than the
 * moment the feed changed, read again shortly, a bounded number of times.
 */
function useThroughCatchUp(board: { data: { through: string } | null; reload(): void }, version: number): void {
  const changed = useRef({ version, atMs: Date.now(), retries: 0 });
  if (changed.current.version !== version) changed.current = { version, atMs: Date.now(), retries: 0 };
  const through = board.data?.through;
  useEffect(() => {
    const state = changed.current;
    if (through === undefined || Date.parse(through) >= state.atMs || state.retries >= THROUGH_RETRIES) return;
    const timer = setTimeout(() => {
      state.retries++;
      board.reload();
    }, THROUGH_RETRY_MS);
    return () => clearTimeout(timer);
  }, [through, version]);
}

/**
 * Where this contract's recipients stand: the addresses its finalized transfers reached, ranked by
 * the points it sent them, for one point type over a window of whole UTC days. It reloads with the
 * live feed, so a batch shows here as it finalizes.
 */
export function Leaderboard() {
  const { client, parameters } = useConsole();
  const version = useBoardVersion();
  const [pointType, setPointType] = useState(parameters.POINT_TYPES[0] ?? "");
  const [choice, setChoice] = useState<WindowChoice>("all");
  const [custom, setCustom] = useState<CustomDays>({ from: "", through: "" });
  const pages = useCursorPages();
  const cursor = pages.cursor;
  // Recomputed on every render: a page left open past midnight UTC moves "Today" with the clock.
  const picked = boardDays(choice, Date.now(), custom);
  const days: BoardDays | null = picked.ok ? picked.days : null;
  const board = useLoad(
    async () => (days === null ? null : client.leaderboardPage({ pointType, ...days, limit: PAGE_SIZE, cursor })),
    [pointType, windowKey(days), cursor, version],
  );
  useThroughCatchUp(board, version);
  const change = (next: () => void) => {
    next();
    pages.reset();
  };
  return (
    <section aria-labelledby="leaderboard-title">
      <h1 id="leaderboard-title">Leaderboard</h1>
      <p class="muted">
        The addresses this contract's finalized transfers reached, ranked by the points it sent them. Equal points share a rank. Windows are
        whole UTC days; a batch counts here within about a second of finalizing, and the board says up to when it counts them ("as of").
      </p>
      <form class="filters" onSubmit={(e) => e.preventDefault()} aria-label="Board">
        <label>
          Point type
          <select name="pointType" value={pointType} onChange={(e) => change(() => setPointType(e.currentTarget.value))}>
            {parameters.POINT_TYPES.map((t) => (
              <option value={t}>{t}</option>
            ))}
          </select>
        </label>
        <label>
          Window
          <select name="window" value={choice} onChange={(e) => change(() => setChoice(e.currentTarget.value as WindowChoice))}>
            {WINDOW_CHOICES.map((w) => (
              <option value={w.value}>{w.text}</option>
            ))}
          </select>
        </label>
        {choice === "custom" && (
          <>
            <label>
              First day (UTC)
              <input
                type="date"
                name="from"
                value={custom.from}
                onChange={(e) => change(() => setCustom({ ...custom, from: e.currentTarget.value }))}
              />
            </label>
            <label>
              Last day (UTC)
              <input
                type="date"
                name="through"
                value={custom.through}
                onChange={(e) => change(() => setCustom({ ...custom, through: e.currentTarget.value }))}
              />
            </label>
          </>
        )}
      </form>
      {!picked.ok && (
        <p role="alert" class="error">
          {picked.message}
        </p>
      )}
      {board.error && (
        <p role="alert" class="error">
          {board.error}
        </p>
      )}
      {days !== null && <RankSearch pointType={pointType} days={days} />}
      {board.data && <Board page={board.data} pages={pages} />}
      {board.data === null && board.loading && days !== null && <p class="muted">Loading…</p>}
    </section>
  );
}

function Board({ page, pages }: { page: BoardPage; pages: ReturnType<typeof useCursorPages> }) {
  const first = page.entries[0];
  return (
    <>
      <p data-testid="leaderboard-summary">
        <strong data-field="participants">{page.participants.toLocaleString("en")}</strong>{" "}
        {page.participants === 1 ? "participant" : "participants"} in {page.pointType}, {windowText(page.from, page.to)}
        {first && page.entries.length > 0 && pages.hasPrevious ? ` · this page from rank ${first.rank}` : ""}.{" "}
        <span class="muted" data-field="through" title={`every batch finalized at or before ${page.through} is counted`}>
          {throughText(page.through)}
        </span>
      </p>
      {page.entries.length === 0 ? (
        <p class="muted" data-testid="leaderboard-empty">
          {pages.hasPrevious ? "No more entries." : "No finalized transfers in this window."}
        </p>
      ) : (
        <div class="table-wrap board">
          <table data-testid="leaderboard">
            <thead>
              <tr>
                <th scope="col" class="num">
                  Rank
                </th>
                <th scope="col">Address</th>
                <th scope="col" class="num">
                  Points
                </th>
              </tr>
            </thead>
            <tbody>
              {page.entries.map((entry) => (
                <tr data-address={entry.address} data-rank={entry.rank}>
                  <td data-label="Rank" class="num rank" data-field="rank">
                    {entry.rank}
                  </td>
                  <td data-label="Address" class="mono" data-field="address">
                    {entry.address}
                  </td>
                  <td data-label="Points" class="num amount" data-field="points">
                    {displayPoints(entry.points)}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {(pages.hasPrevious || page.cursor !== null) && <Pager pages={pages} nextCursor={page.cursor} noun="page" />}
    </>
  );
}

/** One address's place on the board shown above (same point type and window). */
function RankSearch({ pointType, days }: { pointType: string; days: BoardDays }) {
  const { client } = useConsole();
  const version = useBoardVersion();
  const [draft, setDraft] = useState("");
  const [address, setAddress] = useState<string | null>(null);
  const [inputError, setInputError] = useState<string | null>(null);
  const rank = useLoad(
    async () => (address === null ? null : client.rank(address, { pointType, ...days })),
    [address, pointType, windowKey(days), version],
  );
  useThroughCatchUp(rank, version);
  const find = (event: Event) => {
    event.preventDefault();
    const key = parseAddress(draft.trim());
    if (key === null) {
      setInputError(`Address: ${addressMessage(draft.trim())}`);
      return;
    }
    setInputError(null);
    setAddress(checksumAddress(key));
  };
  return (
    <>
      <form class="wide-field" onSubmit={find} aria-label="Find an address">
        <label>
          Find an address on this board
          <input name="rankAddress" class="mono" value={draft} onInput={(e) => setDraft(e.currentTarget.value)} placeholder="0x…" />
        </label>
        <button type="submit">Find rank</button>
      </form>
      {(inputError ?? rank.error) && (
        <p role="alert" class="error">
          {inputError ?? rank.error}
        </p>
      )}
      {inputError === null && rank.data && <RankLine rank={rank.data} />}
    </>
  );
}

function RankLine({ rank }: { rank: BoardRank }) {
  return (
    <p class="notice" data-testid="rank-result" data-rank={rank.rank ?? "none"}>
      <span class="mono">{rank.address}</span>{" "}
      {rank.rank === null ? (
        <>
          is <strong>not ranked</strong> in this window: no finalized transfer from this contract reached it.
        </>
      ) : (
        <>
          is <strong>rank {rank.rank}</strong> of {rank.participants.toLocaleString("en")}, with{" "}
          <span class="amount">{displayPoints(rank.points)}</span> points.
        </>
      )}{" "}
      <span class="muted" data-field="through">
        ({throughText(rank.through)})
      </span>
    </p>
  );
}
