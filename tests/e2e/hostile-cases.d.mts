export const DISPATCH_CASES: [query: string, named: string][];
export const LOOKUP_MILLION: string;
export const LOOKUP_LINES: string;
