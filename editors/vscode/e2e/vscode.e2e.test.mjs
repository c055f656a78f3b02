// End-to-end test of the infill extension in a real VS Code (code-server), driven by
// playwright-core through the system Chromium. scripts/vscode_e2e.sh prepares everything
// and passes it in through the E2E_* variables below.
//
// What it proves: the packaged .vsix installs; the extension starts `infill lsp`; the model loads (status bar); typing a function header brings
// ghost text from the server; Tab puts it in the file; the accept command reached the
// server (its infill/stats count it); a broken setting gives a message naming the fix
// while the editor stays usable; after a rename of one use of a name, the server's
// next-edit suggestion is drawn, Tab jumps to it and Tab applies it; with infill.remote.url
// the ghost text comes from a running `infill serve` over HTTP. It does not judge the
// completion's quality.

import { spawn } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { strict as assert } from 'node:assert';
import { chromium } from 'playwright-core';

const here = import.meta.dirname;
const env = {
  node24: required('E2E_NODE24'),
  vsix: required('E2E_VSIX'),
  infill: required('E2E_INFILL'),
  python: required('E2E_PYTHON'),
  modelDir: process.env.E2E_MODEL_DIR ?? '',
  artifacts: resolve(process.env.E2E_ARTIFACTS ?? join(here, 'artifacts')),
  chromium: process.env.E2E_CHROMIUM ?? '/usr/bin/chromium',
  codeServer: join(here, 'node_modules', 'code-server', 'out', 'node', 'entry.js'),
};

// Model loading and the first completion run on a CPU that may be shared with other work.
const READY_TIMEOUT_MS = 180_000;
const GHOST_TIMEOUT_MS = 120_000;
const HEADER = 'def add(a, b):';

function required(name) {
  const value = process.env[name];
  if (!value) {
    throw new Error(`${name} is not set; run scripts/vscode_e2e.sh`);
  }
  return value;
}

const root = mkdtempSync(join(tmpdir(), 'infill-vscode-e2e-'));
const userData = join(root, 'user-data');
const extensionsDir = join(root, 'extensions');
const workspace = join(root, 'workspace');
const file = join(workspace, 'main.py');
// For the next-edit test: `count` used on three nearby lines.
const renameFile = join(workspace, 'rename.py');
const RENAME_SOURCE = 'count = 0\nfor x in range(3):\n    count += x\nprint(count)\n';
// Settings scoped to the machine (infill.server.path, infill.modelDir) are read from the
// remote machine's file in code-server; the editor's from the user's. Both get the same.
const settingsFiles = [join(userData, 'User', 'settings.json'), join(userData, 'Machine', 'settings.json')];
const writeSettings = (settings) => settingsFiles.forEach((f) => writeFileSync(f, JSON.stringify(settings, null, 2)));
let codeServer;
let browser;
let page;
const serverLog = [];

function userSettings(extra = {}) {
  return {
    // Only infill may offer completions, so Tab can only accept its ghost text.
    'editor.quickSuggestions': { other: 'off', comments: 'off', strings: 'off' },
    'editor.suggestOnTriggerCharacters': false,
    'editor.inlineSuggest.enabled': true,
    'chat.disableAIFeatures': true,
    // Save continuously so the test can read the file from disk.
    'files.autoSave': 'afterDelay',
    'files.autoSaveDelay': 200,
    'workbench.startupEditor': 'none',
    'workbench.tips.enabled': false,
    'security.workspace.trust.enabled': false,
    'telemetry.telemetryLevel': 'off',
    'extensions.autoCheckUpdates': false,
    'extensions.autoUpdate': false,
    'update.mode': 'none',
    'infill.nextEdit.enabled': false,
    // The tiny random model writes one token again and again ('gggg…'); a middle that runs
    // to the limit in such a loop is degenerate and shown as nothing (engine/degenerate.py),
    // so its completions stop at 8 tokens, short of any loop rule.
    'infill.maxTokens': 8,
    ...(process.env.E2E_TRACE ? { 'infill.trace.server': 'verbose' } : {}),
    // code-server's extension host takes PATH from a login shell, not from this process,
    // so the program is named explicitly (the PATH lookup is covered by the unit tests).
    'infill.server.path': env.infill,
    ...(env.modelDir ? { 'infill.modelDir': env.modelDir } : {}),
    ...extra,
  };
}

function freePort() {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolvePort(port));
    });
  });
}

function run(command, args, options) {
  return new Promise((resolveRun, reject) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolveRun(out) : reject(new Error(`${command} ${args.join(' ')} exited ${code}:\n${out}`))));
  });
}

