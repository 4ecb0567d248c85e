// Loads each file given with this folder's node-llama-cpp (one llama.cpp
// release's prebuilt CPU loader), as a user of that release would: a line
// `BEGIN PATH` before each, then `LOADED PATH` or `REFUSED PATH MESSAGE`.
// An abort inside the library kills the process after its BEGIN line: the
// caller (prove.py) starts a new process after the file it died on.
//
//     node loads.mjs FILE...     (run with NODE_PATH-free cwd: the release's folder)
import { getLlama, LlamaLogLevel } from 'node-llama-cpp';

const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error, progressLogs: false });
for (const path of process.argv.slice(2)) {
  process.stdout.write(`BEGIN ${path}\n`);
  try {
    const model = await llama.loadModel({ modelPath: path });
    process.stdout.write(`LOADED ${path}\n`);
    await model.dispose();
  } catch (e) {
    const message = String(e?.message ?? e).split('\n')[0];
    process.stdout.write(`REFUSED ${path} ${message}\n`);
  }
}
