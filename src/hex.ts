/** 32-bit values as the pages show and read them (secrets, hashes). */

/** Formats a 32-bit value as 0x-prefixed 8-digit hex. */
export function hex32(n: number): string {
  return `0x${(n >>> 0).toString(16).padStart(8, '0')}`;
}

/** Parses 32-bit hex (`0x1a2b3c4d` or `1a2b3c4d`); undefined when it is not. */
export function parseHex32(s: string): number | undefined {
  const t = s.trim();
  return /^(0x)?[0-9a-f]{1,8}$/i.test(t) ? Number.parseInt(t.replace(/^0x/i, ''), 16) >>> 0 : undefined;
}
