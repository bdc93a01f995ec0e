import { type ParseArgsConfig } from "node:util";
import { type LeaderboardEntry, type LeaderboardPage, throughText } from "../client/index.js";
import { parseAddress } from "../domain/address.js";
import { UsageError } from "./commands.js";
import { type ClientCommand, parse, required, wholeNumber, clientFor, reportingFailures, printJson, usage } from "./client-common.js";

/** `points-ledger leaderboard|rank`: the contract's leaderboards, through the client. */

const boardOptions = {
  "point-type": { type: "string" },
  from: { type: "string" },
  to: { type: "string" },
  json: { type: "boolean" },
} as const satisfies ParseArgsConfig["options"];

/** --point-type (required: a board is of one type) and the window; the service checks the days (400 naming from or to). */
function boardQueryOf(values: { "point-type"?: string | boolean; from?: string | boolean; to?: string | boolean }) {
  return {
    pointType: required(values["point-type"], "point-type"),
    from: typeof values.from === "string" ? values.from : undefined,
    to: typeof values.to === "string" ? values.to : undefined,
  };
}

function windowText(page: Pick<LeaderboardPage, "from" | "to">): string {
  if (page.from === null && page.to === null) return "all time";
  return `${page.from ?? "the start"} to ${page.to ?? "now"} (exclusive)`;
}

/**
 * Table lines: rank, address, points. Widths come from the board (its participants), not from a
 * page, so the pages of --all line up; points go last, left-aligned, as the other commands print them.
 */
function boardLines(entries: readonly LeaderboardEntry[], participants: number): string[] {
  const rankWidth = Math.max("rank".length, String(participants).length);
  return entries.map((entry) => `${String(entry.rank).padStart(rankWidth)}  ${entry.address}  ${entry.points}`);
}

function boardHeader(participants: number): string {
  return `${"rank".padStart(Math.max(4, String(participants).length))}  ${"address".padEnd(42)}  points`;
}

/**
 * `leaderboard`: one page (--limit entries, default 100) or, with --all, the whole board, read
 * page by page; --json prints one JSON entry per line.
 */
export const leaderboard: ClientCommand = async (argv) => {
  const { values } = parse(argv, { ...boardOptions, limit: { type: "string" }, all: { type: "boolean" } });
  if (values.help) return usage();
  const query = { ...boardQueryOf(values), limit: wholeNumber(values.limit, "limit") };
  const client = clientFor(values);
  return reportingFailures(async () => {
    const first = await client.leaderboardPage(query);
    if (!values.json) {
      console.log(
        `leaderboard of ${client.contractAddress}, ${first.pointType}, ${windowText(first)}: ${first.participants} participant(s), ${throughText(first.through)}`,
      );
      console.log(boardHeader(first.participants));
    }
    let shown = 0;
    let cursor = first.cursor;
    let page: LeaderboardPage = first;
    for (;;) {
      const lines = values.json ? page.entries.map((entry) => JSON.stringify(entry)) : boardLines(page.entries, first.participants);
      for (const line of lines) console.log(line);
      shown += page.entries.length;
      if (!values.all || cursor === null) break;
      page = await client.leaderboardPage({ ...query, cursor });
      cursor = page.cursor;
    }
    if (!values.json && cursor !== null) console.error(`${shown} shown; more with --all (or a larger --limit)`);
    return 0;
  });
};

/** `rank <address>`: the address's rank, points and the board's participants. */
export const rank: ClientCommand = async (argv) => {
  const { values, positionals } = parse(argv, boardOptions);
  if (values.help) return usage();
  if (positionals.length !== 1) throw new UsageError("usage: rank <address> --contract <addr> --point-type T [--from D] [--to D]");
  const address = positionals[0]!;
  if (parseAddress(address) === null) throw new UsageError(`${address} is not a valid address`);
  const query = boardQueryOf(values);
  const client = clientFor(values);
  return reportingFailures(async () => {
    const standing = await client.rank(address, query);
    if (values.json) return printJson(standing);
    const place = standing.rank === null ? "not ranked" : `rank ${standing.rank} of ${standing.participants}`;
    console.log(`${standing.address}: ${place}, ${standing.points} ${query.pointType}, ${throughText(standing.through)}`);
    return 0;
  });
};
