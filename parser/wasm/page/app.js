// The page: files and URLs go to a Web Worker (worker.js), which validates
// them with the gguf-validate package; this thread only draws what comes
// back, so the page never freezes however many files are dropped.
const $ = (id) => document.getElementById(id);
const worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
const RULES_URL = '../book/rules.html';

const cards = new Map();
const totals = { files: 0, valid: 0, invalid: 0, unreadable: 0 };
const pendingRenders = new Map();
let renderId = 0;

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v == null) continue;
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children.flat(Infinity)) {
    if (c != null) e.append(c instanceof Node ? c : String(c));
  }
  return e;
}

function plural(n, one, many = `${one}s`) {
  return `${n.toLocaleString('en')} ${n === 1 ? one : many}`;
}

function bigNumber(n) {
  if (n >= 1e9) return `${(n / 1e9).toFixed(2)} billion`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)} million`;
  return n.toLocaleString('en');
}

function size(n) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u += 1;
  }
  return u === 0 ? `${n} B` : `${v.toFixed(1)} ${units[u]}`;
}

function profile() {
  return $('profile').value;
}

// The loader every file is judged against (`--loader`); null: the one each is for.
function loader() {
  return $('loader').value || null;
}

function validateFiles(files) {
  const list = [...files];
  if (list.length === 0) return;
  worker.postMessage({ type: 'files', files: list, profile: profile(), loader: loader() });
}

// ---- input ---------------------------------------------------------------

const drop = $('drop');
drop.addEventListener('dragover', (e) => {
  e.preventDefault();
  drop.classList.add('over');
});
drop.addEventListener('dragleave', () => drop.classList.remove('over'));
drop.addEventListener('drop', (e) => {
  e.preventDefault();
  drop.classList.remove('over');
  validateFiles(e.dataTransfer.files);
});
$('files').addEventListener('change', (e) => {
  validateFiles(e.target.files);
  e.target.value = '';
});
$('url-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const url = $('url').value.trim();
  if (url !== '') worker.postMessage({ type: 'url', url, profile: profile(), loader: loader() });
});
$('clear').addEventListener('click', () => {
  worker.postMessage({ type: 'clear' });
  cards.clear();
  Object.keys(totals).forEach((k) => { totals[k] = 0; });
  $('results').replaceChildren();
  $('totals').hidden = true;
  $('downloads').hidden = true;
  $('progress').textContent = '';
});

function download(format, name, type) {
  const id = ++renderId;
  pendingRenders.set(id, (text) => {
    const a = el('a', { href: URL.createObjectURL(new Blob([text], { type })), download: name });
    document.body.append(a);
    a.click();
    a.remove();
  });
  worker.postMessage({ type: 'render', id, format });
}
$('dl-json').addEventListener('click', () => download('json', 'gguf-validate.json', 'application/json'));
$('dl-sarif').addEventListener('click', () => download('sarif', 'gguf-validate.sarif', 'application/sarif+json'));

// ---- results -------------------------------------------------------------

function examinedLine(examined) {
  const done = examined.filter((e) => e.checked);
  const not = examined.filter((e) => !e.checked);
  return el('p', { class: 'examined' },
    el('strong', {}, 'Examined: '), done.map((e) => e.layer).join(', ') || 'nothing',
    not.length > 0 ? el('span', {}, '. ', el('strong', {}, 'Not examined: '),
      not.map((e, i) => [i > 0 ? '; ' : '', `${e.layer}${e.note ? ` (${e.note})` : ''}`])) : null,
    '.');
}

// Which llama.cpp releases load the file, as the command line's line says
// it: `from b4980 on (architecture `gemma3` since b4980)`.
function llamaCppText(l) {
  const window = l.loads_from != null
    ? (l.loads_until != null ? `from ${l.loads_from} to ${l.loads_until} (newer releases do not)` : `from ${l.loads_from} on`)
    : (l.loads_until != null ? `up to ${l.loads_until} (newer releases do not)` : 'no known release');
  const why = l.because.length > 0 ? ` (${l.because.join(', ')})` : '';
  return `${window}${why}: the releases whose loader takes its names, keys, tensors and shapes`;
}

// The program a file was judged for (`summary.loader`).
const LOADERS = {
  'llama.cpp': 'llama.cpp',
  'sd.cpp': 'stable-diffusion.cpp (a diffusion model)',
  'comfyui-gguf': 'ComfyUI-GGUF (a diffusion model)',
};

function summaryList(entry, facts) {
  const s = entry.summary;
  const rows = [
    ['format', `${entry.format ?? '?'}${entry.version != null ? ` v${entry.version}` : ''}${entry.byte_order ? `, ${entry.byte_order}` : ''}`],
    ['architecture', s.architecture ?? '(none)'],
    ['tensors', s.tensor_count != null ? s.tensor_count.toLocaleString('en') : null],
    ['parameters', s.parameters != null ? bigNumber(s.parameters) : null],
    ['tensor types', s.tensor_types ? Object.entries(s.tensor_types).map(([t, n]) => `${t} ${n}`).join(', ') : null],
    ['file type', facts?.fileType != null ? String(facts.fileType) : null],
    ['size', size(s.file_size)],
    ['metadata', s.data_offset != null ? `${plural(s.kv_count ?? 0, 'key')}, data at byte ${s.data_offset.toLocaleString('en')}` : null],
  ];
  for (const t of facts?.templates ?? []) rows.push([`template ${t.key.replace('tokenizer.chat_template', '') || '(default)'}`, `sha256 ${t.sha256}`]);
  if (s.remote) rows.push(['read', `${size(s.remote.bytes_fetched)} in ${plural(s.remote.requests, 'request')}`]);
  if (s.loader) rows.push(['loader', LOADERS[s.loader] ?? s.loader]);
  if (s.llama_cpp) rows.push(['llama.cpp', llamaCppText(s.llama_cpp)]);
  return el('dl', { class: 'summary' }, rows.filter(([, v]) => v != null).map(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]));
}

function findingItem(card, d, children) {
  const hexBox = el('div');
  const hexButton = el('button', {
    type: 'button',
    class: 'hex-button',
    onclick: () => {
      if (hexBox.firstChild) {
        hexBox.replaceChildren();
        return;
      }
      worker.postMessage({ type: 'hex', card: card.index, offset: d.offset });
      card.hexWaiting.set(d.offset, hexBox);
    },
  }, 'hex');
  return el('li', { class: 'finding', 'data-rule': d.rule },
    el('span', { class: `sev-${d.severity}` }, d.severity), ' ',
    el('a', { href: `${RULES_URL}#${d.rule}`, class: 'mono rule' }, d.rule), ' ',
    el('span', { class: 'where mono' }, `@${d.offset} (0x${d.offset.toString(16)})${d.path ? ` ${d.path}` : ''}`), ' ',
    hexButton,
    el('div', {}, d.message),
    hexBox,
    children.length > 0 ? el('ol', {}, children) : null);
}

