/** Test support: an in-process ask for the placer — 1 core, no GPU, no label, node `n` of run `r` — overridden by `a`. */
import type { NormalizedAsk } from '../../src/placement/types.js';

export const placerAsk = (a: Partial<NormalizedAsk> = {}): NormalizedAsk => ({
  cpus: 1,
  gpus: 0,
  label: '',
  policy: 'prefer',
  node: 'n',
  runId: 'r',
  env: {},
  ...a,
});
