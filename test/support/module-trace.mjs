// `node --import tsx --import ./test/support/module-trace.mjs ...`: appends the URL of every file module the process
// loads to the file ASSAY_MODULE_TRACE names, one a line. Registered after tsx, so its hook runs first and sees each
// .ts module before tsx transforms it (test/sync/cli-help.test.ts asks which modules a command loaded).
import { register } from 'node:module';

register('./module-trace-hooks.mjs', import.meta.url);
