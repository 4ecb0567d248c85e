// The page in a real browser: Debian's chromium driven by playwright-core.
// Files are given with setInputFiles (a corpus file, several at once, a
// 2 GiB sparse file), URLs typed in (a range server that sends CORS headers
// and one that does not); verdicts and findings must be the command line's,
// the page's counts its JSON's, a fixed file's download the corpus's fixed
// file, and the console free of errors. Screenshots
// go to target/wasm-page-artifacts/ (CI keeps them).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync, copyFileSync, mkdirSync, openSync, writeSync, ftruncateSync, closeSync, existsSync, rmSync } from 'node:fs';
import { join, dirname, extname, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { rangeServer } from '../../npm/test/range-server.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '../../../..');
const site = join(root, 'target/wasm-page');
const artifacts = join(root, 'target/wasm-page-artifacts');
const bin = process.env.GGUF_VALIDATE_BIN ?? join(root, 'target/release/gguf-validate');
const require = createRequire(join(here, '../../npm/package.json'));
const { chromium } = require('playwright-core');
const executablePath = process.env.GGUF_CHROMIUM ?? '/usr/bin/chromium';

const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.wasm': 'application/wasm', '.json': 'application/json' };

function staticServer(dir) {
  const server = createServer((req, res) => {
    const path = normalize(join(dir, decodeURIComponent(new URL(req.url, 'http://x').pathname)));
    const file = path.endsWith('/') ? join(path, 'index.html') : path;
    if (!file.startsWith(dir) || !existsSync(file)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' });
    res.end(readFileSync(file));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ base: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((r) => server.close(r)) })));
}

function cli(paths) {
  let out;
  try {
    out = execFileSync(bin, ['--format', 'json', ...paths], { cwd: root, maxBuffer: 1 << 28 });
  } catch (e) {
    out = e.stdout;
  }
  return JSON.parse(out.toString());
}

let browser;
let pageServer;
let withCors;
let withoutCors;
const sparse = join(root, 'target/wasm-page-artifacts/sparse-2gib.gguf');

