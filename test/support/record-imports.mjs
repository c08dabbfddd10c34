// Test support, preloaded with `node --import`: records every module URL the process resolves,
// one per line, in the file named by BERTH_IMPORT_LOG (through a module.register resolve hook).
import { register } from 'node:module';

register(new URL('./import-hooks.mjs', import.meta.url), { data: { log: process.env.BERTH_IMPORT_LOG } });
