// Entry point: wires the server connection, ghost text, next edits, the status bar and
// the commands together. Each piece lives in its own module; this file only connects them.

import * as vscode from 'vscode';
import { ExecuteCommandRequest } from 'vscode-languageclient/node';
import { ACCEPTED_COMMAND, inlineMiddleware } from './inlineCompletions';
import { isLaunchProblem } from './launcher';
import { NextEditController } from './nextEdits';
import { Playground } from './playground';
import { ServerConnection } from './serverConnection';
import { isEnabledForLanguage, LanguageEnableMap, RESTART_SETTINGS } from './settings';
import { SourceHint } from './sourceHint';
import { StatusBar } from './statusBar';

const PAUSED_KEY = 'infill.paused';
const STATS_METHOD = 'infill/stats';

let connection: ServerConnection | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel('infill', { log: true });
  const status = new StatusBar();
  const playground = new Playground(output);
  let paused = context.globalState.get<boolean>(PAUSED_KEY, false);

  const config = () => vscode.workspace.getConfiguration('infill');
  const wanted = (document: vscode.TextDocument): boolean =>
    !paused && isEnabledForLanguage(config().get<LanguageEnableMap>('enable'), document.languageId);
  const refreshStatus = (): void => {
    const editor = vscode.window.activeTextEditor;
    const languageEnabled = editor ? isEnabledForLanguage(config().get<LanguageEnableMap>('enable'), editor.document.languageId) : true;
    status.update({ paused, languageEnabled });
  };

  const sourceHint = new SourceHint(() => config().get<boolean>('showSource', true));
  const server = new ServerConnection(
    output,
    status,
    inlineMiddleware({
      wanted,
      completionListWanted: () => config().get<boolean>('completionList', false),
      latency: (ms) => status.update({ lastLatencyMs: ms }),
      answered: (document, position, origin, edited) => sourceHint.answered(document, position, origin, edited),
    }),
  );
  connection = server;

  const nextEdits = new NextEditController(
    {
      client: () => server.running,
      wanted: (document) => wanted(document) && config().get<boolean>('nextEdit.enabled', true),
      delayMs: () => config().get<number>('nextEdit.delayMs', 500),
    },
    (message) => output.info(`[infill] ${message}`),
  );

  context.subscriptions.push(
    output,
    status,
    playground,
    server,
    nextEdits,
    sourceHint,
    server.onReady((client) => nextEdits.serverStarted(client)),
    vscode.window.onDidChangeActiveTextEditor(refreshStatus),
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (!event.affectsConfiguration('infill')) {
        return;
      }
      refreshStatus();
      if (RESTART_SETTINGS.some((section) => event.affectsConfiguration(section)) || !server.running) {
        await server.restart();
      } else {
        await server.pushSettings();
      }
    }),
    vscode.commands.registerCommand(ACCEPTED_COMMAND, async (serverCommand: string, args: unknown[]) => {
      // Acceptance is bookkeeping: a server that cannot take it must not disturb typing.
      try {
        await server.running?.sendRequest(ExecuteCommandRequest.type, { command: serverCommand, arguments: args });
      } catch (error) {
        output.warn(`[infill] reporting an accepted suggestion failed: ${String(error)}`);
      }
    }),
    vscode.commands.registerCommand('infill.toggle', async () => {
      paused = !paused;
      await context.globalState.update(PAUSED_KEY, paused);
      if (paused) {
        nextEdits.dismiss();
      }
      refreshStatus();
      void vscode.window.setStatusBarMessage(paused ? 'infill: completions off' : 'infill: completions on', 3000);
    }),
    vscode.commands.registerCommand('infill.showStats', () => showStats(server)),
    vscode.commands.registerCommand('infill.openPlayground', () => {
      const launcher = server.launcher;
      if (isLaunchProblem(launcher)) {
        void vscode.window.showErrorMessage(launcher.message);
        return;
      }
      return playground.open(launcher, config().get<string>('modelDir', ''));
    }),
    vscode.commands.registerCommand('infill.restartServer', () => server.restart()),
    vscode.commands.registerCommand('infill.showLog', () => output.show(true)),
    vscode.commands.registerCommand('infill.showMenu', () => showMenu(paused)),
  );

  refreshStatus();
  await server.start();
}

export async function deactivate(): Promise<void> {
  await connection?.stop();
}

async function showStats(server: ServerConnection): Promise<void> {
  const client = server.running;
  if (!client) {
    void vscode.window.showWarningMessage('infill: the server is not running, so there are no stats. Run "infill: Restart Server".');
    return;
  }
  let stats: unknown;
  try {
    stats = await client.sendRequest(STATS_METHOD, {});
  } catch (error) {
    void vscode.window.showErrorMessage(`infill: ${STATS_METHOD} failed: ${error instanceof Error ? error.message : String(error)}`);
    return;
  }
  const document = await vscode.workspace.openTextDocument({ language: 'json', content: JSON.stringify(stats, null, 2) + '\n' });
  await vscode.window.showTextDocument(document, { preview: true });
}

async function showMenu(paused: boolean): Promise<void> {
  const items: Array<vscode.QuickPickItem & { command: string }> = [
    { label: paused ? '$(play) Turn completions on' : '$(circle-slash) Turn completions off', command: 'infill.toggle' },
    { label: '$(graph) Show server stats', command: 'infill.showStats' },
    { label: '$(globe) Open live playground', command: 'infill.openPlayground' },
    { label: '$(output) Show log', command: 'infill.showLog' },
    { label: '$(debug-restart) Restart server', command: 'infill.restartServer' },
    { label: '$(gear) Settings', command: 'infill.openSettings' },
  ];
  const choice = await vscode.window.showQuickPick(items, { title: 'infill' });
  if (!choice) {
    return;
  }
  if (choice.command === 'infill.openSettings') {
    await vscode.commands.executeCommand('workbench.action.openSettings', '@ext:infill.infill-vscode');
  } else {
    await vscode.commands.executeCommand(choice.command);
  }
}
