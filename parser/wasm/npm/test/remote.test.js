// URLs: read in ranges as the native reader reads them. On a loopback
// range server, every corpus file's entry (what it cost included: the same
// requests and bytes) equals the command line's for the same URL.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { readdirSync, existsSync } from 'node:fs';
import { join, relative, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { validate, dump } from '../index.js';
import { rangeServer } from './range-server.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '../../../..');
const bin = process.env.GGUF_VALIDATE_BIN ?? join(root, 'target/release/gguf-validate');
const corpus = join(root, 'corpus');

function ggufFiles(dir) {
  const out = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...ggufFiles(p));
    else if (e.isFile() && e.name.endsWith('.gguf')) out.push(p);
  }
  return out.sort();
}

async function cli(args) {
  try {
    return JSON.parse((await promisify(execFile)(bin, ['--format', 'json', ...args], { maxBuffer: 1 << 30 })).stdout);
  } catch (e) {
    if (e.stdout) return JSON.parse(e.stdout);
    throw new Error(`the command line failed: ${e.stderr}`);
  }
}

let server;
before(async () => {
  server = await rangeServer({ root: corpus, faults: { '/gone.gguf': 404, '/busy.gguf': 503 } });
});
after(async () => server.close());

test('every corpus file by URL: the entry is the command line\'s, requests and bytes included', async () => {
  const urls = ggufFiles(corpus).map((p) => `${server.base}/${relative(corpus, p)}`);
  const files = (await cli(urls)).files.filter((f) => f.kind !== 'split-set');
  // A shard's entry names its split set, which the package does not validate.
  files.forEach((f) => delete f.split_set);
  const byUrl = new Map(files.map((f) => [f.path, f]));
  assert.equal(byUrl.size, urls.length);
  for (const url of urls) {
    const entry = await validate(url);
    assert.deepEqual(entry, byUrl.get(url), url);
  }
});

test('a URL that is not there, or a server that keeps failing, is unreadable with the reason', async () => {
  const gone = await validate(`${server.base}/gone.gguf`);
  assert.equal(gone.valid, false);
  assert.match(gone.error, /404/);
  const busy = await validate(`${server.base}/busy.gguf`, { retries: 1 });
  assert.equal(busy.valid, false);
  assert.match(busy.error, /503/);
  const before = server.log.filter((r) => r.path === '/busy.gguf').length;
  assert.equal(before, 2, 'one request and one retry');
  const refused = await validate('http://127.0.0.1:9/m.gguf');
  assert.match(refused.error, /could not be reached/);
});

test('a timeout bounds a request that never answers, tried again once', async () => {
  const { createServer } = await import('node:http');
  let requests = 0;
  const silent = createServer(() => { requests += 1; });
  await new Promise((r) => silent.listen(0, '127.0.0.1', r));
  const t0 = Date.now();
  const entry = await validate(`http://127.0.0.1:${silent.address().port}/m.gguf`, { httpTimeout: 0.5 });
  const took = Date.now() - t0;
  silent.closeAllConnections();
  await new Promise((r) => silent.close(r));
  assert.equal(entry.valid, false);
  assert.match(entry.error, /timed out/);
  assert.equal(requests, 2);
  assert.ok(took >= 1000 && took < 5000, `${took} ms`);
});

test('hf:// names resolve to the Hub\'s resolve URL, shown without their query', async () => {
  let asked = null;
  const fetch = async (url) => {
    asked = url;
    throw new TypeError('offline');
  };
  const entry = await validate('hf://org/repo/m.gguf?token=secret', { fetch });
  assert.ok(asked.startsWith('https://huggingface.co/org/repo/resolve/'), asked);
  assert.ok(!entry.path.includes('secret'), entry.path);
});

test('dump by URL reads the metadata only', async () => {
  const d = await dump(`${server.base}/samples/tiny-llama.gguf`);
  assert.equal(d.complete, true);
  assert.equal(d.dump.format, 'gguf');
  assert.ok(d.dump.tensor_count > 0);
});

test('gemma-3-270m by URL costs what the command line\'s read costs', { skip: !existsSync(process.env.GGUF_VALIDATE_GEMMA ?? '/nonexistent') }, async () => {
  const gemma = process.env.GGUF_VALIDATE_GEMMA;
  const s = await rangeServer({ root: dirname(gemma) });
  try {
    const url = `${s.base}/${gemma.split('/').pop()}`;
    const stats = {};
    const entry = await validate(url, { stats });
    const c = (await cli([url])).files[0];
    assert.deepEqual(entry, c);
    assert.ok(entry.summary.remote.bytes_fetched < 8 << 20, 'the metadata, not the 253 MB');
    assert.equal(stats.requests, c.summary.remote.requests);
  } finally {
    await s.close();
  }
});
