// Types of the gguf-validate package (index.js).

/** What can be validated: a File or Blob, bytes, or an `http(s)://` or `hf://` URL. */
export type Source = Blob | Uint8Array | ArrayBuffer | string;

export type Profile = 'strict' | 'spec' | 'ggml';
export type Severity = 'error' | 'warning' | 'info';
export type OutputFormat = 'json' | 'jsonl' | 'sarif' | 'junit' | 'github' | 'human';

/** A loader a file is judged against. */
export type Loader = "llama.cpp" | "sd.cpp" | "comfyui-gguf";

export interface ValidateOptions {
  /** `strict` (default: what llama.cpp would crash on, misread or refuse), `spec`, `ggml`. */
  profile?: Profile;
  /** The container only (header, metadata, tensor table), not the model layer. */
  containerOnly?: boolean;
  /** Warnings make the file invalid. */
  denyWarnings?: boolean;
  /** Judge `strict` against this llama.cpp release too (`"b4600"`), or every known release from it (`"b4600.."`), as `--llama-cpp`. */
  llamaCpp?: string;
  /** Judge against this loader (`--loader`): `"llama.cpp"`, `"sd.cpp"` (stable-diffusion.cpp) or `"comfyui-gguf"`; default: the loader the file is for (`summary.loader`). */
  loader?: Loader;
  /** What the report calls a Blob or bytes (a File's own name otherwise). */
  name?: string;
  /** Names of the source, then of `with`, then of `folder`, in order. */
  names?: string[];
  /** The models a projector, LoRA adapter or control vector is paired with. */
  with?: Source[];
  /** Files given together with the source, standing for its folder (its models are paired with it). */
  folder?: Source[];
  /** Seconds one HTTP request may take, headers and body (default 30). */
  httpTimeout?: number;
  /** Seconds all reads of one URL may take (default 600). */
  httpDeadline?: number;
  /** Retries of a `429` or `5xx` answer (default 3). */
  retries?: number;
  /** Headers sent with every request (an `Authorization` token, say). */
  headers?: Record<string, string>;
  /** The `fetch` to use (default: the global one). */
  fetch?: typeof fetch;
  /** Cancels the reads of a URL. */
  signal?: AbortSignal;
  /** Filled with what the call cost. */
  stats?: Stats;
  /** Filled with what the metadata says besides the report. */
  facts?: Facts;
  /** Filled with the fixes `fix` would make of the findings without `unsafe` (planned from the metadata). */
  fixable?: Fix[];
}

export interface Facts {
  /** `general.file_type` (llama.cpp's `llama_ftype`), when a u32. */
  fileType?: number | null;
  /** Each chat template: its key and the SHA-256 of its text. */
  templates?: { key: string; sha256: string }[];
}

export interface Stats {
  /** Times the validation ran over what was read so far. */
  rounds?: number;
  /** Bytes read and held in memory (the metadata, never the whole file). */
  bytesRead?: number;
  /** HTTP requests sent. */
  requests?: number;
}

export interface Diagnostic {
  /** The rule's id (see `rules()` and the book's rule reference). */
  rule: string;
  severity: Severity;
  /** Byte offset in the file. */
  offset: number;
  length?: number;
  /** Field path, such as `kv[3] adapter.lora.alpha` or `tensors[12] blk.0.attn_q.weight`. */
  path: string;
  message: string;
  /** The index of the finding this one follows from. */
  caused_by?: number;
}

export interface Examined {
  /** `container`, `model`, `tokenizer`, `split`, `template`, `data`, `projector`, `adapter`, `control vector`, `pairing`. */
  layer: string;
  checked: boolean;
  note?: string;
}

export interface Summary {
  file_size: number;
  kv_count?: number;
  tensor_count?: number;
  alignment?: number;
  architecture?: string;
  data_offset?: number;
  data_size?: number;
  parameters?: number;
  tensor_types?: Record<string, number>;
  /** What was and was not examined. */
  examined: Examined[];
  remote?: { url: string; bytes_fetched: number; requests: number; range_requests: boolean; etag?: string; revision?: string; sha256?: string };
  /** Which llama.cpp releases load the file (a model or a projector). */
  llama_cpp?: { loads_from: string | null; loads_until: string | null; judged_against: string[]; because: string[] };
  /** The loader the file was judged for. */
  loader?: Loader;
  /** Rules of ggml's reader this file's loader reads past: at most warnings under `strict`. */
  tolerated?: string[];
  [key: string]: unknown;
}

/** A report: what the command line's `--format json` entry holds besides the file's name (`fix`'s reports before and after). */
export interface Report {
  valid: boolean;
  profile: Profile;
  format?: string;
  version?: number | null;
  byte_order?: string | null;
  summary?: Summary;
  diagnostics?: Diagnostic[];
  counts?: { errors: number; warnings: number; infos: number };
  suppressed?: Record<string, number>;
  [key: string]: unknown;
}