/** Findings grouped by cause: each root finding with the ones that follow from it. */
function findingsTree(card, diagnostics) {
  const kids = diagnostics.map(() => []);
  const roots = [];
  diagnostics.forEach((d, i) => {
    if (d.caused_by != null && d.caused_by !== i && kids[d.caused_by] != null) kids[d.caused_by].push(i);
    else roots.push(i);
  });
  const item = (i, depth) => findingItem(card, diagnostics[i], depth > 8 ? [] : kids[i].map((k) => item(k, depth + 1)));
  return el('ol', { class: 'findings' }, roots.map((i) => item(i, 0)));
}

// `model.gguf` to `model.fixed.gguf`.
function fixedName(name) {
  const base = name.split(/[\\/]/).pop();
  return `${base.toLowerCase().endsWith('.gguf') ? base.slice(0, -5) : base}.fixed.gguf`;
}

// A dropped file whose findings have safe fixes: a button that makes them
// in the worker and downloads the fixed file (nothing is uploaded).
function fixLine(card, entry, fixable, fixMax) {
  const safe = fixable.filter((f) => f.applied);
  const rules = [...new Set(safe.map((f) => f.rule))];
  const what = `${plural(safe.length, 'safe fix', 'safe fixes')} (${rules.join(', ')})`;
  if (entry.summary.file_size > fixMax) {
    return el('p', { class: 'fix' }, el('span', { class: 'muted' },
      `${what}: too large to fix in this tab (it holds the file twice); the command line makes them: `,
      el('code', {}, `gguf-validate fix ${entry.path} -o ${fixedName(entry.path)}`)));
  }
  const note = el('span', { class: 'muted fix-note' });
  const button = el('button', {
    type: 'button',
    class: 'fix-button',
    title: safe.map((f) => `${f.rule} ${f.path}: ${f.before} -> ${f.after}`).join('\n'),
    onclick: () => {
      button.disabled = true;
      note.textContent = ' fixing…';
      card.onFixed = (msg) => {
        button.disabled = false;
        if (msg.error != null) {
          note.textContent = ` ${msg.error}`;
        } else if (!msg.changed) {
          note.textContent = ' nothing to fix without unsafe fixes (the command line: gguf-validate fix --unsafe)';
        } else {
          note.textContent = ` ${plural(msg.fixes.length, 'fix', 'fixes')} made; the fixed file is ${msg.valid ? 'valid' : 'still invalid'}`;
          const a = el('a', { href: URL.createObjectURL(msg.blob), download: fixedName(entry.path) });
          document.body.append(a);
          a.click();
          a.remove();
          setTimeout(() => URL.revokeObjectURL(a.href), 60000);
        }
      };
      worker.postMessage({ type: 'fix', card: card.index });
    },
  }, 'Download fixed file');
  return el('p', { class: 'fix' }, button, el('span', { class: 'muted' }, ` ${what}, made in this tab; tensor data unchanged.`), note);
}

