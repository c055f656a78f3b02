import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { explainServerFailure, formatFailure, OutputTail } from '../src/diagnose';

test('the tail keeps the last lines, joining lines split across chunks', () => {
  const tail = new OutputTail(2);
  tail.push('one\ntw');
  tail.push('o\nthree\nfou');
  assert.equal(tail.text(), 'two\nthree\nfou');
  tail.clear();
  assert.equal(tail.text(), '');
});

test('infill missing from the interpreter: says to pip install it', () => {
  const stderr = 'Traceback (most recent call last):\n  File "<string>", line 1\nModuleNotFoundError: No module named \'engine\'';
  const failure = explainServerFailure(stderr, 1);
  assert.match(failure.summary, /could not import engine/);
  assert.match(failure.fix, /pip install -e \/path\/to\/infill/);
  assert.equal(failure.setting, 'infill.server.pythonPath');
});

test('a missing dependency is named', () => {
  const failure = explainServerFailure("ModuleNotFoundError: No module named 'pygls'", 1);
  assert.match(failure.fix, /installs pygls/);
});

test('a model that cannot load points at infill.modelDir', () => {
  const failure = explainServerFailure('infill: model not loaded: /x/model.safetensors: No such file or directory', 1);
  assert.equal(failure.setting, 'infill.modelDir');
  assert.match(failure.summary, /No such file/);
});

test('an old infill without the lsp subcommand says to upgrade', () => {
  const failure = explainServerFailure("usage: infill [-h] {train,eval}\ninfill: error: argument command: invalid choice: 'lsp'", 2);
  assert.match(failure.fix, /git pull/);
  assert.doesNotMatch(failure.fix, /pip install -U infill/);
});

test('anything else reports the exit code and the last line', () => {
  const failure = explainServerFailure('Segmentation fault', 139);
  assert.match(formatFailure(failure), /^infill: the infill server stopped \(exit code 139\): Segmentation fault\. The log/);
  assert.match(explainServerFailure('', null).summary, /stopped\.$/);
});