/** A file's entry: the command line's `--format json` entry for it. */
export interface FileReport extends Report {
  path: string;
  /** Why the file could not be read (then there is no summary). */
  error?: string;
}

/** One finding's fix. */
export interface Fix {
  /** The finding's rule. */
  rule: string;
  /** `safe`: every reader sees the same model afterwards; `unsafe`: made only with `unsafe: true`. */
  kind: 'safe' | 'unsafe';
  /** The finding's field path. */
  path: string;
  /** The value (or layout) before. */
  before: string;
  /** The value (or layout) after. */
  after: string;
  /** Made (false: an unsafe fix held back). */
  applied: boolean;
}

/** A typed metadata value, as `edit` and `fix` print it. */
export interface TypedValue {
  type: string;
  value: unknown;
}

export interface FixOptions extends Pick<ValidateOptions, 'profile' | 'containerOnly' | 'denyWarnings' | 'llamaCpp' | 'loader'> {
  /** Make unsafe fixes too (the command line's `--unsafe`). */
  unsafe?: boolean;
}

export interface FixResult {
  /** The fixed file (the input's bytes when nothing was fixed). */
  blob: Blob;
  /** Whether the fixed file differs from the input. */
  changed: boolean;
  /** Each finding's fix, held-back unsafe ones too. */
  fixes: Fix[];
  /** The metadata changes as made (`null`: the key was absent, or is removed). */
  changes: { key: string; before: TypedValue | null; after: TypedValue | null }[];
  /** The input's report. */
  before: Report;
  /** The fixed file's report. */
  after: Report;
  /** The fixed file's verdict. */
  valid: boolean;
  /** The SHA-256 of all tensor data before and after (a fix never changes it). */
  tensorData: { algorithm: 'sha256'; before: string | null; after: string | null; unchanged: boolean };
}

export interface Rule {
  id: string;
  group: string;
  description: string;
  citation: string;
  [key: string]: unknown;
}

export interface GgmlType {
  name: string;
  id: number;
  blockSize: number;
  typeSize: number;
}

export declare class GgufValidateError extends Error {
  readonly kind: 'usage' | 'unreadable' | 'invalid';
}

/** Loads the WebAssembly module (the other functions do it first). */
export declare function init(): Promise<void>;

/** Validates one GGUF file. A File or Blob costs its metadata's bytes, never its size. */
export declare function validate(source: Source, options?: ValidateOptions): Promise<FileReport>;

/** Several files under one profile, rendered as the command line renders them. */
export declare class ValidationRun {
  constructor(options?: ValidateOptions);
  readonly entries: FileReport[];
  validate(source: Source, options?: ValidateOptions): Promise<FileReport>;
  /** The run's output, as `gguf-validate --format FORMAT` writes it. */
  render(format: OutputFormat): Promise<string>;
  free(): void;
}

/** The largest file `fix` takes (it holds the file and the fixed file in the WebAssembly module's memory). */
export declare const FIX_MAX_BYTES: number;

/** The file with the fixes of its findings made, in memory (`gguf-validate fix`): safe fixes, unsafe ones with `unsafe: true`. */
export declare function fix(source: Blob | Uint8Array | ArrayBuffer, options?: FixOptions): Promise<FixResult>;

/** The file's header, metadata and tensor table (`gguf-validate dump --format json`). */
export declare function dump(
  source: Source,
  options?: Pick<ValidateOptions, 'name' | 'httpTimeout' | 'httpDeadline' | 'retries' | 'headers' | 'fetch' | 'signal' | 'stats'> & { full?: boolean },
): Promise<{ dump: Record<string, unknown>; complete: boolean }>;

/** The URL read for an input (`hf://` resolved) and the name reports show. */
export declare function resolveUrl(input: string): Promise<{ url: string; shown: string }>;

/** The rule catalogue (`gguf-validate rules --format json`). */
export declare function rules(): Promise<Rule[]>;

/** Every ggml type. */
export declare function ggmlTypes(): Promise<GgmlType[]>;

/** Blocks of a ggml type to float32, bit-exact with ggml. */
export declare function dequantize(type: string, data: Uint8Array | ArrayBuffer): Promise<Float32Array>;

/** Options of `quantize`. */
export interface QuantizeOptions {
  /** `'chunk'` (default): `ggml_quantize_chunk`; `'row'`: `quantize_row_*_ref` (no importance matrix). */
  reference?: 'chunk' | 'row';
  /** Expert slices in `imatrix` (default 1): the rows are split evenly between them. */
  experts?: number;
}

/**
 * Float32 values to blocks of a ggml type, byte for byte what the command line's `quantize`
 * writes (`ggml_quantize_chunk`). `nPerRow` defaults to the importance matrix's row, or the
 * whole input; `imatrix` holds one weight per column for each expert slice.
 */
export declare function quantize(
  type: string,
  data: Float32Array | number[],
  nPerRow?: number,
  imatrix?: Float32Array | number[],
  options?: QuantizeOptions,
): Promise<Uint8Array>;
