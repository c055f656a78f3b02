import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import type * as vscode from 'vscode';
import { ACCEPTED_COMMAND, answerEdited, answerOrigin, inlineMiddleware, sourceLabel } from '../src/inlineCompletions';

// Minimal stand-ins for the VS Code objects the middleware touches.
const document = { languageId: 'python' } as unknown as vscode.TextDocument;
const position = {} as vscode.Position;
const context = {} as vscode.InlineCompletionContext;
const token = (cancelled = false) => ({ isCancellationRequested: cancelled }) as vscode.CancellationToken;
const item = (): vscode.InlineCompletionItem =>
  ({ insertText: 'return a + b', command: { title: 'Accept', command: 'infill.accept', arguments: ['s7'] } }) as unknown as vscode.InlineCompletionItem;

function hooks(wanted = true) {
  const latencies: number[] = [];
  return { latencies, wanted: () => wanted, completionListWanted: () => false, latency: (ms: number) => latencies.push(ms) };
}

test('asks the server, reports latency, and routes the accept command through the extension', async () => {
  const h = hooks();
  const middleware = inlineMiddleware(h);
  const result = (await middleware.provideInlineCompletionItems!(document, position, context, token(), async () => [item()])) as vscode.InlineCompletionItem[];
  assert.equal(h.latencies.length, 1);
  assert.equal(result[0].insertText, 'return a + b');
  assert.deepEqual(result[0].command, { title: 'Accept', command: ACCEPTED_COMMAND, arguments: ['infill.accept', ['s7']] });
});

test('switched off (toggle or language): the server is not asked', async () => {
  const h = hooks(false);
  let asked = false;
  const result = await inlineMiddleware(h).provideInlineCompletionItems!(document, position, context, token(), async () => {
    asked = true;
    return [item()];
  });
  assert.equal(result, null);
  assert.equal(asked, false);
  assert.equal(h.latencies.length, 0);
});

test('an answer that arrives after cancellation is dropped and not timed', async () => {
  const h = hooks();
  const result = await inlineMiddleware(h).provideInlineCompletionItems!(document, position, context, token(true), async () => [item()]);
  assert.equal(result, null);
  assert.equal(h.latencies.length, 0);
});

test('the completion list is off unless asked for', async () => {
  let asked = false;
  const next = async () => {
    asked = true;
    return [];
  };
  const off = await inlineMiddleware(hooks()).provideCompletionItem!(document, position, {} as vscode.CompletionContext, token(), next);
  assert.equal(off, null);
  assert.equal(asked, false);
  const h = { ...hooks(), completionListWanted: () => true };
  await inlineMiddleware(h).provideCompletionItem!(document, position, {} as vscode.CompletionContext, token(), next);
  assert.equal(asked, true);
});

test('a workspace line: where it came from reaches the hook, before the command is rerouted', async () => {
  const seen: Array<string | undefined> = [];
  const h = { ...hooks(), answered: (_d: vscode.TextDocument, _p: vscode.Position, origin: string | undefined) => seen.push(origin) };
  const fromWorkspace = {
    insertText: 'compute_old(items)',
    command: { title: 'Accept', command: 'infill.accept', arguments: ['s8', { version: 3, source: 'workspace', origin: 'lib/util.py:120' }] },
  } as unknown as vscode.InlineCompletionItem;
  await inlineMiddleware(h).provideInlineCompletionItems!(document, position, context, token(), async () => [fromWorkspace]);
  await inlineMiddleware(h).provideInlineCompletionItems!(document, position, context, token(), async () => [item()]);
  await inlineMiddleware(h).provideInlineCompletionItems!(document, position, context, token(), async () => []);
  assert.deepEqual(seen, ['lib/util.py:120', undefined, undefined]);
});

test('the origin is read from the accept command only for a workspace line', () => {
  const command = (details: unknown) => ({ title: 'Accept', command: 'infill.accept', arguments: ['s1', details] }) as vscode.Command;
  assert.equal(answerOrigin(command({ version: 1, source: 'workspace', origin: 'a.py:3' })), 'a.py:3');
  assert.equal(answerOrigin(command({ version: 1, source: 'model' })), undefined);
  assert.equal(answerOrigin(command({ version: 1, source: 'edited', origin: 'a.py:3' })), 'a.py:3');
  assert.equal(answerEdited(command({ version: 1, source: 'edited', origin: 'a.py:3' })), true);
  assert.equal(answerEdited(command({ version: 1, source: 'workspace', origin: 'a.py:3' })), false);
  assert.equal(answerOrigin(command({ version: 1, source: 'workspace' })), undefined); // place unknown: nothing to show
  assert.equal(answerOrigin(command({ version: 1 })), undefined); // an older server
  assert.equal(answerOrigin(undefined), undefined);
});

test('the hint names the file as the editor does and the 1-based line', () => {
  assert.equal(sourceLabel('utils.py:120'), 'from utils.py:120');
  assert.equal(sourceLabel('/home/me/proj/src/a.ts:7', (path) => path.replace('/home/me/proj/', '')), 'from src/a.ts:7');
  assert.equal(sourceLabel('C:\\proj\\a.py:2'), 'from C:\\proj\\a.py:2');
  assert.equal(sourceLabel('utils.py:120', (path) => path, true), 'edited from utils.py:120');
});