async function waitForHttp(url, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const response = await fetch(url);
      if (response.status < 500) {
        return;
      }
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`code-server did not answer on ${url} within ${timeoutMs / 1000} s:\n${serverLog.join('')}`);
}

/**
 * Text of the file on disk once autosave has written a version that satisfies `wanted`
 * and has stopped changing (autosave may fire in the middle of typing).
 */
async function settledFileText(wanted, timeoutMs = 20_000, path = file) {
  const deadline = Date.now() + timeoutMs;
  let last = readFileSync(path, 'utf8');
  let since = Date.now();
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 200));
    const text = readFileSync(path, 'utf8');
    if (text !== last) {
      last = text;
      since = Date.now();
    } else if (wanted(text) && Date.now() - since >= 800) {
      return text;
    }
  }
  return last;
}

/** Opens a workspace file from the Explorer and puts the cursor at its end. */
async function openFile(name) {
  await page.locator('.explorer-folders-view .monaco-list-row').filter({ hasText: name }).first().click();
  await page.locator('.tabs-container .tab.active').filter({ hasText: name }).waitFor({ timeout: 30_000 });
  const editor = page.locator('.editor-group-container.active .editor-instance .monaco-editor').first();
  await editor.waitFor({ timeout: 30_000 });
  await editor.locator('.view-lines').click();
  await page.keyboard.press('Control+End');
}

/** A stand-in `infill` program (a shell script) for the bad-setup scenarios. */
function script(name, body) {
  const path = join(root, name);
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}

/** Waits for an error notification containing `text`, and returns its whole text. */
async function errorToast(text, timeout = 60_000) {
  const toast = page.locator('.notifications-toasts .notification-toast').filter({ hasText: text }).first();
  await toast.waitFor({ timeout });
  return toast.innerText();
}

async function waitForServerReady() {
  const settled = infillStatus().locator('.codicon-sparkle, .codicon-error').first();
  await settled.waitFor({ timeout: READY_TIMEOUT_MS });
  assert.ok(
    (await settled.getAttribute('class')).includes('codicon-sparkle'),
    `the infill server did not start: ${await infillStatus().getAttribute('aria-label')}`,
  );
}

// Waits for infill's ghost text at the cursor; returns its locator and its text.
async function waitForGhost() {
  const ghost = page.locator('.monaco-editor [class*="ghost-text"]').filter({ hasText: /\S/ }).first();
  try {
    await ghost.waitFor({ timeout: GHOST_TIMEOUT_MS / 2 });
  } catch {
    // VS Code asks again on an explicit trigger (Alt+\) if the first request was cancelled.
    await page.keyboard.press('Alt+Backslash');
    await ghost.waitFor({ timeout: GHOST_TIMEOUT_MS / 2 });
  }
  const ghostText = (await page.locator('.monaco-editor [class*="ghost-text"]').allTextContents()).join('').replace(/\u00a0/g, ' ');
  return { ghost, ghostText };
}

/** Types the function header and Enter in the open editor; returns the ghost text that appears (as waitForGhost). */
async function typeHeaderForGhostText() {
  await page.keyboard.type(HEADER, { delay: 30 });
  await page.keyboard.press('Enter');
  return waitForGhost();
}

const infillStatus = () => page.locator('.statusbar-item').filter({ hasText: 'infill' }).first();

