import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { checkModelDir, FileProbe, isLaunchProblem, lspArgs, PYTHON_BOOTSTRAP, resolveLauncher, serveArgs } from '../src/launcher';

/** A fake file system: the listed files are executable, the listed dirs exist. */
function probe(files: string[], dirs: string[] = []): FileProbe {
  return { isExecutableFile: (f) => files.includes(f), isDirectory: (d) => dirs.includes(d) };
}

const noSettings = { path: '', pythonPath: '', args: [] };

test('finds infill on PATH, in PATH order', () => {
  const launcher = resolveLauncher(noSettings, '/a:/b:/c', probe(['/b/infill', '/c/infill']));
  assert.ok(!isLaunchProblem(launcher));
  assert.equal(launcher.command, '/b/infill');
  assert.deepEqual(lspArgs(launcher, ['--log-file', 'x']), ['lsp', '--log-file', 'x']);
  assert.deepEqual(serveArgs(launcher), ['serve']);
});

test('no infill anywhere: a problem that names the install command and the settings', () => {
  const result = resolveLauncher(noSettings, '/usr/bin', probe([]));
  assert.ok(isLaunchProblem(result));
  assert.equal(result.kind, 'not-found');
  assert.match(result.message, /pip install -e \/path\/to\/infill/);
  assert.doesNotMatch(result.message, /pip install infill/);
  assert.match(result.message, /infill\.server\.path/);
  assert.equal(result.setting, 'infill.server.path');
});

test('an explicit path wins over PATH, and a wrong one is reported, not ignored', () => {
  const ok = resolveLauncher({ ...noSettings, path: '/venv/bin/infill' }, '/a', probe(['/venv/bin/infill', '/a/infill']));
  assert.ok(!isLaunchProblem(ok));
  assert.equal(ok.command, '/venv/bin/infill');

  const bad = resolveLauncher({ ...noSettings, path: '/nope/infill' }, '/a', probe(['/a/infill']));
  assert.ok(isLaunchProblem(bad));
  assert.equal(bad.kind, 'bad-path');
  assert.match(bad.message, /\/nope\/infill/);
});

test('a python interpreter runs the CLI through -c, bare names are looked up on PATH', () => {
  const byName = resolveLauncher({ ...noSettings, pythonPath: 'python3' }, '/usr/bin', probe(['/usr/bin/python3']));
  assert.ok(!isLaunchProblem(byName));
  assert.equal(byName.command, '/usr/bin/python3');
  assert.deepEqual(lspArgs(byName, []), ['-c', PYTHON_BOOTSTRAP, 'lsp']);

  const missing = resolveLauncher({ ...noSettings, pythonPath: '/opt/py/bin/python' }, '/usr/bin', probe([]));
  assert.ok(isLaunchProblem(missing));
  assert.equal(missing.kind, 'bad-python');
});

test('an unset or existing model dir is fine; a missing one is a problem naming the setting', () => {
  assert.equal(checkModelDir('', probe([])), undefined);
  assert.equal(checkModelDir('/models/tiny', probe([], ['/models/tiny'])), undefined);
  const problem = checkModelDir('/models/gone', probe([]));
  assert.equal(problem?.kind, 'model-missing');
  assert.equal(problem?.setting, 'infill.modelDir');
  assert.match(problem?.message ?? '', /\/models\/gone/);
});