function showResult(msg) {
  const { index, entry, facts, stats, ms, what, fixable, fixMax } = msg;
  const kind = entry.error != null ? 'unreadable' : entry.valid ? 'valid' : 'invalid';
  totals.files += 1;
  totals[kind] += 1;
  const card = { index, hexWaiting: new Map() };
  cards.set(index, card);
  const body = [];
  if (entry.error != null) {
    body.push(el('p', { class: 'error' }, entry.error));
  } else {
    const c = entry.counts;
    body.push(el('p', {}, `${plural(c.errors, 'error')}, ${plural(c.warnings, 'warning')}, ${plural(c.infos, 'info', 'infos')} under ${entry.profile}`,
      el('span', { class: 'muted' }, ` (${ms.toFixed(0)} ms)`)));
    body.push(examinedLine(entry.summary.examined));
    body.push(summaryList(entry, facts));
    if (what === 'file' && (fixable ?? []).some((f) => f.applied)) body.push(fixLine(card, entry, fixable, fixMax));
    if (entry.diagnostics.length > 0) body.push(findingsTree(card, entry.diagnostics));
  }
  const li = el('li', { class: `card ${kind}`, 'data-verdict': kind, 'data-path': entry.path, 'data-bytes-read': stats?.bytesRead },
    el('h2', {}, el('span', { class: `verdict ${kind}` }, kind), entry.path), body);
  $('results').append(li);
  $('totals').hidden = false;
  $('totals').textContent = `${plural(totals.files, 'file')}: ${totals.valid} valid, ${totals.invalid} invalid, ${totals.unreadable} unreadable`;
  $('downloads').hidden = false;
}

function showHex({ card, offset, start, bytes }) {
  const box = cards.get(card)?.hexWaiting.get(offset);
  if (box == null) return;
  const lines = [];
  for (let row = 0; row < bytes.length; row += 16) {
    const at = start + row;
    const line = [el('span', { class: 'muted' }, at.toString(16).padStart(8, '0')), '  '];
    for (let i = row; i < Math.min(row + 16, bytes.length); i++) {
      const hex = bytes[i].toString(16).padStart(2, '0');
      line.push(start + i === offset ? el('mark', {}, hex) : hex, ' ');
    }
    const text = [...bytes.slice(row, row + 16)].map((b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.')).join('');
    line.push(' '.repeat(3 * (16 - Math.min(16, bytes.length - row)) + 1), text, '\n');
    lines.push(line);
  }
  box.replaceChildren(el('pre', { class: 'hex' }, lines.flat()));
}

worker.addEventListener('message', (ev) => {
  const msg = ev.data;
  if (msg.type === 'result') showResult(msg);
  else if (msg.type === 'progress') $('progress').textContent = msg.text;
  else if (msg.type === 'hex') showHex(msg);
  else if (msg.type === 'fixed') cards.get(msg.card)?.onFixed?.(msg);
  else if (msg.type === 'rendered') {
    const done = pendingRenders.get(msg.id);
    pendingRenders.delete(msg.id);
    done?.(msg.text);
  } else if (msg.type === 'error') $('progress').textContent = msg.message;
});
worker.addEventListener('error', (e) => {
  $('progress').textContent = `the validator could not start: ${e.message ?? 'unknown error'}`;
});

// For tests and scripts: the run's output as the command line writes it.
window.ggufValidateRender = (format) => new Promise((resolve) => {
  const id = ++renderId;
  pendingRenders.set(id, resolve);
  worker.postMessage({ type: 'render', id, format });
});
