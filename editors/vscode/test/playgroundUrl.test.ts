import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { findUrl, UrlWatcher } from '../src/playgroundUrl';

test('finds the address, without sentence punctuation, keeping the token fragment', () => {
  assert.equal(findUrl('  playground: http://127.0.0.1:8765/#token=abc123'), 'http://127.0.0.1:8765/#token=abc123');
  assert.equal(findUrl('open http://localhost:9/.'), 'http://localhost:9/');
  assert.equal(findUrl('  websocket:  ws://127.0.0.1:8765/ws'), undefined);
});

test('the watcher waits for the whole line before answering', () => {
  const watcher = new UrlWatcher();
  assert.equal(watcher.push('infill serve: model tiny, protocol 1\n  playground: http://127.0.0.1:40'), undefined);
  assert.equal(watcher.push('123/#token=t0k3n\n  websocket:  ws://127.0.0.1:40123/ws\n'), 'http://127.0.0.1:40123/#token=t0k3n');
});
