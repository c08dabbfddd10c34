#!/usr/bin/env node
// Entry point of the `berth` CLI: runs the TypeScript sources directly through tsx (no build step).
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
