/**
 * A scenario card's verdict on a recorded run, one per measure: the shares
 * (do the workers get the same parts of the load?) and the latency (do the
 * requests take as long?). The figures are the calibration's
 * (public/traces/calibration.json, `npm run calibrate`); this file only
 * compares each with its threshold and says why a latency differs. One
 * "they disagree" for a run whose shares agree to a tenth of a percent
 * misled: the measures part for different reasons.
 */

/** The calibration's comparison of one recorded run with the simulator on the same workload. */
export interface Agreement {
  /** Mean absolute difference of per-worker accept shares (0 to 1). */
  shareError: number;
  /** Mean of |simulated − measured| / measured over the request latency p50, p90 and p99. */
  latencyDistance: number;
  /** The calibration's overall verdict: both measures within their thresholds. */
  agrees: boolean;
  /** The run saturated the machine it was recorded on (the calibration left it out of its fit). */
  saturated: boolean;
}

export interface Verdict {
  shares: { agrees: boolean; error: number; max: number };
  latency: {
    agrees: boolean;
    distance: number;
    max: number;
    /**
     * Why the latency differs: `saturated` when the recording overloaded its machine (the load generator on the
     * workers' CPUs, the scheduler's time slices in every figure), `scheduler` otherwise (the simulator models no CPU
     * scheduler); null when it agrees.
     */
    why: 'saturated' | 'scheduler' | null;
  };
}

/** Each measure against its threshold (the calibration's `shareThreshold` and `latencyThreshold`). */
export function verdictOf(a: Agreement, thresholds: { share: number; latency: number }): Verdict {
  const sharesAgree = a.shareError <= thresholds.share;
  const latencyAgrees = a.latencyDistance <= thresholds.latency;
  return {
    shares: { agrees: sharesAgree, error: a.shareError, max: thresholds.share },
    latency: {
      agrees: latencyAgrees,
      distance: a.latencyDistance,
      max: thresholds.latency,
      why: latencyAgrees ? null : a.saturated ? 'saturated' : 'scheduler',
    },
  };
}

/**
 * Whether the calibration left `scenario/variant` out of its fit as saturated: its `leftOut` lines read
 * "<scenario>/<variant>: left out of the fit (evaluated below): saturated on this machine, …".
 */
export function saturatedRuns(leftOut: readonly string[]): Set<string> {
  const out = new Set<string>();
  for (const line of leftOut) {
    const m = /^([a-z0-9-]+\/[a-z0-9-]+): .*\bsaturated\b/.exec(line);
    if (m) out.add(m[1]!);
  }
  return out;
}
