// The page's Web Worker: validates the files and URLs the page sends, one
// at a time, in a ValidationRun (whose JSON and SARIF the page downloads),
// reads the bytes around a finding for its hex view, and makes a dropped
// file's safe fixes (the fixed file never leaves the tab).
import { ValidationRun, resolveUrl, fix, FIX_MAX_BYTES } from './gguf-validate/index.js';

// The bytes shown around an offset.
const HEX_BEFORE = 32;
const HEX_AFTER = 64;

let run = null;
let runKey = null;
// What each result came from (a File, or a URL) and the options it was
// validated with, by result index.
const sources = [];
// Messages are handled one after another: a drop during a run waits.
let queue = Promise.resolve();

function post(msg) {
  self.postMessage(msg);
}

// One run per profile and loader: another choice starts a new one.
function runFor(profile, loader) {
  const key = `${profile} ${loader ?? ''}`;
  if (run == null || runKey !== key) {
    run?.free();
    run = new ValidationRun({ profile, ...(loader ? { loader } : {}) });
    runKey = key;
    sources.length = 0;
  }
  return run;
}

async function validateOne(source, options, what) {
  const facts = {};
  const stats = {};
  // The fixes `fix` would make, planned from the metadata read anyway.
  const fixable = [];
  const t0 = performance.now();
  const entry = await runFor(options.profile, options.loader).validate(source, { ...options, facts, stats, fixable });
  const ms = performance.now() - t0;
  const index = sources.length;
  sources.push({ source, profile: options.profile, loader: options.loader });
  post({ type: 'result', index, entry, facts, stats, ms, what, fixable, fixMax: FIX_MAX_BYTES });
}

async function onFiles({ files, profile, loader }) {
  const t0 = performance.now();
  for (let i = 0; i < files.length; i++) {
    post({ type: 'progress', text: `validating ${i + 1} of ${files.length}: ${files[i].name}` });
    // Files dropped together are one folder: a projector, adapter or
    // control vector pairs with the models among them.
    const folder = files.length > 1 ? files.filter((_, k) => k !== i) : [];
    await validateOne(files[i], { profile, ...(loader ? { loader } : {}), name: files[i].name, folder }, 'file');
  }
  const s = ((performance.now() - t0) / 1000).toFixed(2);
  post({ type: 'progress', text: `${files.length} ${files.length === 1 ? 'file' : 'files'} validated in ${s} s` });
}

async function onUrl({ url, profile, loader }) {
  post({ type: 'progress', text: `reading ${url.split('?')[0]}` });
  await validateOne(url, { profile, ...(loader ? { loader } : {}) }, 'url');
  post({ type: 'progress', text: 'done' });
}

async function onHex({ card, offset }) {
  const source = sources[card]?.source;
  if (source == null) return;
  const start = Math.max(0, offset - HEX_BEFORE);
  let bytes;
  if (typeof source === 'string') {
    // A URL: the reads of the validation are gone; one range request.
    try {
      const { url } = await resolveUrl(source);
      const res = await fetch(url, { headers: { Range: `bytes=${start}-${offset + HEX_AFTER - 1}` } });
      if (res.status !== 206 && res.status !== 200) throw new Error(`HTTP ${res.status}`);
      bytes = new Uint8Array(await res.arrayBuffer()).slice(0, HEX_BEFORE + HEX_AFTER);
    } catch (e) {
      post({ type: 'error', message: `hex view: ${e.message}` });
      return;
    }
  } else {
    const end = Math.min(source.size, offset + HEX_AFTER);
    bytes = new Uint8Array(await source.slice(start, end).arrayBuffer());
  }
  post({ type: 'hex', card, offset, start, bytes });
}

// A dropped file with its safe fixes made, read whole in this tab.
async function onFix({ card }) {
  const held = sources[card];
  if (held == null || typeof held.source === 'string') {
    post({ type: 'fixed', card, error: 'only a dropped file can be fixed here' });
    return;
  }
  try {
    const r = await fix(held.source, { profile: held.profile, ...(held.loader ? { loader: held.loader } : {}) });
    post({ type: 'fixed', card, blob: r.blob, changed: r.changed, fixes: r.fixes.filter((f) => f.applied), valid: r.valid });
  } catch (e) {
    post({ type: 'fixed', card, error: e && e.message ? e.message : String(e) });
  }
}

async function onRender({ id, format }) {
  const text = run == null ? await new ValidationRun({ profile: 'strict' }).render(format) : await run.render(format);
  post({ type: 'rendered', id, format, text });
}

self.addEventListener('message', (ev) => {
  const msg = ev.data;
  queue = queue.then(async () => {
    try {
      if (msg.type === 'files') await onFiles(msg);
      else if (msg.type === 'url') await onUrl(msg);
      else if (msg.type === 'hex') await onHex(msg);
      else if (msg.type === 'fix') await onFix(msg);
      else if (msg.type === 'render') await onRender(msg);
      else if (msg.type === 'clear') {
        run?.free();
        run = null;
        sources.length = 0;
      }
    } catch (e) {
      post({ type: 'error', message: e && e.message ? e.message : String(e) });
    }
  });
});
