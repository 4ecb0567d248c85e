// Benchmarks of the WebAssembly build, side by side in one run on the same
// machine: a file's metadata validated by the npm package in Node and in
// headless Chromium (a File from an <input>, in the page's own module), the
// native command line on the same file (its whole process), and
// @huggingface/gguf 0.4.6 parsing the same file in Node (it parses, it does
// not validate); the .wasm's size raw and gzipped, and the page's time to
// first verdict after files are given. Minima and medians of `--runs`.
//
//   node parser/wasm/bench.mjs --file GEMMA.gguf [--runs 21] [--bin target/release/gguf-validate]
//
// Needs `parser/wasm/build.sh` run and `npm ci` in parser/wasm/npm.
import { execFileSync } from 'node:child_process';
import { openAsBlob, readFileSync, existsSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { createServer } from 'node:http';
import { join, dirname, extname, normalize, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '../..');
const { values: args } = parseArgs({
  options: {
    file: { type: 'string' },
    runs: { type: 'string', default: '21' },
    bin: { type: 'string', default: join(root, 'target/release/gguf-validate') },
    chromium: { type: 'string', default: '/usr/bin/chromium' },
    json: { type: 'string' },
  },
});
if (args.file == null) {
  console.error('--file FILE.gguf is needed (gemma-3-270m: $GGUF_VALIDATE_GEMMA)');
  process.exit(2);
}
const file = resolve(args.file);
const runs = Number(args.runs);
const require = createRequire(join(here, 'npm/package.json'));

function stats(samples) {
  const s = [...samples].sort((a, b) => a - b);
  return { min: s[0], median: s[Math.floor(s.length / 2)], runs: s.length };
}

async function timed(fn) {
  const out = [];
  await fn(); // warm-up
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await fn();
    out.push(performance.now() - t0);
  }
  return stats(out);
}

const results = {};
const { validate } = await import('./npm/index.js');

// Node: the package over a Blob of the file (only its metadata is read).
const blob = await openAsBlob(file);
results.node = await timed(() => validate(blob));
const check = await validate(blob);
results.verdict = check.valid;

// The native command line: the whole process per file.
results.cli = await timed(async () => {
  try {
    execFileSync(args.bin, ['--quiet', file], { stdio: 'ignore' });
  } catch {
    // Exit 1 on an invalid file: timed all the same.
  }
});

// @huggingface/gguf 0.4.6 in Node: parsing only (no validation).
const hf = await import(require.resolve('@huggingface/gguf'));
results.hf = await timed(() => hf.gguf(file, { allowLocalFile: true, computeParametersCount: false }));

// Sizes.
const wasm = readFileSync(join(here, 'npm/wasm/gguf_validate_wasm_bg.wasm'));
results.wasmBytes = wasm.length;
results.wasmGzip = gzipSync(wasm, { level: 9 }).length;

// Headless Chromium: the package in the page's module, over a File.
const site = join(root, 'target/wasm-page');
if (existsSync(join(site, 'index.html')) && existsSync(args.chromium)) {
  const types = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.wasm': 'application/wasm' };
  const server = createServer((req, res) => {
    const p = normalize(join(site, new URL(req.url, 'http://x').pathname));
    if (!p.startsWith(site) || !existsSync(p)) return res.writeHead(404).end();
    res.writeHead(200, { 'content-type': types[extname(p)] ?? 'application/octet-stream' }).end(readFileSync(p));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const { chromium } = require('playwright-core');
  const browser = await chromium.launch({
    executablePath: args.chromium,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
  });
  try {
    const page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${server.address().port}/index.html`);
    // Time to first verdict: files given to the page, the first card drawn.
    const firstVerdict = [];
    for (let i = 0; i < Math.min(runs, 7); i++) {
      await page.evaluate(() => document.getElementById('clear').click());
      const t0 = Date.now();
      await page.setInputFiles('#files', file);
      await page.waitForSelector('#results .card');
      firstVerdict.push(Date.now() - t0);
    }
    results.pageFirstVerdict = stats(firstVerdict);
    await page.evaluate(() => {
      const input = document.createElement('input');
      input.type = 'file';
      input.id = 'bench-input';
      document.body.append(input);
    });
    await page.setInputFiles('#bench-input', file);
    const samples = await page.evaluate(async (n) => {
      const { validate: v } = await import('./gguf-validate/index.js');
      const f = document.getElementById('bench-input').files[0];
      await v(f);
      const out = [];
      for (let i = 0; i < n; i++) {
        const t0 = performance.now();
        await v(f);
        out.push(performance.now() - t0);
      }
      return out;
    }, runs);
    results.chromium = stats(samples);
  } finally {
    await browser.close();
    server.close();
  }
}

const ms = (s) => (s == null ? 'n/a' : `${s.min.toFixed(1)} / ${s.median.toFixed(1)} ms`);
console.log(`file: ${file} (${(blob.size / 2 ** 20).toFixed(1)} MiB), verdict ${results.verdict ? 'valid' : 'invalid'}; ${runs} runs, min / median`);
console.log('| what | time |');
console.log('|---|---|');
console.log(`| npm package in Node (validates) | ${ms(results.node)} |`);
console.log(`| npm package in headless Chromium (validates) | ${ms(results.chromium)} |`);
console.log(`| native command line, whole process (validates) | ${ms(results.cli)} |`);
console.log(`| @huggingface/gguf 0.4.6 in Node (parses only) | ${ms(results.hf)} |`);
console.log(`| page: files given to first verdict (Chromium) | ${ms(results.pageFirstVerdict)} |`);
console.log(`| .wasm | ${(results.wasmBytes / 1e6).toFixed(2)} MB, ${(results.wasmGzip / 1e6).toFixed(2)} MB gzipped |`);
if (args.json) {
  const { writeFileSync } = await import('node:fs');
  writeFileSync(args.json, JSON.stringify(results, null, 1));
}
