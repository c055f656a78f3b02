import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { FeatureGate, isMethodNotFound, isStaleAfterChange, meaningfulEdits, previewText, Span, tabAction } from '../src/nextEditModel';

const span = (l1: number, c1: number, l2: number, c2: number): Span => ({ start: { line: l1, character: c1 }, end: { line: l2, character: c2 } });

test('edits that change nothing, and malformed answers, are dropped', () => {
  const text = (range: Span) => (range.start.line === 1 ? 'old' : '');
  const result = {
    edits: [
      { range: span(1, 0, 1, 3), newText: 'old' }, // no-op
      { range: span(1, 0, 1, 3), newText: 'new' },
      { range: span(2, 0, 2, 0), newText: 'x = 1\n' },
      { range: { start: { line: -1, character: 0 }, end: { line: 0, character: 0 } }, newText: 'bad' },
      { newText: 'no range' },
    ],
  };
  assert.deepEqual(
    meaningfulEdits(result, text).map((e) => e.newText),
    ['new', 'x = 1\n'],
  );
  assert.deepEqual(meaningfulEdits(null, text), []);
  assert.deepEqual(meaningfulEdits({ edits: 'nope' }, text), []);
});

test('Tab jumps when the cursor is off the edit, accepts when on its lines', () => {
  const suggestion = { uri: 'file:///a.py', version: 3, edits: [{ range: span(10, 4, 11, 0), newText: 'y' }] };
  assert.equal(tabAction(suggestion, { line: 2, character: 0 }), 'jump');
  assert.equal(tabAction(suggestion, { line: 10, character: 0 }), 'accept');
  assert.equal(tabAction(suggestion, { line: 11, character: 7 }), 'accept');
  assert.equal(tabAction(suggestion, { line: 12, character: 0 }), 'jump');
});

test('a change to the same document at a new version dismisses; other documents do not', () => {
  const suggestion = { uri: 'file:///a.py', version: 3, edits: [] };
  assert.equal(isStaleAfterChange(suggestion, 'file:///a.py', 4), true);
  assert.equal(isStaleAfterChange(suggestion, 'file:///a.py', 3), false);
  assert.equal(isStaleAfterChange(suggestion, 'file:///b.py', 9), false);
});

test('the preview is one line: first non-empty line, tabs expanded, long text cut, more marked', () => {
  assert.equal(previewText('return x'), 'return x');
  assert.equal(previewText('\n    return x\n'), '    return x');
  assert.equal(previewText('a\nb'), 'a …');
  assert.equal(previewText('\tx'), '  x');
  assert.equal(previewText('y'.repeat(100), 10), 'yyyyyyyyy…');
});

test('the feature gate logs once and resets for a new server', () => {
  const logged: string[] = [];
  const gate = new FeatureGate((m) => logged.push(m));
  assert.equal(gate.enabled, true);
  assert.equal(gate.disable('no method'), true);
  assert.equal(gate.disable('no method'), false);
  assert.equal(gate.enabled, false);
  assert.equal(logged.length, 1);
  gate.reset();
  assert.equal(gate.enabled, true);
});

test('method-not-found is recognised by its JSON-RPC code only', () => {
  assert.equal(isMethodNotFound({ code: -32601, message: 'Unhandled method infill/nextEdit' }), true);
  assert.equal(isMethodNotFound({ code: -32603 }), false);
  assert.equal(isMethodNotFound(new Error('x')), false);
});
