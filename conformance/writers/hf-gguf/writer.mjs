// Writer under test for `gguf-validate fuzz-writer`: @huggingface/gguf's
// header writer, serializeGgufMetadata (version pinned in package.json).
//
//   node conformance/writers/hf-gguf/writer.mjs MODEL OUT    (MODEL: fuzz-writer's JSON)
//   node conformance/writers/hf-gguf/writer.mjs --version
//
// Install: `npm ci` in this folder (or conformance/writers/install.sh).
// Claims: ../hf_gguf.toml. The package writes headers (magic, version,
// counts, key/values, padding to the alignment); tensor infos and data are
// not its job (buildGgufHeader copies them from an existing file), so the
// claims ask for no tensors. Values are passed typed (`type`, `subType`),
// 64-bit integers as BigInt, floats as the JS numbers their bits decode to.
// Exit 0 when the file was written, 1 when the package threw.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { serializeGgufMetadata, GGUFValueType } from "@huggingface/gguf";

const TYPES = {
  u8: GGUFValueType.UINT8, i8: GGUFValueType.INT8, u16: GGUFValueType.UINT16, i16: GGUFValueType.INT16,
  u32: GGUFValueType.UINT32, i32: GGUFValueType.INT32, u64: GGUFValueType.UINT64, i64: GGUFValueType.INT64,
  f32: GGUFValueType.FLOAT32, f64: GGUFValueType.FLOAT64, bool: GGUFValueType.BOOL,
  string: GGUFValueType.STRING, array: GGUFValueType.ARRAY,
};

function scalar(ty, v) {
  const view = new DataView(new ArrayBuffer(8));
  switch (ty) {
    case "f32":
      view.setUint32(0, Number.parseInt(v, 16), true);
      return view.getFloat32(0, true);
    case "f64":
      view.setBigUint64(0, BigInt(v), true);
      return view.getFloat64(0, true);
    case "u64":
    case "i64":
      return BigInt(v);
    default:
      return v;
  }
}

const [, , model, out] = process.argv;
if (model === "--version") {
  const here = dirname(fileURLToPath(import.meta.url));
  const pkg = JSON.parse(readFileSync(join(here, "node_modules/@huggingface/gguf/package.json"), "utf8"));
  console.log(`@huggingface/gguf ${pkg.version} (node ${process.version})`);
  process.exit(0);
}
if (!model || !out) {
  console.error("usage: node writer.mjs MODEL OUT | --version");
  process.exit(2);
}
try {
  const doc = JSON.parse(readFileSync(model, "utf8"));
  if (doc.format !== "gguf-writer-model" || doc.format_version !== 1) throw new Error("not a gguf-writer-model v1 description");
  if (doc.tensors.length > 0) throw new Error("serializeGgufMetadata writes no tensor infos");
  const meta = {
    version: { value: doc.gguf_version, type: GGUFValueType.UINT32 },
    tensor_count: { value: 0n, type: GGUFValueType.UINT64 },
    kv_count: { value: BigInt(doc.kvs.length), type: GGUFValueType.UINT64 },
  };
  for (const kv of doc.kvs) {
    if (kv.type === "array") {
      if (kv.element_type === "array") throw new Error("nested arrays cannot be typed");
      meta[kv.key] = { value: kv.value.map((x) => scalar(kv.element_type, x)), type: TYPES.array, subType: TYPES[kv.element_type] };
    } else {
      meta[kv.key] = { value: scalar(kv.type, kv.value), type: TYPES[kv.type] };
    }
  }
  const bytes = serializeGgufMetadata(meta, { littleEndian: doc.byte_order !== "big", alignment: doc.alignment });
  writeFileSync(out, bytes);
  process.exit(0);
} catch (e) {
  console.error(`hf-gguf writer: ${e && e.message ? e.message : e}`);
  process.exit(1);
}
