// gguf-validate for JavaScript: the validator's WebAssembly build behind an
// API with the Python package's verbs. Works in browsers (also in a Web
// Worker), Node 20 and bundlers. A File or Blob costs the bytes of its
// metadata, never its size; a URL is read in ranges with the native
// reader's limits.
import initWasm, * as wasm from './wasm/gguf_validate_wasm.js';

const WASM_URL = new URL('./wasm/gguf_validate_wasm_bg.wasm', import.meta.url);
const IS_NODE = typeof process !== 'undefined' && process.versions != null && process.versions.node != null;
// More rounds than any file needs (the first read, the reads to the end of
// the metadata, one for the reads past it): a bound, not a budget.
const MAX_ROUNDS = 64;
// Reads of one round in flight at once (a URL: requests at once).
const BLOB_READS_AT_ONCE = 16;
const HTTP_READS_AT_ONCE = 4;

let loading = null;

/** Loads the WebAssembly module (every other function does it first). */
export function init() {
  if (loading == null) {
    loading = (async () => {
      if (IS_NODE) {
        const { readFile } = await import('node:fs/promises');
        await initWasm({ module_or_path: await readFile(WASM_URL) });
      } else {
        await initWasm({ module_or_path: WASM_URL });
      }
    })();
  }
  return loading;
}

/** What went wrong: `kind` is `usage`, `unreadable` or `invalid`, as in Python. */
export class GgufValidateError extends Error {
  constructor(kind, message) {
    super(message);
    this.name = 'GgufValidateError';
    this.kind = kind;
  }
}

function usage(message) {
  return new GgufValidateError('usage', message);
}

// ---- sources -------------------------------------------------------------

/** A File or Blob, read with `Blob.slice`. */
class BlobReader {
  constructor(blob, name) {
    this.blob = blob;
    this.name = name;
    this.length = blob.size;
    this.remote = false;
    this.atOnce = BLOB_READS_AT_ONCE;
  }

  async read(offset, length) {
    const buf = await this.blob.slice(offset, offset + length).arrayBuffer();
    if (buf.byteLength !== length) {
      throw new GgufValidateError('unreadable', `the file changed while it was read: ${length} bytes at offset ${offset} are gone`);
    }
    return new Uint8Array(buf);
  }
}

/** Bytes in memory. */
class BytesReader {
  constructor(bytes, name) {
    this.bytes = bytes;
    this.name = name;
    this.length = bytes.byteLength;
    this.remote = false;
    this.atOnce = BLOB_READS_AT_ONCE;
  }

