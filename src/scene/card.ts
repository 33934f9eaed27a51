/** The explain card's display shapes, shared by the scenes that fill it (explain-view.ts, ebpf-run-view.ts). */

/** A labelled value; `mono` marks hex and code. */
export interface Row {
  label: string;
  value: string;
  mono?: boolean;
}

/** A small table. */
export interface Table {
  caption: string;
  head: string[];
  rows: string[][];
  /** Index of the row to highlight (the chosen one), if any. */
  highlight?: number;
}
