import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import ts from "typescript";

/**
 * Runs the shell examples of a Markdown page the way a reader does: every ```sh block, in the
 * page's order, pasted into ONE bash session (so a variable set by an earlier block is there in a
 * later one, and one used before it is set stops the session: `set -u`). See test/docs.test.ts
 * for the conventions the pages follow.
 */

export interface Expectation {
  status: number;
  code: string | null;
}

export interface DocBlock {
  /** 1-based line of the block's first command. */
  line: number;
  /** The fence's info string: `sh`, `ts`, `text`, `json`, or "" for a plain block. */
  lang: string;
  text: string;
  /** Why a ```sh block is not run (its `<!-- not run: … -->` marker); null when it runs. */
  notRun: string | null;
  /** A ```ts block preceded by `<!-- run -->`: a whole program, run with node in the session. */
  runTs: boolean;
  /** The `→ <status> [CODE]` line under the block. */
  expect: Expectation | null;
}

const STATUS_LINE = /^→ (\d{3})(?: ([A-Z_]+))?\s*$/;
const NOT_RUN = /^<!-- not run: (.+) -->$/;
const RUN = "<!-- run -->";

/** Every fenced block of a page, with its marker and expectation. */
export function docBlocks(markdown: string): DocBlock[] {
  const lines = markdown.split("\n");
  const blocks: DocBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const fence = /^```(\S*)\s*$/.exec(lines[i]!);
    if (!fence) continue;
    let end = i + 1;
    while (end < lines.length && lines[end] !== "```") end++;
    let previous = i - 1;
    while (previous >= 0 && lines[previous]!.trim() === "") previous--;
    let next = end + 1;
    while (next < lines.length && lines[next]!.trim() === "") next++;
    const marker = STATUS_LINE.exec(lines[next] ?? "");
    blocks.push({
      line: i + 2,
      lang: fence[1] ?? "",
      text: lines.slice(i + 1, end).join("\n"),
      notRun: NOT_RUN.exec(lines[previous] ?? "")?.[1] ?? null,
      runTs: fence[1] === "ts" && lines[previous] === RUN,
      expect: marker ? { status: Number(marker[1]), code: marker[2] ?? null } : null,
    });
    i = end;
  }
  return blocks;
}

export const runnable = (block: DocBlock): boolean => block.lang === "sh" && block.notRun === null;

/**
 * A ```ts block marked to run, as a program node runs: TypeScript's own transpiler strips the
 * types, and the module is written inside the checkout (dist/docs-examples/) so that
 * `points-ledger/client` and `viem` resolve as they do for a reader's file in the checkout.
 */
function tsProgram(block: DocBlock, index: number, repoRoot: string, dir: string): string {
  const out = join(repoRoot, "dist/docs-examples", basename(dir));
  mkdirSync(out, { recursive: true });
  const file = join(out, `block-${index}.mjs`);
  const { outputText } = ts.transpileModule(block.text, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  });
  writeFileSync(file, outputText);
  return `node ${JSON.stringify(file)}`;
}

/**
 * What the session is given besides the page's text. These stand in for the reader's machine, not
 * for a step of the page: `curl` keeps each answer's status and body for the checks (and still
 * prints the body); `npm start` starts the built server in the background on a fresh SQLite
 * database and returns once it is ready (the reader's "start it, then use another shell");
 * `npm run [-s] cli -- …` and `npm run demo` run the built CLI; `npx anvil …` starts the checkout's
 * anvil (the devDependency's binary) in the background and returns once it answers, as `npm start`
 * does. Any other npm or npx command fails: such a block must be marked not run. The page's
 * directory holds a link to the checkout's `contracts/`, which a reader's shell in the checkout sees.
 */