  async read(offset, length) {
    return this.bytes.subarray(offset, offset + length);
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function parseContentRange(value) {
  const m = /^\s*bytes\s+(\d+)-(\d+)\/(\d+|\*)\s*$/i.exec(value ?? '');
  if (m == null) return null;
  return { start: Number(m[1]), end: Number(m[2]), total: m[3] === '*' ? null : Number(m[3]) };
}

/**
 * A URL, read in ranges as the native reader reads it: `Range` requests of
 * what the validation asks for, each bounded by `timeout` (headers and body
 * together; a timed-out request tried again once at most), `429` and `5xx`
 * retried with backoff (`Retry-After` honoured up to a cap), the whole file
 * by `deadline`; a file whose ETag or length changes between reads is
 * reported as changed.
 */
class HttpReader {
  constructor(url, shown, options, limits) {
    this.url = url;
    this.name = shown;
    this.remote = true;
    this.atOnce = HTTP_READS_AT_ONCE;
    this.fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.headers = options.headers ?? {};
    this.timeoutMs = 1000 * (options.httpTimeout ?? limits.timeoutSecs);
    this.retries = options.retries ?? limits.retries;
    this.limits = limits;
    this.deadlineSecs = options.httpDeadline ?? limits.fileDeadlineSecs;
    this.deadline = Date.now() + 1000 * this.deadlineSecs;
    this.signal = options.signal;
    this.etag = null;
    this.length = null;
    this.requests = 0;
    this.bytesRead = 0;
  }

  /** What reading has cost so far, as reports give it (`summary.remote`). */
  cost() {
    return {
      url: this.name,
      bytesFetched: this.bytesRead,
      requests: this.requests,
      rangeRequests: this.ranges !== false,
      etag: this.etag ?? undefined,
      revision: this.revision ?? undefined,
      sha256: this.sha256 ?? undefined,
    };
  }

  /** The first read, which also tells the file's length. */
  async open() {
    const first = await this.request(0, this.limits.firstRead, true);
    return first;
  }

  async read(offset, length) {
    if (length === 0) return new Uint8Array(0);
    const got = await this.request(offset, length, false);
    if (got.bytes.byteLength < length) {
      throw new GgufValidateError('unreadable', `the server sent ${got.bytes.byteLength} of the ${length} bytes asked for at offset ${offset}`);
    }
    return got.bytes.subarray(0, length);
  }

  async request(offset, length, first) {
    let timeouts = 0;
    let failures = 0;
    for (;;) {
      if (Date.now() >= this.deadline) {
        throw new GgufValidateError('unreadable', `timed out after ${this.deadlineSecs} s (the deadline per file, httpDeadline)`);
      }
      try {
        return await this.once(offset, length, first);
      } catch (e) {
        const kind = e && e.retry;
        if (kind === 'timeout' && timeouts < this.limits.timeoutRetries) {
          timeouts += 1;
          continue;
        }
        if (kind === 'status' && failures < this.retries) {
          failures += 1;
          const cap = this.limits.maxRetryAfterSecs * 1000;
          const backoff = Math.min(this.limits.backoffMs * 2 ** (failures - 1), this.limits.maxBackoffMs);
          await sleep(e.retryAfterMs != null ? Math.min(e.retryAfterMs, cap) : backoff);
          continue;
        }
        if (e instanceof GgufValidateError) throw e;
        throw new GgufValidateError('unreadable', e && e.message ? e.message : String(e));
      }
    }
  }

  async once(offset, length, first) {
    const controller = new AbortController();
    const left = Math.max(0, Math.min(this.timeoutMs, this.deadline - Date.now()));
    const timer = setTimeout(() => controller.abort(new Error('timeout')), left);
    const onAbort = () => controller.abort(this.signal.reason);
    this.signal?.addEventListener('abort', onAbort, { once: true });
    this.requests += 1;
    try {
      let res;
      try {
        res = await this.fetch(this.url, {
          headers: { ...this.headers, Range: `bytes=${offset}-${offset + length - 1}` },
          signal: controller.signal,
          redirect: 'follow',
          cache: 'no-store',
        });
      } catch (e) {
        if (controller.signal.aborted && this.signal?.aborted !== true) {
          throw Object.assign(new Error(`timed out after ${this.timeoutMs / 1000} s (--http-timeout)`), { retry: 'timeout' });
        }
        if (this.signal?.aborted) throw new GgufValidateError('unreadable', 'cancelled');
        throw new GgufValidateError('unreadable', await this.unreachable(e));
      }
      if (res.status === 429 || res.status >= 500) {
        const after = Number(res.headers.get('retry-after'));
        throw Object.assign(new Error(`HTTP ${res.status} from the server`), {
          retry: 'status',
          retryAfterMs: Number.isFinite(after) && after >= 0 ? after * 1000 : null,
        });
      }
      if (res.status === 404 || res.status === 410) {
        throw new GgufValidateError('unreadable', `HTTP ${res.status}: the server says the file is not there`);
      }
      if (first && res.status === 416) {
        this.length = 0;
        this.etag = res.headers.get('etag');
        this.ranges = true;
        return { bytes: new Uint8Array(0) };
      }
      if (res.status !== 206 && res.status !== 200) {
        throw new GgufValidateError('unreadable', `HTTP ${res.status} from the server`);
      }
      let total;
      if (res.status === 206) {
        const range = parseContentRange(res.headers.get('content-range'));
        if (range == null) {
          throw new GgufValidateError('unreadable', res.headers.get('content-range') == null
            ? 'the server answered the range request without a Content-Range this page may read (CORS: it must list Content-Range in Access-Control-Expose-Headers)'
            : `the server sent an unreadable Content-Range: ${res.headers.get('content-range')}`);
        }
        if (range.start !== offset || range.total == null) {
          throw new GgufValidateError('unreadable', `the server sent bytes ${range.start}-${range.end} for a read at ${offset}`);
        }
        total = range.total;
      } else {
        // A server that ignores ranges sends the whole file: only the first
        // read is taken from the start of it; a later one cannot be.
        if (!first && offset > 0) {
          throw new GgufValidateError('unreadable', 'the server ignores range requests, and this file is read in ranges (download it and validate the file)');
        }
        total = Number(res.headers.get('content-length'));
        if (!Number.isFinite(total)) {
          throw new GgufValidateError('unreadable', 'the server ignores range requests and does not say the length (download the file)');
        }
      }
      const etag = res.headers.get('etag');
      if (first) {
        this.length = total;
        this.etag = etag;
        this.ranges = res.status === 206;
        this.revision = res.headers.get('x-repo-commit');
        const linked = res.headers.get('x-linked-etag');
        this.sha256 = linked != null && /^"?[0-9a-f]{64}"?$/i.test(linked) ? linked.replaceAll('"', '') : null;
      } else if (total !== this.length || (this.etag != null && etag != null && etag !== this.etag)) {
        throw new GgufValidateError('unreadable', 'the file changed while it was read (another ETag or length): read it again');
      }
      const want = Math.min(length, Math.max(0, total - offset));
      const bytes = await readBody(res, want, controller.signal);
      this.bytesRead += bytes.byteLength;
      return { bytes };
    } finally {
      clearTimeout(timer);
      this.signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Why a request failed before an answer: CORS told from the network where it can be. */
  async unreachable(error) {
    const inBrowser = typeof location !== 'undefined' && typeof location.origin === 'string';
    if (inBrowser) {
      let crossOrigin = true;
      try {
        crossOrigin = new URL(this.url).origin !== location.origin;
      } catch {
        crossOrigin = true;
      }
      if (crossOrigin) {
        try {
          await this.fetch(this.url, { mode: 'no-cors', method: 'GET', headers: { Range: 'bytes=0-0' }, cache: 'no-store' });
          return 'the server answered, but does not let this page read its answer (CORS: no Access-Control-Allow-Origin for this page): download the file and drop it here instead';
        } catch {
          // The server is not reachable at all.
        }
      }
    }
    const cause = error?.cause?.code ?? error?.cause?.message;
    return `the server could not be reached: ${error && error.message ? error.message : String(error)}${cause ? ` (${cause})` : ''}`;
  }
}

/** The first `want` bytes of a response's body; the rest is not read. */
async function readBody(res, want, signal) {
  const out = new Uint8Array(want);
  if (want === 0) {
    await res.body?.cancel();
    return out;
  }
  const reader = res.body.getReader();
  let at = 0;
  try {
    while (at < want) {
      if (signal.aborted) {
        throw Object.assign(new Error('timed out while the body was read'), { retry: 'timeout' });
      }
      const { done, value } = await reader.read();
      if (done) break;
      const take = Math.min(value.byteLength, want - at);
      out.set(value.subarray(0, take), at);
      at += take;
    }
  } catch (e) {
    if (signal.aborted) throw Object.assign(new Error('timed out while the body was read'), { retry: 'timeout' });
    throw e;
  } finally {
    reader.cancel().catch(() => {});
  }
  return out.subarray(0, at);
}

function isUrl(s) {
  return typeof s === 'string' && /^(https?|hf):\/\//i.test(s);
}

function limits() {
  return JSON.parse(wasm.remoteLimits());
}

/** A reader for `source` called `name` (opened: its length known). */
async function open(source, name, options, main = true) {
  if (typeof Blob !== 'undefined' && source instanceof Blob) {
    const reader = new BlobReader(source, name);
    // The first read the validation makes, made now: one round fewer. Not
    // for the files given with it, read only if the validation asks.
    if (main) reader.firstBytes = await reader.read(0, Math.min(reader.length, limits().localFirstRead));
    return reader;
  }
  if (source instanceof Uint8Array) return new BytesReader(source, name);
  if (source instanceof ArrayBuffer) return new BytesReader(new Uint8Array(source), name);
  if (isUrl(source)) {
    let target;
    try {
      target = JSON.parse(wasm.resolveUrl(source));
    } catch (e) {
      throw usage(`${source}: ${e.message}`);
    }
    const reader = new HttpReader(target.url, name, options, limits());
    const first = await reader.open();
    reader.firstBytes = first.bytes;
    return reader;
  }
  throw usage('a source is a File or Blob, a Uint8Array or ArrayBuffer, or an http(s):// or hf:// URL');
}

// ---- rounds -------------------------------------------------------------

async function inPool(items, atOnce, work) {
  let next = 0;
  const workers = Array.from({ length: Math.min(atOnce, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      await work(items[i]);
    }
  });
  await Promise.all(workers);
}

/** Runs `step` (a validation or dump over what is read) until it needs nothing more. */
async function rounds(reads, readers, step, stats) {
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const out = JSON.parse(step());
    if (out.need == null) {
      if (stats != null) {
        stats.rounds = round + 1;
        stats.bytesRead = Number(reads.bytesHeld());
        stats.requests = readers.reduce((n, r) => n + (r.requests ?? 0), 0);
      }
      return out;
    }
    const bySource = new Map();
    for (const [i, offset, length] of out.need) {
      if (!bySource.has(i)) bySource.set(i, []);
      bySource.get(i).push([offset, length]);
    }
    await Promise.all([...bySource].map(([i, ranges]) =>
      inPool(ranges, readers[i].atOnce, async ([offset, length]) => {
        reads.supply(i, BigInt(offset), await readers[i].read(offset, length));
      })));
  }
  throw new GgufValidateError('unreadable', `the validation asked for more than ${MAX_ROUNDS} rounds of reads`);
}

function addReaders(reads, readers) {
  readers.forEach((r, i) => {
    const n = reads.addSource(BigInt(r.length), r.remote);
    if (n !== i) throw new Error('source numbers out of order');
    reads.name(n, r.name);
    if (r.firstBytes != null && r.firstBytes.byteLength > 0) reads.supply(n, 0n, r.firstBytes);
  });
}

function runOptions(options) {
  const profile = options.profile ?? 'strict';
  if (!['strict', 'spec', 'ggml'].includes(profile)) {
    throw usage(`profile \`${profile}\`: expected \`strict\`, \`spec\` or \`ggml\``);
  }
  return JSON.stringify({
    profile,
    containerOnly: !!options.containerOnly,
    denyWarnings: !!options.denyWarnings,
    facts: options.facts != null,
    fixable: options.fixable != null,
    ...(options.llamaCpp != null ? { llamaCpp: String(options.llamaCpp) } : {}),
    ...(options.loader != null ? { loader: String(options.loader) } : {}),
  });
}

function sourceName(source, options, index) {
  if (options.names?.[index] != null) return options.names[index];
  if (index === 0 && options.name != null) return options.name;
  if (typeof Blob !== 'undefined' && source instanceof Blob && typeof source.name === 'string') return source.name;
  if (isUrl(source)) {
    try {
      return JSON.parse(wasm.resolveUrl(source)).shown;
    } catch {
      return source;
    }
  }
  return `bytes ${index}`;
}

/**
 * Validates one GGUF file: its report, the command line's JSON entry for
 * it (`valid`, `profile`, `summary` with `examined`, `diagnostics`, or
 * `error` when it could not be read).
 *
 * @param source a File or Blob, a Uint8Array or ArrayBuffer, or an
 *   `http(s)://` or `hf://` URL.
 * @param options `profile` (`strict`, `spec`, `ggml`), `containerOnly`,
 *   `denyWarnings`, `llamaCpp` (`"b4600"`, `"b4600.."`: as `--llama-cpp`), `loader` (`"llama.cpp"`, `"sd.cpp"`, `"comfyui-gguf"`: as `--loader`), `name` (what the report calls a Blob or bytes), `with`
 *   (the models a projector, adapter or control vector pairs with),
 *   `folder` (files given together with it, standing for its folder),
 *   `httpTimeout`, `httpDeadline` (seconds), `retries`, `headers`,
 *   `fetch`, `signal`; `stats`, an object the call fills with what it
 *   cost (`rounds`, `bytesRead`: bytes held in memory, `requests`);
 *   `facts`, an object the call fills with what the metadata says besides
 *   the report (`fileType`: `general.file_type`; `templates`: each chat
 *   template's key and SHA-256); `fixable`, an array the call fills with
 *   the fixes `fix` would make of the findings without `unsafe` (planned
 *   from the metadata: nothing more is read; a fix with `applied` false is
 *   unsafe and held back).
 */
export async function validate(source, options = {}) {
  return validateInto(source, options, null);
}

async function validateInto(source, options, run) {
  await init();
  const opts = runOptions(options);
  const others = [...(options.with ?? []), ...(options.folder ?? [])];
  const all = [source, ...others];
  const names = all.map((s, i) => sourceName(s, options, i));
  const unreadable = (e) => {
    const message = e && e.message ? e.message : String(e);
    run?.addUnreadable(names[0], message);
    return JSON.parse(wasm.unreadableEntry(names[0], message, opts));
  };
  let readers;
  try {
    readers = await Promise.all(all.map((s, i) => open(s, names[i], options, i === 0)));
  } catch (e) {
    if (e instanceof GgufValidateError && e.kind === 'usage') throw e;
    return unreadable(e);
  }
  const reads = new wasm.Reads();
  try {
    addReaders(reads, readers);
    const nWith = (options.with ?? []).length;
    const withIds = Uint32Array.from({ length: nWith }, (_, k) => 1 + k);
    const folderIds = Uint32Array.from({ length: others.length - nWith }, (_, k) => 1 + nWith + k);
    const main = readers[0];
    const out = await rounds(reads, readers, () => {
      if (main.remote) reads.setRemoteCost(0, JSON.stringify(main.cost()));
      return reads.validate(0, withIds, folderIds, opts);
    }, options.stats);
    run?.add(reads);
    if (options.facts != null && out.facts != null) {
      options.facts.fileType = out.facts.file_type;
      options.facts.templates = out.facts.templates.map(([key, sha256]) => ({ key, sha256 }));
    }
    if (Array.isArray(options.fixable) && out.fixable != null) options.fixable.splice(0, options.fixable.length, ...out.fixable);
    return out.entry;
  } catch (e) {
    if (e instanceof GgufValidateError && e.kind === 'usage') throw e;
    return unreadable(e);
  } finally {
    reads.free();
  }
}

/**
 * Several files validated under one profile, whose outputs are rendered as
 * the command line renders them (`json`, `sarif`, `junit`, `jsonl`,
 * `github`, `human`). Call `free()` when done with it.
 */
export class ValidationRun {
  constructor(options = {}) {
    this.options = options;
    this.run = null;
    this.entries = [];
  }

  /** Validates one more file (options as for `validate`, the run's own first). */
  async validate(source, options = {}) {
    await init();
    if (this.run == null) this.run = new wasm.Run(runOptions(this.options));
    const entry = await validateInto(source, { ...this.options, ...options }, this.run);
    this.entries.push(entry);
    return entry;
  }

  /** The run's output in `format`, as `gguf-validate --format FORMAT` writes it. */
  async render(format) {
    await init();
    if (this.run == null) this.run = new wasm.Run(runOptions(this.options));
    try {
      return this.run.render(format);
    } catch (e) {
      throw usage(e && e.message ? e.message : String(e));
    }
  }

  free() {
    this.run?.free();
    this.run = null;
  }
}

// A file is fixed whole in the WebAssembly module's memory (4 GiB at most),
// which holds it and the fixed file: larger files are for the command line.
export const FIX_MAX_BYTES = 1536 * 1024 * 1024;
// The pieces a file is copied into the module in, and the fixed file out.
const FIX_PIECE = 16 << 20;

/** The whole of a local source, copied into the module piece by piece. */
async function fixInput(source) {
  let length;
  if (typeof Blob !== 'undefined' && source instanceof Blob) length = source.size;
  else if (source instanceof Uint8Array || source instanceof ArrayBuffer) length = source.byteLength;
  else throw usage('fix takes a File or Blob, a Uint8Array or ArrayBuffer (download a URL first)');
  if (length > FIX_MAX_BYTES) {
    throw new GgufValidateError('unreadable', `${length} bytes is more than fix holds in memory here (${FIX_MAX_BYTES}): use the command line's \`gguf-validate fix\``);
  }
  let input;
  try {
    input = new wasm.FixInput(length);
  } catch (e) {
    throw new GgufValidateError('unreadable', e && e.message ? e.message : String(e));
  }
  try {
    const bytes = source instanceof ArrayBuffer ? new Uint8Array(source) : source;
    for (let at = 0; at < length; at += FIX_PIECE) {
      const n = Math.min(FIX_PIECE, length - at);
      let piece;
      if (bytes instanceof Uint8Array) piece = bytes.subarray(at, at + n);
      else {
        piece = new Uint8Array(await bytes.slice(at, at + n).arrayBuffer());
        if (piece.byteLength !== n) throw new GgufValidateError('unreadable', 'the file changed while it was read');
      }
      input.push(piece);
    }
    return input;
  } catch (e) {
    input.free();
    throw e;
  }
}

/**
 * `fix`: the file with the fixes of its findings made (the command line's
 * `gguf-validate fix`), all in memory: safe fixes, and unsafe ones too with
 * `unsafe: true`. Resolves to `{blob, changed, fixes, changes, before,
 * after, valid, tensorData}`: `blob` is the fixed file (the input's bytes
 * when nothing was fixed), `fixes` each finding's fix (`applied` false: an
 * unsafe fix held back), `before` and `after` the reports, `valid` the
 * fixed file's verdict, `tensorData` the tensor data's SHA-256 before and
 * after. Rejects with a GgufValidateError (`invalid`: not a GGUF v2/v3
 * file whose metadata decodes, or a layout the fix cannot make;
 * `unreadable`: a file over `FIX_MAX_BYTES`, which the module's memory
 * cannot hold with its fixed file).
 *
 * @param source a File or Blob, a Uint8Array or ArrayBuffer (not a URL).
 * @param options as for `validate` (`profile`, `containerOnly`,
 *   `denyWarnings`, `llamaCpp`, `loader`), and `unsafe`.
 */
export async function fix(source, options = {}) {
  await init();
  const opts = runOptions(options);
  const input = await fixInput(source);
  let result;
  try {
    result = wasm.fix(input, opts, !!options.unsafe);
  } catch (e) {
    throw usage(e && e.message ? e.message : String(e));
  } finally {
    input.free();
  }
  try {
    const doc = JSON.parse(result.json);
    if (doc.error != null) throw new GgufValidateError(doc.kind, doc.error);
    const type = { type: 'application/octet-stream' };
    let blob;
    if (doc.changed) {
      // Piece by piece, each piece let go once the Blob holds it.
      blob = new Blob([], type);
      for (let at = 0; at < result.length; at += FIX_PIECE) blob = new Blob([blob, result.read(at, FIX_PIECE)], type);
    } else if (typeof Blob !== 'undefined' && source instanceof Blob) {
      blob = source;
    } else {
      blob = new Blob([source], type);
    }
    const t = doc.tensor_data;
    return {
      blob,
      changed: doc.changed,
      fixes: doc.fixes,
      changes: doc.changes,
      before: doc.before,
      after: doc.report,
      valid: doc.valid,
      tensorData: { algorithm: t.algorithm, before: t.before, after: t.after, unchanged: t.unchanged },
    };
  } finally {
    result.free();
  }
}

/**
 * `dump`: the file's header, metadata and tensor table as JSON (arrays
 * cut short unless `full`). Resolves to `{dump, complete}`; rejects with a
 * GgufValidateError (`unreadable`, or `invalid` when it is not GGUF).
 */
export async function dump(source, options = {}) {
  await init();
  const reader = await open(source, sourceName(source, options, 0), options);
  const reads = new wasm.Reads();
  try {
    addReaders(reads, [reader]);
    const out = await rounds(reads, [reader], () => reads.dump(0, !!options.full), options.stats);
    if (out.error != null) throw new GgufValidateError(out.kind, out.error);
    return { dump: out.dump, complete: out.complete };
  } finally {
    reads.free();
  }
}

/**
 * The URL read for `input` (an `hf://ORG/REPO/FILE[@REV]` name resolved to
 * the Hub's resolve URL) and the name reports show (its query redacted).
 */
export async function resolveUrl(input) {
  await init();
  try {
    const { url, shown } = JSON.parse(wasm.resolveUrl(input));
    return { url, shown };
  } catch (e) {
    throw usage(`${input}: ${e && e.message ? e.message : String(e)}`);
  }
}

/** The rule catalogue: `gguf-validate rules --format json`. */
export async function rules() {
  await init();
  return JSON.parse(wasm.rules());
}

/** Every ggml type: `{name, id, blockSize, typeSize}`. */
export async function ggmlTypes() {
  await init();
  return JSON.parse(wasm.ggmlTypes());
}

function numericsError(e) {
  return usage(e && e.message ? e.message : String(e));
}

/** Blocks of `type` (a ggml type name) to a Float32Array, bit-exact with ggml. */
export async function dequantize(type, data) {
  await init();
  const bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
  try {
    return wasm.dequantize(type, bytes);
  } catch (e) {
    throw numericsError(e);
  }
}

/**
 * Float32 values to blocks of `type`, byte for byte what the command line's
 * `quantize` writes (`ggml_quantize_chunk`): `nPerRow` values per row
 * (default: the importance matrix's row, or the whole input), `imatrix`
 * per-column importance for each of `options.experts` slices (default 1),
 * `options.reference` `'chunk'` (default) or `'row'` (`quantize_row_*_ref`).
 */
export async function quantize(type, data, nPerRow = undefined, imatrix = undefined, options = {}) {
  await init();
  const values = data instanceof Float32Array ? data : Float32Array.from(data);
  const { reference, experts } = options ?? {};
  try {
    return wasm.quantize(
      type,
      values,
      nPerRow ?? undefined,
      imatrix == null ? undefined : Float32Array.from(imatrix),
      reference ?? undefined,
      experts ?? undefined,
    );
  } catch (e) {
    throw numericsError(e);
  }
}
