import { useState } from "preact/hooks";

/** Cursor paging that can go back: the cursors of every page up to the current one (undefined = the first). */
export interface CursorPages {
  cursor: string | undefined;
  hasPrevious: boolean;
  previous(): void;
  next(cursor: string): void;
  /** Back to the first page (after a filter changed). */
  reset(): void;
}

export function useCursorPages(): CursorPages {
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  return {
    cursor: cursors[cursors.length - 1],
    hasPrevious: cursors.length > 1,
    previous: () => setCursors(cursors.slice(0, -1)),
    next: (cursor) => setCursors([...cursors, cursor]),
    reset: () => setCursors([undefined]),
  };
}

/** "Previous …" and "Next …" buttons over a CursorPages; `nextCursor` is the current page's answer. */
export function Pager({ pages, nextCursor, noun }: { pages: CursorPages; nextCursor: string | null | undefined; noun: string }) {
  return (
    <div class="row pager">
      <button type="button" disabled={!pages.hasPrevious} onClick={pages.previous}>
        Previous {noun}
      </button>
      <button type="button" disabled={!nextCursor} onClick={() => nextCursor && pages.next(nextCursor)}>
        Next {noun}
      </button>
    </div>
  );
}