const PRELUDE = String.raw`
set -u -E
DOCS_BLOCK=0
__docs_failed() { printf '%s\t%s\n' "$DOCS_BLOCK" "$1" >> "$DOCS_DIR/errors"; }
trap '__docs_failed "exit status $? from: $BASH_COMMAND"' ERR
__docs_block() { DOCS_BLOCK=$1; printf '%s %s\n' "$1" "$SECONDS" >> "$DOCS_DIR/started"; }
curl() {
  local body="$DOCS_DIR/curl-body" status rc=0
  status=$(command curl --silent --show-error --max-time 8 --output "$body" --write-out '%{http_code}' "$@") || rc=$?
  printf '%s %s\n' "$DOCS_BLOCK" "$status" >> "$DOCS_DIR/statuses"
  if [ -f "$body" ]; then cp "$body" "$DOCS_DIR/body-$DOCS_BLOCK"; cat "$body"; rm -f "$body"; else : > "$DOCS_DIR/body-$DOCS_BLOCK"; fi
  # A stream read until its own --max-time (exit 28) after a 200 is what such an example asks for.
  if [ "$rc" = 28 ] && [ "$status" = 200 ]; then return 0; fi
  # Named here rather than by the ERR trap, which would only see this function's last line.
  if [ "$rc" != 0 ]; then __docs_failed "curl exited $rc (no answer): curl $*"; fi
  return 0
}
__docs_serve() {
  local url="http://127.0.0.1:\${PORT:-8080}" pid code i
  if command curl -s -o /dev/null --max-time 2 "$url/healthz"; then
    echo "docs test: $url already answers; stop what listens there first" >&2; return 1
  fi
  node "$DOCS_REPO/dist/src/cli/main.js" serve >> "$DOCS_DIR/server.log" 2>&1 &
  pid=$!
  for i in $(seq 1 300); do
    code=$(command curl -s -o /dev/null -w '%{http_code}' "$url/readyz" || true)
    [ "$code" = 200 ] && return 0
    if ! kill -0 "$pid" 2>/dev/null; then echo "docs test: the service exited during start-up" >&2; cat "$DOCS_DIR/server.log" >&2; return 1; fi
    sleep 0.1
  done
  echo "docs test: the service was not ready within 30 s" >&2; return 1
}
__docs_anvil() {
  local port=8545 i args=("$@") anvil="$DOCS_REPO/node_modules/.bin/anvil"
  for ((i = 0; i < \${#args[@]}; i++)); do [ "\${args[i]}" = "--port" ] && port="\${args[i+1]:-8545}"; done
  if [ ! -x "$anvil" ]; then echo "docs test: no anvil in node_modules (npm ci installs @foundry-rs/anvil-linux-amd64)" >&2; return 1; fi
  "$anvil" "$@" >> "$DOCS_DIR/anvil.log" 2>&1 &
  for i in $(seq 1 200); do
    command curl -s -o /dev/null --max-time 1 -H 'content-type: application/json' \
      -d '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}' "http://127.0.0.1:$port" && return 0
    sleep 0.1
  done
  echo "docs test: anvil did not answer on port $port within 20 s" >&2; return 1
}
npx() {
  case "\${1:-}" in
    anvil) shift; __docs_anvil "$@"; return ;;
  esac
  echo "docs test: 'npx $*' is not run by the test; mark its block <!-- not run: why -->" >&2
  return 127
}
npm() {
  local script
  case "\${1:-}" in
    start) __docs_serve; return ;;
    run)
      shift
      while [ "\${1:-}" = "-s" ] || [ "\${1:-}" = "--silent" ]; do shift; done
      script="\${1:-}"; shift || true
      [ "\${1:-}" = "--" ] && shift
      case "$script" in
        cli) node "$DOCS_REPO/dist/src/cli/main.js" "$@"; return ;;
        demo) node "$DOCS_REPO/dist/src/cli/main.js" demo "$@"; return ;;
      esac ;;
  esac
  echo "docs test: 'npm $*' is not run by the test; mark its block <!-- not run: why -->" >&2
  return 127
}
`.replaceAll("\\${", "${");

export interface DocRun {
  /** One line per broken example, naming file:line. */
  failures: string[];
  /** The session's output and the server's log, for a failure message. */
  transcript: string;
  /** The page's working directory (the caller removes it). */
  dir: string;
}

export interface DocRunOptions {
  repoRoot: string;
  /** The whole page's time limit. */
  timeoutMs: number;
  /** Extra environment of the session (the test's own settings, never a page's variable). */
  env?: Record<string, string>;
}

/** The script: each runnable block verbatim, after a marker naming it. */
function scriptOf(blocks: DocBlock[], repoRoot: string, dir: string): string {
  const parts = [PRELUDE];
  blocks.forEach((block, index) => {
    if (runnable(block)) parts.push(`__docs_block ${index}`, block.text);
    if (block.runTs) parts.push(`__docs_block ${index}`, tsProgram(block, index, repoRoot, dir));
  });
  parts.push(`__docs_block end`);
  return parts.join("\n");
}

function readLines(path: string): string[] {
  return existsSync(path)
    ? readFileSync(path, "utf8")
        .split("\n")
        .filter((line) => line !== "")
    : [];
}

function errorCodeOf(body: string): string | null {
  try {
    const parsed = JSON.parse(body) as { error?: { code?: unknown } };
    return typeof parsed.error?.code === "string" ? parsed.error.code : null;
  } catch {
    return null;
  }
}

interface Session {
  pid: number;
  /** The shell's exit code, once the page's last block is done (what it started may still run). */
  exited: Promise<number | null>;
  /** Everything written so far to the shell's stdout and stderr (also by what it started). */
  output: () => string;
  /** Resolves when every writer of the output is gone. */
  closed: Promise<void>;
}

