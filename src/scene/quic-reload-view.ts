/**
 * The QUIC reload card's rows: the flows' fates as the model simulated
 * them and as the kernel did (public/traces/quic-reload.json), side by
 * side, and the recording's agreement. No DOM, no kernel rule: every count
 * is the model's report or the recording's.
 */
import type { Fates } from '../model/generated/Fates';
import type { ReloadReport } from '../model/generated/ReloadReport';

/** One variant of the recording. */
export interface RecordedRun {
  variant: 'no-program' | 'cid-program';
  measured: ReloadReport;
  compared: number;
  agreed: number;
}

/** The recording (`reuseport-agent scenario quic-reload`). */
export interface ReloadRecording {
  schema: string;
  kernel: { release: string; profile: string };
  key: number | null;
  runs: RecordedRun[];
}

/** The fates the card shows, in order: a row each. */
export const FATE_ROWS = ['before', 'oldKept', 'oldBroken', 'newHung', 'newEstablished', 'afterKept', 'afterBroken'] as const;
export type FateRow = (typeof FATE_ROWS)[number];

/** A row: the fate, then simulated and measured without a program, then with the connection-ID program. */
export interface FateLine {
  fate: FateRow;
  values: [number, number | null, number, number | null];
}

/** The card's rows from the two simulated runs and the recording (null when there is none). */
export function fateLines(sim: { none: Fates; cid: Fates }, rec: ReloadRecording | null): FateLine[] {
  const measured = (v: RecordedRun['variant']) => rec?.runs.find((r) => r.variant === v)?.measured.fates ?? null;
  const [mn, mc] = [measured('no-program'), measured('cid-program')];
  return FATE_ROWS.map((fate) => ({ fate, values: [sim.none[fate], mn ? mn[fate] : null, sim.cid[fate], mc ? mc[fate] : null] }));
}

/** The recording's agreement: datagrams compared and agreed, over both variants. */
export function agreementOf(rec: ReloadRecording): { compared: number; agreed: number } {
  return rec.runs.reduce((a, r) => ({ compared: a.compared + r.compared, agreed: a.agreed + r.agreed }), { compared: 0, agreed: 0 });
}
