// The package as a user gets it: `npm pack`, installed from the tarball into
// a fresh folder, its README's examples run there under Node; its types
// checked by TypeScript against a usage file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, copyFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const pkg = join(here, '..');
const root = join(pkg, '../../..');

test('installed from its tarball into a fresh folder, the README examples run', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gguf-validate-npm-'));
  try {
    execFileSync('npm', ['pack', '--pack-destination', dir, '--silent'], { cwd: pkg });
    const tarball = readdirSync(dir).find((f) => f.endsWith('.tgz'));
    assert.ok(tarball, 'npm pack made no tarball');
    const listed = execFileSync('tar', ['tzf', join(dir, tarball)]).toString();
    for (const f of ['package/index.js', 'package/index.d.ts', 'package/wasm/gguf_validate_wasm_bg.wasm', 'package/README.md']) {
      assert.ok(listed.includes(f), `${f} is not in the tarball`);
    }
    assert.ok(!listed.includes('package/test/'), 'the tests are not shipped');
    const app = join(dir, 'app');
    execFileSync('mkdir', ['-p', app]);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
    execFileSync('npm', ['install', '--no-audit', '--no-fund', '--offline', join(dir, tarball)], { cwd: app });
    copyFileSync(join(root, 'corpus/samples/tiny-llama.gguf'), join(app, 'model.gguf'));
    const readme = readFileSync(join(pkg, 'README.md'), 'utf8');
    const examples = [...readme.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]);
    assert.ok(examples.length >= 4, `${examples.length} examples`);
    examples.forEach((code, i) => {
      const file = join(app, `example-${i}.mjs`);
      writeFileSync(file, code);
      const out = execFileSync('node', [file], { cwd: app }).toString();
      assert.ok(out.trim().length > 0, `example ${i} printed nothing`);
      if (i === 0) assert.match(out, /^valid llama/m);
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the TypeScript types accept the documented uses and reject a wrong one', () => {
  const tsc = join(pkg, 'node_modules/.bin/tsc');
  const dir = mkdtempSync(join(tmpdir(), 'gguf-validate-ts-'));
  try {
    const ok = join(dir, 'ok.ts');
    writeFileSync(ok, `
import { validate, ValidationRun, dump, rules, quantize, dequantize, fix, FIX_MAX_BYTES, type FileReport, type Fix, type FixResult } from ${JSON.stringify(join(pkg, 'index.js'))};
async function main(blob: Blob): Promise<number> {
  const r: FileReport = await validate(blob, { profile: 'spec', stats: {} });
  const run = new ValidationRun({ profile: 'strict' });
  await run.validate(new Uint8Array(8));
  const sarif: string = await run.render('sarif');
  const d = await dump('hf://o/r/m.gguf', { full: true });
  const n: number = (await rules()).length + (await quantize('q8_0', [1, 2], 32)).length
    + (await quantize('iq4_nl', new Float32Array(64), undefined, undefined, { reference: 'row' })).length;
  const f: Float32Array = await dequantize('f16', new Uint8Array(4));
  const fixable: Fix[] = [];
  await validate(blob, { fixable });
  const fixed: FixResult = await fix(blob, { profile: 'strict', unsafe: true });
  const out: Blob = fixed.blob;
  const max: number = FIX_MAX_BYTES;
  const held: number = fixed.fixes.filter((x) => !x.applied).length + (fixed.after.counts?.errors ?? 0) + out.size;
  return (r.diagnostics ?? []).length + sarif.length + n + f.length + (d.complete ? 1 : 0) + held + (fixed.tensorData.unchanged ? 1 : 0) + max;
}
void main;
`);
    execFileSync(tsc, ['--noEmit', '--strict', '--module', 'nodenext', '--target', 'es2022', '--allowJs', 'false', ok]);
    const bad = join(dir, 'bad.ts');
    writeFileSync(bad, `import { validate } from ${JSON.stringify(join(pkg, 'index.js'))};\nvoid validate(new Blob([]), { profile: 'lenient' });\n`);
    assert.throws(() => execFileSync(tsc, ['--noEmit', '--strict', '--module', 'nodenext', '--target', 'es2022', bad], { stdio: 'pipe' }));
    // fix takes no URL.
    writeFileSync(bad, `import { fix } from ${JSON.stringify(join(pkg, 'index.js'))};\nvoid fix('https://host/m.gguf');\n`);
    assert.throws(() => execFileSync(tsc, ['--noEmit', '--strict', '--module', 'nodenext', '--target', 'es2022', bad], { stdio: 'pipe' }));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