/** Runs bash on the script in its own process group (so the servers and receivers it starts end with it). */
function startBash(script: string, dir: string, options: DocRunOptions): Session {
  const child = spawn("bash", ["-c", script], {
    cwd: dir,
    detached: true,
    env: { PATH: process.env.PATH ?? "", HOME: dir, ...options.env, DOCS_DIR: dir, DOCS_REPO: options.repoRoot },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const timer = setTimeout(() => {
    output += `\ndocs test: the page did not finish within ${options.timeoutMs} ms`;
    killGroup(child.pid!, "SIGKILL");
  }, options.timeoutMs);
  const exited = new Promise<number | null>((resolveExit) =>
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolveExit(code);
    }),
  );
  const closed = new Promise<void>((resolveClose) => child.on("close", () => resolveClose()));
  return { pid: child.pid!, exited, output: () => output, closed };
}

/** False once no process of the group is left. */
function killGroup(pid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false;
  }
}

const GROUP_EXIT_TIMEOUT_MS = 15_000;

/** Ends what the page left running (the server, a receiver) and waits until it is gone. */
async function endGroup(pid: number): Promise<void> {
  killGroup(pid, "SIGTERM");
  const deadline = Date.now() + GROUP_EXIT_TIMEOUT_MS;
  while (killGroup(pid, 0)) {
    if (Date.now() > deadline) killGroup(pid, "SIGKILL");
    await new Promise((resolveWait) => setTimeout(resolveWait, 100));
  }
}

/** Checks every curl answer of the page: documented ones against their line, the others for success. */
function answerFailures(blocks: DocBlock[], dir: string, where: (block: DocBlock) => string): string[] {
  const failures: string[] = [];
  const statuses = new Map<number, string[]>();
  for (const line of readLines(join(dir, "statuses"))) {
    const [index, status] = line.split(" ");
    statuses.set(Number(index), [...(statuses.get(Number(index)) ?? []), status ?? ""]);
  }
  blocks.forEach((block, index) => {
    if (!runnable(block)) return;
    const seen = statuses.get(index) ?? [];
    const documented = block.expect === null ? [] : seen.slice(-1);
    for (const status of seen.slice(0, seen.length - documented.length)) {
      if (!/^[23]\d\d$/.test(status)) failures.push(`${where(block)}: a curl answered ${status}, and the page documents no error there`);
    }
    if (block.expect === null) return;
    if (documented.length === 0) {
      failures.push(`${where(block)}: documents → ${block.expect.status} but no curl ran`);
      return;
    }
    const body = existsSync(join(dir, `body-${index}`)) ? readFileSync(join(dir, `body-${index}`), "utf8") : "";
    const code = errorCodeOf(body);
    if (Number(documented[0]) !== block.expect.status || (block.expect.code !== null && code !== block.expect.code)) {
      failures.push(
        `${where(block)}: expected ${block.expect.status} ${block.expect.code ?? ""}, got ${documented[0]} ${body.slice(0, 300)}`,
      );
    }
  });
  return failures;
}

/** Runs one page from a fresh directory (its working directory, database and files). */
export async function runDoc(name: string, markdown: string, options: DocRunOptions): Promise<DocRun> {
  const dir = mkdtempSync(join(tmpdir(), "points-ledger-doc-"));
  const blocks = docBlocks(markdown);
  const where = (block: DocBlock) => `${name}:${block.line}`;
  symlinkSync(join(options.repoRoot, "contracts"), join(dir, "contracts"));
  const script = scriptOf(blocks, options.repoRoot, dir);
  writeFileSync(join(dir, "script.sh"), script);
  const session = startBash(script, dir, options);
  const code = await session.exited;
  await endGroup(session.pid);
  await session.closed;
  const output = session.output();
  const failures: string[] = [];
  const started = readLines(join(dir, "started")).map((line) => line.split(" ")[0]);
  if (started.at(-1) !== "end") {
    const last = blocks[Number(started.at(-1) ?? -1)];
    failures.push(
      `${last ? where(last) : name}: the session stopped in this block (exit ${code}); its output ends:\n${output.slice(-1500)}`,
    );
  }
  for (const line of readLines(join(dir, "errors"))) {
    const [index, message] = line.split("\t");
    const block = blocks[Number(index)];
    failures.push(`${block ? where(block) : name}: ${message}`);
  }
  failures.push(...answerFailures(blocks, dir, where));
  rmSync(join(options.repoRoot, "dist/docs-examples", basename(dir)), { recursive: true, force: true });
  const serverLog = existsSync(join(dir, "server.log")) ? readFileSync(join(dir, "server.log"), "utf8") : "";
  return { failures, transcript: `${output}\n--- server log ---\n${serverLog.slice(-3000)}`, dir };
}