before(async () => {
  assert.ok(existsSync(join(site, 'index.html')), 'build the page first: parser/wasm/build.sh');
  mkdirSync(artifacts, { recursive: true });
  // A valid model followed by a hole: 2 GiB on disk as the size, a few KiB stored.
  const fd = openSync(sparse, 'w');
  writeSync(fd, readFileSync(join(root, 'corpus/samples/tiny-llama.gguf')));
  ftruncateSync(fd, 2 ** 31);
  closeSync(fd);
  pageServer = await staticServer(site);
  withCors = await rangeServer({ root: join(root, 'corpus'), cors: true });
  withoutCors = await rangeServer({ root: join(root, 'corpus'), cors: false });
  browser = await chromium.launch({
    executablePath,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
});

after(async () => {
  await browser?.close();
  await pageServer?.close();
  await withCors?.close();
  await withoutCors?.close();
  rmSync(sparse, { force: true });
});

async function openPage() {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const errors = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`${pageServer.base}/index.html`);
  return { page, errors };
}

async function cardsOf(page, n) {
  await page.waitForFunction((k) => document.querySelectorAll('#results .card').length >= k, n, { timeout: 60000 });
  return page.$$eval('#results .card', (cards) => cards.map((c) => ({
    path: c.dataset.path,
    verdict: c.dataset.verdict,
    bytesRead: Number(c.dataset.bytesRead),
    rules: [...c.querySelectorAll('.finding')].map((f) => f.dataset.rule),
    links: [...c.querySelectorAll('a.rule')].map((a) => a.getAttribute('href')),
    text: c.textContent,
  })));
}

test('dropped corpus files: the command line\'s verdicts and findings, counts equal to the JSON, a hex view', async () => {
  const files = ['corpus/gguf/i_adapter_alpha_u32.gguf', 'corpus/samples/tiny-llama.gguf', 'corpus/gguf/n_tensor_data_overlap.gguf', 'corpus/gguf/i_template_exec_os_system.gguf', 'corpus/diffusion/flux__issue53_two_tensors.gguf'];
  const { page, errors } = await openPage();
  await page.setInputFiles('#files', files.map((f) => join(root, f)));
  const cards = await cardsOf(page, files.length);
  // Files dropped together are one folder: the command line on a folder
  // holding the same files.
  const folder = join(artifacts, 'dropped');
  rmSync(folder, { recursive: true, force: true });
  mkdirSync(folder, { recursive: true });
  files.forEach((f) => copyFileSync(join(root, f), join(folder, f.split('/').pop())));
  const expected = cli(files.map((f) => join(folder, f.split('/').pop()))).files;
  for (const [i, f] of files.entries()) {
    const name = f.split('/').pop();
    const card = cards.find((c) => c.path === name);
    assert.ok(card, `no card for ${name}`);
    const want = expected[i];
    assert.equal(card.verdict, want.valid ? 'valid' : 'invalid', name);
    assert.deepEqual(card.rules, want.diagnostics.map((d) => d.rule), name);
    for (const d of want.diagnostics) assert.ok(card.links.includes(`../book/rules.html#${d.rule}`), d.rule);
    // Which llama.cpp releases load it, as its JSON says.
    const l = want.summary.llama_cpp;
    if (l) assert.ok(card.text.includes(`llama.cppfrom ${l.loads_from} on`), `${name}: ${card.text}`);
    // The loader it was judged for: a diffusion model is stable-diffusion.cpp's.
    if (want.summary.loader === 'sd.cpp') assert.ok(card.text.includes('loaderstable-diffusion.cpp (a diffusion model)'), `${name}: ${card.text}`);
  }
  assert.ok(cards.find((c) => c.path === 'flux__issue53_two_tensors.gguf').rules.includes('diffusion-crash'));
  await page.waitForFunction(() => /files validated/.test(document.getElementById('progress').textContent));
  // The page's counts are its JSON's.
  const json = JSON.parse(await page.evaluate(() => window.ggufValidateRender('json')));
  const totals = await page.textContent('#totals');
  assert.equal(totals, `${json.totals.files} files: ${json.totals.valid} valid, ${json.totals.invalid} invalid, ${json.totals.unreadable} unreadable`);
  assert.deepEqual(json.files.map((f) => f.diagnostics.map((d) => d.rule)), expected.map((f) => f.diagnostics.map((d) => d.rule)));
  // SARIF download: one result per finding.
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#dl-sarif')]);
  const sarif = JSON.parse(readFileSync(await download.path(), 'utf8'));
  assert.equal(sarif.runs[0].results.length, expected.reduce((n, f) => n + f.diagnostics.length, 0));
  // The hex view around a finding's offset marks its byte.
  const adapterCard = page.locator('#results .card[data-path="i_adapter_alpha_u32.gguf"]');
  await adapterCard.locator('.hex-button').first().click();
  await adapterCard.locator('pre.hex mark').waitFor();
  const marked = await adapterCard.locator('pre.hex mark').textContent();
  const offset = expected[0].diagnostics[0].offset;
  assert.equal(marked, readFileSync(join(root, files[0]))[offset].toString(16).padStart(2, '0'));
  await page.screenshot({ path: join(artifacts, 'page-files.png'), fullPage: true });
  assert.deepEqual(errors, []);
  await page.close();
});

test('a 2 GiB sparse file costs its metadata, and gets the command line\'s verdict', async () => {
  const { page, errors } = await openPage();
  const t0 = Date.now();
  await page.setInputFiles('#files', sparse);
  const [card] = await cardsOf(page, 1);
  const firstVerdictMs = Date.now() - t0;
  const want = cli([sparse]).files[0];
  assert.equal(card.verdict, want.valid ? 'valid' : 'invalid');
  assert.deepEqual(card.rules, want.diagnostics.map((d) => d.rule));
  assert.ok(card.bytesRead < 8 << 20, `${card.bytesRead} bytes read of a 2 GiB file`);
  assert.ok(card.text.includes('2.0 GiB'));
  writeArtifact('sparse.json', { firstVerdictMs, bytesRead: card.bytesRead });
  assert.deepEqual(errors, []);
  await page.close();
});

test('a URL on a server that sends CORS headers is validated; one that does not is explained', async () => {
  const { page, errors } = await openPage();
  await page.fill('#url', `${withCors.base}/samples/tiny-llama.gguf`);
  await page.click('#url-form button');
  const [ok] = await cardsOf(page, 1);
  assert.equal(ok.verdict, 'valid');
  assert.match(ok.text, /in 1 request/);
  await page.fill('#url', `${withoutCors.base}/samples/tiny-llama.gguf`);
  await page.click('#url-form button');
  const [, refused] = await cardsOf(page, 2);
  assert.equal(refused.verdict, 'unreadable');
  assert.match(refused.text, /CORS/);
  await page.screenshot({ path: join(artifacts, 'page-urls.png'), fullPage: true });
  // The browser itself logs the blocked reads; nothing else.
  assert.deepEqual(errors.filter((e) => !/CORS|Failed to load resource|net::ERR_FAILED/.test(e)), []);
  await page.close();
});

test('a file with a safe fix gets a button that downloads the fixed file, made in the tab; others get none', async () => {
  const files = ['corpus/fixes/trailing_bytes.gguf', 'corpus/samples/tiny-llama.gguf', 'corpus/fixes/key_duplicate_differs.gguf'];
  const { page, errors } = await openPage();
  // Nothing leaves the tab: every request the page makes is to its own server.
  const requests = [];
  page.on('request', (r) => requests.push(r.url()));
  await page.setInputFiles('#files', files.map((f) => join(root, f)));
  await cardsOf(page, files.length);
  const card = (name) => page.locator(`#results .card[data-path="${name}"]`);
  assert.equal(await card('trailing_bytes.gguf').locator('.fix-button').count(), 1);
  // No finding; and only an unsafe fix (a duplicate key whose values differ).
  assert.equal(await card('tiny-llama.gguf').locator('.fix-button').count(), 0);
  assert.equal(await card('key_duplicate_differs.gguf').locator('.fix-button').count(), 0);
  const [download] = await Promise.all([page.waitForEvent('download'), card('trailing_bytes.gguf').locator('.fix-button').click()]);
  assert.equal(download.suggestedFilename(), 'trailing_bytes.fixed.gguf');
  const got = readFileSync(await download.path());
  assert.ok(got.equals(readFileSync(join(root, 'corpus/fixes/trailing_bytes.fixed.gguf'))), `${got.length} bytes downloaded`);
  await card('trailing_bytes.gguf').locator('.fix-note', { hasText: 'made' }).waitFor();
  assert.match(await card('trailing_bytes.gguf').locator('.fix-note').textContent(), /1 fix made; the fixed file is valid/);
  // Over what the tab can hold: the command line to run instead of the button.
  const big = join(artifacts, 'trailing-2gib.gguf');
  const fd = openSync(big, 'w');
  writeSync(fd, readFileSync(join(root, 'corpus/fixes/trailing_bytes.gguf')));
  ftruncateSync(fd, 2 ** 31);
  closeSync(fd);
  try {
    await page.setInputFiles('#files', big);
    await cardsOf(page, files.length + 1);
    assert.equal(await card('trailing-2gib.gguf').locator('.fix-button').count(), 0);
    assert.match(await card('trailing-2gib.gguf').locator('p.fix').textContent(), /too large to fix in this tab.*gguf-validate fix trailing-2gib\.gguf -o trailing-2gib\.fixed\.gguf/);
  } finally {
    rmSync(big, { force: true });
  }
  assert.deepEqual(requests.filter((u) => !u.startsWith(pageServer.base) && !u.startsWith('blob:') && !u.startsWith('data:')), []);
  await page.screenshot({ path: join(artifacts, 'page-fix.png'), fullPage: true });
  assert.deepEqual(errors, []);
  await page.close();
});

function writeArtifact(name, value) {
  mkdirSync(artifacts, { recursive: true });
  writeFileSync(join(artifacts, name), JSON.stringify(value, null, 1));
}
