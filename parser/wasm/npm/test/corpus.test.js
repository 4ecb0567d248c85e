// The package's report equals the command line's JSON entry on every
// corpus file, under each profile; files given together stand for their
// folder (a projector, adapter or control vector pairs with the models
// beside it, as the command line pairs it with its folder's).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { openAsBlob, readdirSync, statSync } from 'node:fs';
import { join, relative, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { validate } from '../index.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '../../../..');
const bin = process.env.GGUF_VALIDATE_BIN ?? join(root, 'target/release/gguf-validate');

function ggufFiles(dir) {
  const out = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...ggufFiles(p));
    else if (e.isFile() && e.name.toLowerCase().endsWith('.gguf')) out.push(p);
  }
  return out.sort();
}

const files = ggufFiles(join(root, 'corpus')).map((p) => relative(root, p));

function cliEntries(profile) {
  let out;
  try {
    out = execFileSync(bin, ['--format', 'json', '--profile', profile, ...files], { cwd: root, maxBuffer: 1 << 30 });
  } catch (e) {
    // Exit 1: some file is invalid; the JSON is on stdout all the same.
    out = e.stdout;
  }
  const byPath = new Map();
  for (const f of JSON.parse(out.toString()).files) {
    if (f.kind === 'split-set') continue;
    delete f.split_set;
    byPath.set(f.path, f);
  }
  return byPath;
}

const blobs = new Map();
for (const f of files) blobs.set(f, await openAsBlob(join(root, f)));
const byFolder = new Map();
for (const f of files) {
  const d = dirname(f);
  if (!byFolder.has(d)) byFolder.set(d, []);
  byFolder.get(d).push(f);
}

for (const profile of ['strict', 'spec', 'ggml']) {
  test(`every corpus file: the package's entry is the command line's (${profile})`, async () => {
    const cli = cliEntries(profile);
    assert.equal(cli.size, files.length);
    let compared = 0;
    let maxHeld = 0;
    for (const f of files) {
      const siblings = byFolder.get(dirname(f)).filter((s) => s !== f);
      const stats = {};
      const entry = await validate(blobs.get(f), {
        profile,
        name: f,
        folder: siblings.map((s) => blobs.get(s)),
        names: [f, ...siblings],
        stats,
      });
      assert.deepEqual(entry, cli.get(f), f);
      // Memory follows what was read, never more than the file.
      const given = [f, ...siblings].reduce((n, s) => n + statSync(join(root, s)).size, 0);
      assert.ok(stats.bytesRead <= given, `${f}: ${stats.bytesRead} bytes held of ${given}`);
      maxHeld = Math.max(maxHeld, stats.rounds);
      compared += 1;
    }
    assert.equal(compared, files.length);
    assert.ok(maxHeld <= 8, `a file took ${maxHeld} rounds`);
  });
}

test('bytes in memory give the report a Blob gives', async () => {
  const f = 'corpus/samples/tiny-llama.gguf';
  const bytes = new Uint8Array(await blobs.get(f).arrayBuffer());
  const a = await validate(bytes, { name: f });
  const b = await validate(blobs.get(f), { name: f });
  assert.deepEqual(a, b);
  assert.equal(a.valid, true);
});

test('loader judges against a loader as --loader does; a diffusion model is for stable-diffusion.cpp', async () => {
  const cases = [
    ['corpus/diffusion/flux__sdcpp_q8_0.gguf', null, 'sd.cpp'],
    ['corpus/diffusion/flux__sdcpp_q8_0.gguf', 'llama.cpp', 'llama.cpp'],
    ['corpus/gguf/y_diffusion_comfyui_orig_shape_u32.gguf', 'comfyui-gguf', 'comfyui-gguf'],
  ];
  for (const [f, loader, judged] of cases) {
    const blob = await openAsBlob(join(root, f));
    let out;
    try {
      out = execFileSync(bin, ['--format', 'json', ...(loader ? ['--loader', loader] : []), f], { cwd: root });
    } catch (e) {
      out = e.stdout;
    }
    const want = JSON.parse(out.toString()).files[0];
    const got = await validate(blob, { name: f, ...(loader ? { loader } : {}) });
    assert.deepEqual(got, want);
    assert.equal(got.summary.loader, judged);
  }
  const blob = await openAsBlob(join(root, 'corpus/samples/tiny-llama.gguf'));
  await assert.rejects(validate(blob, { loader: 'ollama' }), /llama\.cpp, sd\.cpp, comfyui-gguf/);
});

test('llamaCpp judges against llama.cpp releases as --llama-cpp does', async () => {
  const f = 'corpus/samples/tiny-llama.gguf';
  const blob = await openAsBlob(join(root, f));
  for (const releases of ['b4600', 'b3889..']) {
    let out;
    try {
      out = execFileSync(bin, ['--format', 'json', '--llama-cpp', releases, f], { cwd: root });
    } catch (e) {
      out = e.stdout;
    }
    const want = JSON.parse(out.toString()).files[0];
    const got = await validate(blob, { name: f, llamaCpp: releases });
    assert.deepEqual(got, want);
    assert.equal(got.summary.llama_cpp.judged_against[0], releases.replace('..', ''));
  }
  await assert.rejects(validate(blob, { name: f, llamaCpp: 'b1' }), /known releases/);
});
