// Conformance adapter for @huggingface/gguf (version pinned in package.json).
// Usage: node adapter.mjs FILE | --version
// Reads the file through the package's local-file API: every metadata value
// (typed), every tensor info, and the parameter count (which rejects shapes
// that cannot fit in the file). The package never reads tensor data.
// Exit 0 = accepted, 1 = rejected (the promise rejected); anything else
// (e.g. node's exit 134 on heap exhaustion) is a crash for the runner.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gguf } from "@huggingface/gguf";

const arg = process.argv[2];
if (arg === "--version") {
  const here = dirname(fileURLToPath(import.meta.url));
  const pkg = JSON.parse(readFileSync(join(here, "node_modules/@huggingface/gguf/package.json"), "utf8"));
  console.log(`@huggingface/gguf ${pkg.version} (node ${process.version})`);
  process.exit(0);
}
if (!arg) {
  console.error("usage: node adapter.mjs FILE | --version");
  process.exit(2);
}
try {
  const { metadata, tensorInfos, parameterCount } = await gguf(arg, {
    allowLocalFile: true,
    computeParametersCount: true,
    typedMetadata: true,
  });
  // Touch everything the parser returned.
  JSON.stringify(metadata, (_k, v) => (typeof v === "bigint" ? v.toString() : v));
  for (const t of tensorInfos) {
    void t.name, t.shape.map(String), t.dtype, String(t.offset);
  }
  void String(parameterCount);
  process.exit(0);
} catch (e) {
  console.error(`hf-gguf: ${e && e.message ? e.message : e}`);
  process.exit(1);
}
