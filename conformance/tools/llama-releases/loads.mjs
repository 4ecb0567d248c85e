// Loads each file given with this folder's node-llama-cpp (one llama.cpp
// release's prebuilt CPU loader), as a user of that release would: a line
// `BEGIN PATH` before each, then `LOADED PATH` or `REFUSED PATH MESSAGE`;
// what llama.cpp logs while loading it comes between, as `LOG MESSAGE`
// lines (on stdout, so each file's log stays with it).
// An abort inside the library kills the process after its BEGIN line: the
// caller (prove.py) starts a new process after the file it died on.
//
//     node loads.mjs FILE...     (run with NODE_PATH-free cwd: the release's folder)
import { getLlama, LlamaLogLevel } from 'node-llama-cpp';

const log = (level, message) => process.stdout.write(`LOG ${String(message).replace(/\s+/g, ' ').trim()}\n`);
const llama = await getLlama({
  gpu: false,
  build: 'never',
  logLevel: LlamaLogLevel.error,
  logger: log,
  progressLogs: false,
});
// The native side's log reaches JavaScript a turn of the event loop later:
// wait for it before the verdict, so each file's log comes before it.
const settle = () => new Promise((resolve) => setTimeout(resolve, 30));
for (const path of process.argv.slice(2)) {
  process.stdout.write(`BEGIN ${path}\n`);
  try {
    const model = await llama.loadModel({ modelPath: path });
    await settle();
    process.stdout.write(`LOADED ${path}\n`);
    await model.dispose();
  } catch (e) {
    await settle();
    const message = String(e?.message ?? e).split('\n')[0];
    process.stdout.write(`REFUSED ${path} ${message}\n`);
  }
}
