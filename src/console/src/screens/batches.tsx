import { useState } from "preact/hooks";
import { BATCH_STATUSES, type Batch, type BatchStatus } from "../../../client/index.js";
import { useConsole, useLoad } from "../context.js";
import { When } from "../when.js";
import { displayPoints } from "../lib/amounts.js";
import { Pager, useCursorPages } from "../pager.js";

const PAGE_SIZE = 25;

interface Filter {
  status: BatchStatus | "";
  pointType: string;
  createdAfter: string;
  createdBefore: string;
  sort: "ASC" | "DESC";
}

/** A date input's day as the start of that day in UTC (the API's times are UTC). */
function dayStart(day: string): string | undefined {
  return day === "" ? undefined : `${day}T00:00:00.000Z`;
}

export function Batches() {
  const { client, parameters, ledgerVersion } = useConsole();
  const [filter, setFilter] = useState<Filter>({ status: "", pointType: "", createdAfter: "", createdBefore: "", sort: "DESC" });
  const pages = useCursorPages();
  const cursor = pages.cursor;
  const page = useLoad(
    () =>
      client.listBatches({
        status: filter.status || undefined,
        pointType: filter.pointType || undefined,
        createdAfter: dayStart(filter.createdAfter),
        createdBefore: dayStart(filter.createdBefore),
        sort: filter.sort,
        limit: PAGE_SIZE,
        cursor,
      }),
    [filter, cursor, ledgerVersion],
  );
  const change = (patch: Partial<Filter>) => {
    setFilter({ ...filter, ...patch });
    pages.reset();
  };
  return (
    <section aria-labelledby="batches-title">
      <h1 id="batches-title">Batches</h1>
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          Status
          <select name="status" value={filter.status} onChange={(e) => change({ status: e.currentTarget.value as BatchStatus | "" })}>
            <option value="">Any</option>
            {BATCH_STATUSES.map((s) => (
              <option value={s}>{s}</option>
            ))}
          </select>
        </label>
        <label>
          Point type
          <select name="pointType" value={filter.pointType} onChange={(e) => change({ pointType: e.currentTarget.value })}>
            <option value="">Any</option>
            {parameters.POINT_TYPES.map((t) => (
              <option value={t}>{t}</option>
            ))}
          </select>
        </label>
        <label>
          Created after (UTC day)
          <input
            type="date"
            name="createdAfter"
            value={filter.createdAfter}
            onChange={(e) => change({ createdAfter: e.currentTarget.value })}
          />
        </label>
        <label>
          Created before (UTC day)
          <input
            type="date"
            name="createdBefore"
            value={filter.createdBefore}
            onChange={(e) => change({ createdBefore: e.currentTarget.value })}
          />
        </label>
        <label>
          Order
          <select name="sort" value={filter.sort} onChange={(e) => change({ sort: e.currentTarget.value as "ASC" | "DESC" })}>
            <option value="DESC">Newest first</option>
            <option value="ASC">Oldest first</option>
          </select>
        </label>
      </form>
      {page.error && (
        <p role="alert" class="error">
          {page.error}
        </p>
      )}
      <BatchTable batches={page.data?.batches ?? []} />
      <Pager pages={pages} nextCursor={page.data?.cursor} noun="page" />
    </section>
  );
}

export function BatchTable({ batches }: { batches: Batch[] }) {
  if (batches.length === 0) return <p class="muted">No batches match.</p>;
  return (
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            <th scope="col">Batch</th>
            <th scope="col">Point type</th>
            <th scope="col">Status</th>
            <th scope="col" class="num">
              Points
            </th>
            <th scope="col" class="num">
              Transfers
            </th>
            <th scope="col">Created</th>
            <th scope="col">Finalizes</th>
          </tr>
        </thead>
        <tbody>
          {batches.map((b) => (
            <tr data-batch-id={b.id}>
              <td data-label="Batch" class="mono">
                <a href={`#/batches/${encodeURIComponent(b.id)}`}>{b.id}</a>
              </td>
              <td data-label="Point type">{b.pointType}</td>
              <td data-label="Status">
                <span class={`status ${b.status}`}>{b.status}</span>
              </td>
              <td data-label="Points" class="num amount">
                {displayPoints(b.points)}
              </td>
              <td data-label="Transfers" class="num">
                {b.transferCount}
              </td>
              <td data-label="Created">
                <When iso={b.createdAt} />
              </td>
              <td data-label="Finalizes">
                <When iso={b.finalizedAt ?? b.finalizeAt} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
