// `quantize` is the command line's `quantize`: both call one function of
// gguf-numerics (`quantize_tensor`), so on the same seeded input every ggml
// type gives the same bytes, with and without a row length, an importance
// matrix and the row reference, and both refuse the same cases.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ggmlTypes, quantize } from '../index.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '../../../..');
const bin = process.env.GGUF_VALIDATE_BIN ?? join(root, 'target/release/gguf-validate');

// xorshift32: the same values on every run.
function seeded(seed) {
  let s = seed >>> 0;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 2 ** 32;
  };
}

test('quantize equals the command line for every ggml type', async () => {
  const rows = 4;
  const n = 256;
  const next = seeded(0x9e3779b9);
  const x = Float32Array.from({ length: rows * n }, () => (next() - 0.5) * 2 ** Math.floor(next() * 9 - 4));
  const w = Float32Array.from({ length: n }, () => next() * 4 + 0.01);
  const dir = mkdtempSync(join(tmpdir(), 'gguf-validate-quantize-'));
  try {
    writeFileSync(join(dir, 'x.f32'), new Uint8Array(x.buffer));
    writeFileSync(join(dir, 'w.f32'), new Uint8Array(w.buffer));
    const cases = [
      [[], [undefined, undefined, {}]],
      [['--row-length', String(n)], [n, undefined, {}]],
      [['--imatrix', 'w.f32'], [undefined, w, {}]],
      [['--row-length', String(n), '--imatrix', 'w.f32'], [n, w, {}]],
      [['--reference', 'row'], [undefined, undefined, { reference: 'row' }]],
    ];
    const quantized = [];
    for (const { name } of await ggmlTypes()) {
      let ok = 0;
      for (const [args, [nPerRow, imatrix, options]] of cases) {
        const cli = spawnSync(bin, ['quantize', '--type', name, '--input', 'x.f32', '--output', '-', ...args], {
          cwd: dir,
          maxBuffer: 1 << 26,
        });
        assert.equal(cli.error, undefined, `${bin}: ${cli.error}`);
        let ours;
        try {
          ours = await quantize(name, x, nPerRow, imatrix, options);
        } catch (e) {
          assert.equal(cli.status, 2, `${name} ${args.join(' ')}: the package refuses (${e.message}), the CLI did not`);
          continue;
        }
        assert.equal(cli.status, 0, `${name} ${args.join(' ')}: ${cli.stderr}`);
        assert.ok(Buffer.from(ours).equals(cli.stdout), `${name} ${args.join(' ')}: bytes differ from the CLI's`);
        ok += 1;
      }
      if (ok > 0) quantized.push(name);
    }
    assert.equal(quantized.length, 30, quantized.join(', '));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