before(async () => {
  mkdirSync(env.artifacts, { recursive: true });
  mkdirSync(workspace, { recursive: true });
  mkdirSync(join(userData, 'User'), { recursive: true });
  mkdirSync(join(userData, 'Machine'), { recursive: true });
  writeFileSync(file, '# infill end-to-end test\n\n');
  writeFileSync(renameFile, RENAME_SOURCE);
  writeSettings(userSettings());

  const codeServerEnv = {
    ...process.env,
    // code-server must not try to reach the internet for extensions or updates.
    EXTENSIONS_GALLERY: JSON.stringify({ serviceUrl: 'http://127.0.0.1:9/' }),
  };
  const common = ['--user-data-dir', userData, '--extensions-dir', extensionsDir];
  const installed = await run(env.node24, [env.codeServer, ...common, '--install-extension', env.vsix], { env: codeServerEnv });
  assert.match(installed, /infill-vscode.*was successfully installed|successfully installed/i, installed);

  const port = await freePort();
  codeServer = spawn(
    env.node24,
    [env.codeServer, ...common, '--auth', 'none', '--bind-addr', `127.0.0.1:${port}`, '--disable-telemetry', '--disable-update-check', '--disable-workspace-trust', workspace],
    { env: codeServerEnv, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  codeServer.stdout.on('data', (d) => serverLog.push(String(d)));
  codeServer.stderr.on('data', (d) => serverLog.push(String(d)));
  await waitForHttp(`http://127.0.0.1:${port}/healthz`, 60_000);

  browser = await chromium.launch({
    executablePath: env.chromium,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`);
  await page.locator('.monaco-workbench').waitFor({ timeout: 60_000 });
});

after(async () => {
  try {
    if (page) {
      await page.screenshot({ path: join(env.artifacts, 'final.png') });
    }
  } catch {
    // the page may be gone already
  }
  await browser?.close();
  codeServer?.kill();
  writeFileSync(join(env.artifacts, 'code-server.log'), serverLog.join(''));
  // The extension's own log (the "infill" output channel) and the extension host log.
  if (existsSync(join(userData, 'logs'))) {
    cpSync(join(userData, 'logs'), join(env.artifacts, 'vscode-logs'), { recursive: true });
  }
});

test('ghost text from infill lsp is shown, accepted with Tab, and written to the file', async () => {
  // The extension starts the server and the status bar reports the model ready.
  await infillStatus().waitFor({ timeout: 60_000 });
  await waitForServerReady();

  await openFile('main.py');

  const { ghost, ghostText } = await typeHeaderForGhostText();
  assert.match(ghostText, /\S/, 'ghost text is not empty');
  await page.screenshot({ path: join(env.artifacts, 'ghost-text.png') });

  const typed = await settledFileText((text) => text.includes(HEADER));
  assert.ok(typed.includes(HEADER), `the header was typed into the file:\n${typed}`);
  await page.keyboard.press('Tab');
  await ghost.waitFor({ state: 'hidden', timeout: 10_000 });
  const accepted = await settledFileText((text) => text !== typed);
  await page.screenshot({ path: join(env.artifacts, 'accepted.png') });

  const grown = accepted.replace(/\s/g, '').length - typed.replace(/\s/g, '').length;
  assert.ok(grown > 0, `Tab added the suggestion to the file:\n--- before Tab\n${typed}\n--- after Tab\n${accepted}`);
  const firstGhostWord = ghostText.trim().split(/\s+/)[0];
  assert.ok(accepted.includes(firstGhostWord), `the file contains the ghost text ("${firstGhostWord}"):\n${accepted}`);
  assert.ok(accepted.startsWith(typed.trimEnd()), 'the text before the cursor is unchanged');

  // The accept command reached the server: its stats count the suggestion as accepted.
  await page.keyboard.press('F1');
  await page.keyboard.type('infill: Show Server Stats');
  await page.keyboard.press('Enter');
  await page.locator('.monaco-editor .view-lines').filter({ hasText: /"accepted":\s*1\b/ }).first().waitFor({ timeout: 20_000 });
});

test("VS Code's accept-next-word takes part of infill's ghost text", async () => {
  // VS Code's inline-suggest widget has partial acceptance built in (Ctrl+Right:
  // editor.action.inlineSuggest.acceptNextWord); it must work on infill's suggestions.
  await openFile('main.py');
  await page.keyboard.press('Control+End');
  await page.keyboard.press('Enter');
  await page.keyboard.type('def mul(a, b):', { delay: 30 });
  await page.keyboard.press('Enter');
  // The tiny random model answers a bare indented line with text the syntax check refuses
  // (nothing shown); after `return ` it writes a word.
  await page.keyboard.type('return ', { delay: 30 });
  const { ghostText } = await waitForGhost();
  const before = await settledFileText((text) => text.includes('def mul(a, b):'));
  await page.keyboard.press('Control+ArrowRight');
  const after = await settledFileText((text) => text !== before);
  await page.screenshot({ path: join(env.artifacts, 'accept-next-word.png') });
  const added = after.slice(before.trimEnd().length).replace(/^\s+/, '');
  assert.ok(added.trim().length > 0, `Ctrl+Right added part of the ghost text:\n--- before\n${before}\n--- after\n${after}`);
  const firstWord = ghostText.trim().match(/^[^\w]*\w+|^\S+/)[0];
  assert.ok(after.includes(firstWord), `the file has the ghost text's first word ("${firstWord}"):\n${after}`);
  if (ghostText.trim().split(/\W+/).filter(Boolean).length > 1) {
    assert.ok(!after.includes(ghostText.trim()), `only the next word was accepted, not all of "${ghostText.trim()}":\n${after}`);
  }
  await page.keyboard.press('Escape');
});

test('a wrong server path gives a message naming the fix, and the editor stays usable', async () => {
  writeSettings(userSettings({ 'infill.server.path': '/nonexistent/infill' }));
  assert.match(await errorToast('/nonexistent/infill'), /infill\.server\.path/);
  await page.screenshot({ path: join(env.artifacts, 'bad-setup.png') });
  await infillStatus().locator('.codicon-error').waitFor({ timeout: 10_000 });

  // Typing still works: back in main.py, a new line reaches the file.
  await page.keyboard.press('Escape');
  await openFile('main.py');
  await page.keyboard.press('Enter');
  await page.keyboard.type('still_typing = True', { delay: 20 });
  const after = await settledFileText((text) => text.includes('still_typing = True'));
  assert.ok(after.includes('still_typing = True'), `typing still reaches the file:\n${after}`);
});

test('infill missing from the interpreter: the message says to install it from the checkout', async () => {
  const broken = script('broken-infill', `echo "Traceback (most recent call last):" >&2
echo "ModuleNotFoundError: No module named 'engine'" >&2
exit 1`);
  writeSettings(userSettings({ 'infill.server.path': broken }));
  const text = await errorToast('could not import engine');
  assert.match(text, /pip install -e \/path\/to\/infill/);
  await infillStatus().locator('.codicon-error').waitFor({ timeout: 10_000 });
});

test('a missing model directory: the message names infill.modelDir', async () => {
  writeSettings(userSettings({ 'infill.modelDir': join(root, 'no-such-model') }));
  const text = await errorToast('no-such-model');
  assert.match(text, /infill\.modelDir/);
});

test('a server that keeps crashing is restarted, then reported with its exit code', async () => {
  // Runs the real server but kills it two seconds after it is ready, every time.
  const crashy = script('crashy-infill', `exec "${env.python}" "${join(here, 'crash_after_ready.py')}" 2 "${env.infill}" "$@"`);
  writeSettings(userSettings({ 'infill.server.path': crashy }));
  const text = await errorToast('exit code 3', 120_000);
  assert.match(text, /Restart/);
  const log = readFileSync(findInfillLog(), 'utf8');
  assert.match(log, /restarting \(3\/3\)/, 'it was restarted three times before giving up');
});

test('next edit from infill lsp: after renaming one use, Tab jumps to the next use, Tab again renames the rest', async () => {
  // The real server on the tiny model. Its default mode replays the user's last edit by
  // rules (no model vote), so a random model still suggests the rename. Ghost text is off
  // here: while it is visible Tab accepts it, and the random model may well offer some.
  writeSettings(userSettings({ 'editor.inlineSuggest.enabled': false, 'infill.nextEdit.enabled': true, 'infill.nextEdit.delayMs': 100 }));
  // The item still shows the last test's failure until the settings change restarts the server.
  await infillStatus().locator('.codicon-error').waitFor({ state: 'detached', timeout: 30_000 });
  await waitForServerReady();
  await openFile('rename.py');
  assert.equal(readFileSync(renameFile, 'utf8'), RENAME_SOURCE);

  // Rename the first `count` by typing over it: select the word, type the new name.
  await page.keyboard.press('Control+Home');
  await page.keyboard.press('Control+Shift+ArrowRight');
  await page.keyboard.type('total', { delay: 30 });
  const typed = await settledFileText((text) => text.startsWith('total = 0\n'), 20_000, renameFile);
  assert.equal(typed, RENAME_SOURCE.replace('count', 'total'), 'the rename was typed into the file');

  // The suggestion is drawn on the remaining uses (struck through) while the cursor stays on line 1.
  await page.waitForFunction(() =>
    [...document.querySelectorAll('.monaco-editor .view-line span')].some(
      (span) => span.textContent === 'count' && getComputedStyle(span).textDecorationLine.includes('line-through'),
    ),
  undefined, { timeout: 60_000 });
  await page.screenshot({ path: join(env.artifacts, 'next-edit.png') });

  // The first Tab moves the cursor to the next use (`    count += x`, line 3, column 5), nothing else.
  await page.keyboard.press('Tab');
  await page.locator('.statusbar-item').filter({ hasText: 'Ln 3, Col 5' }).waitFor({ timeout: 10_000 });
  assert.equal(readFileSync(renameFile, 'utf8'), typed, 'the first Tab only moves the cursor');
  // The second applies the suggestion: every remaining use is renamed.
  await page.keyboard.press('Tab');
  const applied = await settledFileText((text) => text !== typed, 20_000, renameFile);
  assert.equal(applied, RENAME_SOURCE.replaceAll('count', 'total'), `the second Tab applied the rename:\n${applied}`);

  // Feature detection: the real server's infill/nextEdit was used, never switched off.
  assert.doesNotMatch(readFileSync(findInfillLog(), 'utf8'), /next-edit suggestions are off/);
});

test('with infill.remote.url, ghost text comes from a running infill serve (token from a file)', async () => {
  // A team server: `infill serve` on loopback with its own token; the extension's
  // `infill lsp --remote` sends the completions there instead of loading a model.
  const token = `e2e-remote-${Date.now()}`;
  const tokenFile = join(root, 'remote-token');
  writeFileSync(tokenFile, `${token}\n`);
  const serve = spawn(env.infill, ['serve', '--port', '0', `--token=${token}`, ...(env.modelDir ? ['--model', env.modelDir] : [])], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const serveLog = [];
  serve.stderr.on('data', (d) => serveLog.push(String(d)));
  try {
    const base = await new Promise((resolveBase, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`infill serve did not start:\n${out}${serveLog.join('')}`)), READY_TIMEOUT_MS);
      serve.stdout.on('data', (d) => {
        out += d;
        const match = /api:\s+(http:\/\/\S+)\/v1/.exec(out);
        if (match) {
          clearTimeout(timer);
          resolveBase(match[1]);
        }
      });
      serve.once('exit', (code) => reject(new Error(`infill serve exited ${code}:\n${out}${serveLog.join('')}`)));
    });
    const served = async () => {
      const health = await fetch(`${base}/health`, { headers: { Authorization: `Bearer ${token}` } });
      return (await health.json()).counters.http_requests ?? 0;
    };
    const before = await served();
    // infill.modelDir stays set: with a remote server it is simply not used.
    writeSettings(userSettings({ 'infill.remote.url': base, 'infill.remote.tokenFile': tokenFile }));
    await infillStatus().locator('.codicon-sparkle').waitFor({ state: 'detached', timeout: 30_000 }).catch(() => {});
    await waitForServerReady();

    writeFileSync(join(workspace, 'remote.py'), '# remote completions\n\n');
    await page.keyboard.press('Escape');
    await openFile('remote.py');
    const { ghost } = await typeHeaderForGhostText();
    await page.screenshot({ path: join(env.artifacts, 'remote-ghost-text.png') });
    const remoteFile = join(workspace, 'remote.py');
    const typed = await settledFileText((text) => text.includes(HEADER), 20_000, remoteFile);
    await page.keyboard.press('Tab');
    await ghost.waitFor({ state: 'hidden', timeout: 10_000 });
    const accepted = await settledFileText((text) => text !== typed, 20_000, remoteFile);
    assert.ok(accepted.replace(/\s/g, '').length > typed.replace(/\s/g, '').length, `Tab added the remote suggestion:\n${accepted}`);
    assert.ok((await served()) > before, 'the completions were served by infill serve over HTTP');
    const log = readFileSync(findInfillLog(), 'utf8');
    assert.match(log, /--remote/, 'the extension started infill lsp --remote');
    assert.doesNotMatch(log, new RegExp(token), 'the token never reaches the log');
  } finally {
    serve.kill('SIGTERM');
    writeFileSync(join(env.artifacts, 'remote-serve.log'), serveLog.join(''));
  }
});

test('"Open Live Playground" starts infill serve and opens its address in the browser', async () => {
  writeSettings(userSettings());
  const opened = page.context().waitForEvent('page', { timeout: 120_000 });
  await page.keyboard.press('F1');
  await page.keyboard.type('infill: Open Live Playground');
  await page.locator('.quick-input-list .monaco-list-row').filter({ hasText: 'Open Live Playground' }).first().waitFor();
  await page.keyboard.press('Enter');
  const playground = await opened;
  // code-server maps the loopback address through its own proxy; the token must survive.
  assert.match(playground.url(), /#token=[\w-]{8,}/, playground.url());
  await playground.waitForLoadState('domcontentloaded');
  await playground.screenshot({ path: join(env.artifacts, 'playground.png') });
  await playground.close();
});

function findInfillLog() {
  const found = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name === 'infill.log') found.push(path);
    }
  };
  walk(join(userData, 'logs'));
  assert.ok(found.length > 0, 'the extension wrote its log');
  return found.sort().at(-1);
}
