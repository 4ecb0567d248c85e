// fix() against the command line's `gguf-validate fix` on every case of
// corpus/fixes/manifest.json: the same bytes as the case's fixed file
// (unsafe cases with `unsafe: true`), the same fixes, changes, reports and
// tensor-data digests as `fix --format json`; without `unsafe` an unsafe
// fix is listed as held back and the file comes back as it was; and
// validate's `fixable` plans, from the metadata alone, the fixes fix makes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, openAsBlob, readFileSync, rmSync, existsSync, writeFileSync, openSync, ftruncateSync, closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fix, validate, GgufValidateError, FIX_MAX_BYTES } from '../index.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '../../../..');
const bin = process.env.GGUF_VALIDATE_BIN ?? join(root, 'target/release/gguf-validate');
const dir = join(root, 'corpus/fixes');
const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'));
const cases = Object.entries(manifest.cases);

/** `gguf-validate fix FILE -o OUT [--unsafe] --format json`: its entry, and OUT's bytes when written. */
function cliFix(file, unsafe) {
  const tmp = mkdtempSync(join(tmpdir(), 'gguf-validate-fix-'));
  try {
    const out = join(tmp, 'out.gguf');
    let stdout;
    try {
      stdout = execFileSync(bin, ['fix', join(dir, file), '-o', out, ...(unsafe ? ['--unsafe'] : []), '--format', 'json'], { cwd: root });
    } catch (e) {
      // Exit 1: the result is invalid; the JSON is on stdout all the same.
      stdout = e.stdout;
    }
    const entry = JSON.parse(stdout.toString()).files[0];
    return { entry, bytes: existsSync(out) ? readFileSync(out) : null };
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

async function bytesOf(blob) {
  return Buffer.from(await blob.arrayBuffer());
}

function sameAsCli(got, want, what) {
  assert.deepEqual(got.fixes, want.fixes, `${what}: fixes`);
  assert.deepEqual(got.changes, want.changes, `${what}: changes`);
  assert.deepEqual(got.before, want.before, `${what}: the report before`);
  assert.deepEqual(got.after, want.report, `${what}: the report after`);
  assert.equal(got.valid, want.valid, `${what}: valid`);
  const t = want.tensor_data;
  if (want.written) {
    assert.deepEqual(got.tensorData, { algorithm: t.algorithm, before: t.before, after: t.after, unchanged: t.unchanged }, `${what}: tensor data`);
  } else {
    // The command line wrote nothing (the result still has errors), so it
    // hashed nothing after; fix() gives the input back, whose data is the same.
    assert.equal(got.changed, false, `${what}: the command line wrote nothing`);
    assert.deepEqual(got.tensorData, { algorithm: t.algorithm, before: t.before, after: t.before, unchanged: true }, `${what}: tensor data`);
  }
}

test('the manifest has safe, unsafe and boundary cases', () => {
  const kinds = new Set(cases.map(([, c]) => c.kind ?? 'boundary'));
  assert.deepEqual([...kinds].sort(), ['boundary', 'safe', 'unsafe']);
});

for (const [slug, c] of cases) {
  test(`${slug}: fix() is gguf-validate fix${c.kind === 'unsafe' ? ' --unsafe' : ''}`, async () => {
    const broken = readFileSync(join(dir, c.file));
    const unsafe = c.kind === 'unsafe';
    const got = await fix(await openAsBlob(join(dir, c.file)), { unsafe });
    const cli = cliFix(c.file, unsafe);
    sameAsCli(got, cli.entry, slug);
    const bytes = await bytesOf(got.blob);
    if (c.fixed != null) {
      assert.ok(bytes.equals(readFileSync(join(dir, c.fixed))), `${slug}: the bytes of ${c.fixed}`);
      assert.equal(got.changed, true);
      assert.ok(got.fixes.length > 0 && got.fixes.every((f) => f.applied), slug);
      assert.equal(got.tensorData.unchanged, true);
    } else {
      // A boundary case: nothing the fix can make; the input as it was.
      assert.ok(bytes.equals(broken), `${slug}: the input's bytes`);
      assert.equal(got.changed, false);
    }
    if (cli.bytes != null) assert.ok(bytes.equals(cli.bytes), `${slug}: the command line's output`);
    // Bytes in memory give what a Blob gives.
    const fromBytes = await fix(new Uint8Array(broken), { unsafe });
    assert.ok((await bytesOf(fromBytes.blob)).equals(bytes), `${slug}: from a Uint8Array`);
    assert.deepEqual(fromBytes.fixes, got.fixes);
    // validate plans what fix makes without unsafe, reading the metadata only.
    const fixable = [];
    await validate(await openAsBlob(join(dir, c.file)), { fixable });
    const safeOnly = unsafe ? await fix(new Uint8Array(broken)) : got;
    assert.deepEqual(fixable, safeOnly.fixes, `${slug}: validate's fixable`);
  });
}

test('without unsafe, an unsafe fix is held back: listed with applied false, the bytes unchanged', async () => {
  const unsafeCases = cases.filter(([, c]) => c.kind === 'unsafe');
  assert.ok(unsafeCases.length > 0);
  for (const [slug, c] of unsafeCases) {
    const broken = readFileSync(join(dir, c.file));
    const blob = await openAsBlob(join(dir, c.file));
    const got = await fix(blob);
    sameAsCli(got, cliFix(c.file, false).entry, slug);
    const held = got.fixes.filter((f) => f.kind === 'unsafe');
    assert.ok(held.length > 0 && held.every((f) => !f.applied), `${slug}: ${JSON.stringify(got.fixes)}`);
    assert.equal(got.changed, false, slug);
    assert.equal(got.blob, blob, `${slug}: the input itself comes back`);
    assert.ok((await bytesOf(got.blob)).equals(broken), slug);
    assert.ok(got.after.diagnostics.some((d) => d.rule === c.rule), `${slug}: its finding is still there`);
  }
});

test('a file with nothing to fix comes back as it was; not GGUF, a URL and a bad profile are refused', async () => {
  const tiny = readFileSync(join(root, 'corpus/samples/tiny-llama.gguf'));
  const got = await fix(tiny.buffer.slice(tiny.byteOffset, tiny.byteOffset + tiny.byteLength));
  assert.deepEqual(got.fixes, []);
  assert.equal(got.changed, false);
  assert.equal(got.valid, true);
  assert.ok((await bytesOf(got.blob)).equals(tiny));
  await assert.rejects(fix(new Uint8Array([1, 2, 3, 4])), (e) => e instanceof GgufValidateError && e.kind === 'invalid');
  await assert.rejects(fix('https://example.com/m.gguf'), (e) => e instanceof GgufValidateError && e.kind === 'usage');
  await assert.rejects(fix(tiny, { profile: 'lenient' }), (e) => e instanceof GgufValidateError && e.kind === 'usage');
});

test('a file read in several pieces is fixed whole; one over FIX_MAX_BYTES is refused before it is read', async () => {
  const tmp = mkdtempSync(join(tmpdir(), 'gguf-validate-fix-'));
  try {
    // trailing_bytes with 20 MiB more trailing bytes: the fix drops them all.
    const long = join(tmp, 'long.gguf');
    writeFileSync(long, Buffer.concat([readFileSync(join(dir, 'trailing_bytes.gguf')), Buffer.alloc(20 << 20, 7)]));
    const got = await fix(await openAsBlob(long));
    assert.ok((await bytesOf(got.blob)).equals(readFileSync(join(dir, 'trailing_bytes.fixed.gguf'))));
    assert.deepEqual(got.fixes.map((f) => f.rule), ['trailing-bytes']);
    // A sparse file: its size, nothing stored.
    const huge = join(tmp, 'huge.gguf');
    const fd = openSync(huge, 'w');
    ftruncateSync(fd, FIX_MAX_BYTES + 1);
    closeSync(fd);
    await assert.rejects(fix(await openAsBlob(huge)), (e) => e instanceof GgufValidateError && e.kind === 'unreadable' && /gguf-validate fix/.test(e.message));
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});
