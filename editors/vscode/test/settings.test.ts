import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { isEnabledForLanguage, readRemoteSettings, readServerSettings, remoteArgs } from '../src/settings';
import { serverSettings } from '../src/serverSettings';

test('per-language switch: explicit entry, then "*", with prose languages off by default', () => {
  assert.equal(isEnabledForLanguage(undefined, 'python'), true);
  assert.equal(isEnabledForLanguage(undefined, 'markdown'), false);
  assert.equal(isEnabledForLanguage({ markdown: true }, 'markdown'), true);
  assert.equal(isEnabledForLanguage({ '*': false }, 'python'), false);
  assert.equal(isEnabledForLanguage({ '*': false, python: true }, 'python'), true);
});

test('server settings: bad values are dropped, paths trimmed', () => {
  assert.deepEqual(readServerSettings({ path: ' /x/infill ', pythonPath: 3, args: ['--a', 1] }), { path: '/x/infill', pythonPath: '', args: ['--a'] });
  assert.deepEqual(readServerSettings(undefined), { path: '', pythonPath: '', args: [] });
});

test('only server keys the user set are sent to the server', () => {
  const user: Record<string, unknown> = { maxTokens: 32, constrained: false, modelDir: '/m', enable: { '*': false } };
  assert.deepEqual(serverSettings((key) => user[key]), { maxTokens: 32, constrained: false, modelDir: '/m' });
});

test('empty model dir and empty sampler table are not sent (server defaults apply)', () => {
  const user: Record<string, unknown> = { modelDir: '  ', sampler: {}, debounceMs: 0 };
  assert.deepEqual(serverSettings((key) => user[key]), { debounceMs: 0 });
  const withSampler: Record<string, unknown> = { sampler: { blockSize: 8 } };
  assert.deepEqual(serverSettings((key) => withSampler[key]), { sampler: { blockSize: 8 } });
});

test('remote server: arguments for infill lsp carry the URL and the token file, never the token', () => {
  assert.deepEqual(remoteArgs(readRemoteSettings(undefined)), []);
  assert.deepEqual(remoteArgs(readRemoteSettings({ url: '  ', tokenFile: '/t' })), []);
  assert.deepEqual(remoteArgs(readRemoteSettings({ url: ' http://gpu:8765 ', tokenFile: '/home/u/token', model: 3 })), [
    '--remote',
    'http://gpu:8765',
    '--remote-token-file',
    '/home/u/token',
  ]);
  assert.deepEqual(remoteArgs(readRemoteSettings({ url: 'http://gpu:8765', model: 'fim' })), ['--remote', 'http://gpu:8765', '--remote-model', 'fim']);
});

test('the workspace index switch reaches the server when the user turns it off', () => {
  const user: Record<string, unknown> = { workspaceIndex: false };
  assert.deepEqual(serverSettings((key) => user[key]), { workspaceIndex: false });
  assert.deepEqual(serverSettings(() => undefined), {});
});
