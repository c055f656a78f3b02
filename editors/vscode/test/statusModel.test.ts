import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { phaseAfterProgress, renderStatus, ServerPhase } from '../src/statusModel';

const on = { paused: false, languageEnabled: true };

test('ready shows the last latency, rounded', () => {
  assert.equal(renderStatus({ ...on, phase: { kind: 'ready' } }).text, '$(sparkle) infill');
  const view = renderStatus({ ...on, phase: { kind: 'ready' }, lastLatencyMs: 83.6 });
  assert.equal(view.text, '$(sparkle) infill 84 ms');
  assert.match(view.tooltip, /84 ms/);
});

test('loading shows the percentage; failure is drawn as an error with the reason', () => {
  assert.equal(renderStatus({ ...on, phase: { kind: 'loading', percentage: 42.4 } }).text, '$(sync~spin) infill 42%');
  const failed = renderStatus({ ...on, phase: { kind: 'failed', reason: 'no infill on PATH' } });
  assert.equal(failed.error, true);
  assert.match(failed.tooltip, /no infill on PATH/);
});

test('paused and per-language off are distinguished in the tooltip', () => {
  assert.match(renderStatus({ ...on, paused: true, phase: { kind: 'ready' } }).tooltip, /completions are off/);
  assert.match(renderStatus({ ...on, languageEnabled: false, phase: { kind: 'ready' } }).tooltip, /infill\.enable/);
});

test('$/progress moves starting -> loading -> ready, keeping the last percentage', () => {
  let phase: ServerPhase = { kind: 'starting' };
  phase = phaseAfterProgress(phase, { kind: 'begin', title: 'infill: loading model', message: 'embedded model' });
  assert.deepEqual(phase, { kind: 'loading', percentage: undefined, message: 'embedded model' });
  phase = phaseAfterProgress(phase, { kind: 'report', percentage: 50 });
  assert.deepEqual(phase, { kind: 'loading', percentage: 50, message: 'embedded model' });
  phase = phaseAfterProgress(phase, { kind: 'end', message: 'model ready' });
  assert.deepEqual(phase, { kind: 'ready' });
});

test('progress does not hide a failure', () => {
  const failed: ServerPhase = { kind: 'failed', reason: 'x' };
  assert.equal(phaseAfterProgress(failed, { kind: 'begin' }), failed);
});

test('a load that ends with a failure turns the item red until the next load begins', () => {
  let phase: ServerPhase = { kind: 'loading' };
  phase = phaseAfterProgress(phase, { kind: 'end', message: 'model not loaded: /m is not a model directory' });
  assert.deepEqual(phase, { kind: 'modelFailed', reason: 'model not loaded: /m is not a model directory' });
  const view = renderStatus({ ...on, phase });
  assert.equal(view.error, true);
  assert.match(view.tooltip, /not a model directory/);
  phase = phaseAfterProgress(phase, { kind: 'begin', message: '/other' });
  assert.equal(phase.kind, 'loading');
  assert.equal(phaseAfterProgress(phase, { kind: 'end', message: 'model tiny ready in 0.1 s' }).kind, 'ready');
});
