/**
 * The front matter every page in `content/` must have, on top of Starlight's
 * own fields. Used by the content collection (a bad file fails the build,
 * named by Astro) and by the unit test that checks every file.
 */
import { z } from 'astro/zod';

/** One kernel source a page cites: the file and the release where the rule appears. */
export const kernelSource = z.object({
  /** Path in the kernel tree, e.g. `net/core/sock_reuseport.c`. */
  file: z.string().regex(/^[a-z0-9_./-]+$/i, 'a kernel source path such as net/core/sock_reuseport.c'),
  /** Release, quoted in YAML: "4.6", "5.14". */
  release: z.string().regex(/^\d+\.\d+(\.\d+)?$/, 'a release such as "4.6" (quote it in YAML)'),
  /** What the page takes from it, in the page's language. */
  what: z.string().min(1).optional(),
});

/** A measured trace in public/traces/, by file name. */
export const traceFile = z.string().regex(/^[a-z0-9-]+\.json$/, 'a file name in public/traces/, such as tcp-v4-specific-8.json');

/** Fields added to Starlight's docs schema. Chapters must set both. */
export const pageFields = z.object({
  sources: z.array(kernelSource).default([]),
  traces: z.array(traceFile).default([]),
});
