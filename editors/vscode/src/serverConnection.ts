// Owns the language client: finds the server, starts it, restarts it after a crash
// (a few times), and turns every way it can fail into one message that says what to fix.
// The editor stays usable throughout: completions simply stop until the server is back.

import * as fs from 'fs';
import * as vscode from 'vscode';
import {
  CloseAction,
  CloseHandlerResult,
  ErrorAction,
  ErrorHandlerResult,
  LanguageClient,
  LanguageClientOptions,
  Middleware,
  State,
} from 'vscode-languageclient/node';
import { explainServerFailure, formatFailure, OutputTail } from './diagnose';
import { checkModelDir, FileProbe, isLaunchProblem, Launcher, LaunchProblem, resolveLauncher } from './launcher';
import { phaseAfterProgress } from './statusModel';
import { serverSettings, ServerKey } from './serverSettings';
import { readRemoteSettings, readServerSettings, remoteArgs } from './settings';
import { StartedServer, startServerProcess } from './serverProcess';
import { StatusBar } from './statusBar';

export const nodeFileProbe: FileProbe = {
  isExecutableFile(file: string): boolean {
    try {
      fs.accessSync(file, fs.constants.X_OK);
      return fs.statSync(file).isFile();
    } catch {
      return false;
    }
  },
  isDirectory(dir: string): boolean {
    try {
      return fs.statSync(dir).isDirectory();
    } catch {
      return false;
    }
  },
};

/** vscode-languageclient pops up its own generic errors; ours say what to fix instead. */
class QuietLanguageClient extends LanguageClient {
  override error(message: string, data?: unknown): void {
    super.error(message, data, false);
  }
}

const CRASH_WINDOW_MS = 3 * 60 * 1000;
const MAX_CRASHES_IN_WINDOW = 3;

/** The server's user-set settings, in the shape infill_lsp/config.py parses. */
export function currentServerSettings(): Record<string, unknown> {
  const config = vscode.workspace.getConfiguration('infill');
  return serverSettings((key: ServerKey) => {
    const inspected = config.inspect(key);
    const setByUser = [inspected?.workspaceFolderValue, inspected?.workspaceValue, inspected?.globalValue].some((v) => v !== undefined);
    // The value itself comes from get(), which ignores an untrusted folder's value of a
    // restricted setting (infill.modelDir); inspect() would not.
    return setByUser ? config.get(key) : undefined;
  });
}

export class ServerConnection implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private server: StartedServer | undefined;
  private readonly stderrTail = new OutputTail();
  private crashTimes: number[] = [];
  private runningOnce = false;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly readyEmitter = new vscode.EventEmitter<LanguageClient>();
  /** Fires each time a (re)started server has answered `initialize`. */
  readonly onReady = this.readyEmitter.event;

  constructor(
    private readonly output: vscode.LogOutputChannel,
    private readonly status: StatusBar,
    private readonly middleware: Middleware,
  ) {}

  get running(): LanguageClient | undefined {
    return this.client?.isRunning() ? this.client : undefined;
  }

  get launcher(): Launcher | LaunchProblem {
    const raw = vscode.workspace.getConfiguration('infill').get('server');
    return resolveLauncher(readServerSettings(raw), process.env.PATH, nodeFileProbe);
  }

  async start(): Promise<void> {
    const launcher = this.launcher;
    if (isLaunchProblem(launcher)) {
      this.fail(launcher.message, launcher.setting);
      return;
    }
    const modelProblem = checkModelDir(vscode.workspace.getConfiguration('infill').get<string>('modelDir', ''), nodeFileProbe);
    if (modelProblem) {
      this.fail(modelProblem.message, modelProblem.setting);
      return;
    }
    this.status.update({ phase: { kind: 'starting' } });
    this.runningOnce = false;
    const infillConfig = vscode.workspace.getConfiguration('infill');
    const extraArgs = [...remoteArgs(readRemoteSettings(infillConfig.get('remote'))), ...readServerSettings(infillConfig.get('server')).args];
    const client = new QuietLanguageClient(
      'infill',
      'infill',
      async () => {
        this.server = startServerProcess(launcher, extraArgs, this.stderrTail, this.output);
        return this.server.process;
      },
      this.clientOptions(),
    );
    this.client = client;
    // Also fires after the client restarts a crashed server by itself.
    this.disposables.push(
      client.onDidChangeState((event) => {
        if (event.newState === State.Running && this.client === client) {
          this.runningOnce = true;
          if (this.status.phase.kind === 'starting') {
            this.status.update({ phase: { kind: 'ready' } });
          }
          this.readyEmitter.fire(client);
        }
      }),
    );
    try {
      await client.start();
    } catch (error) {
      if (this.client === client) {
        await this.reportDeath(error);
      }
    }
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client) {
      try {
        await client.stop(5000);
      } catch (error) {
        this.output.warn(`[infill] stopping the server: ${String(error)}`);
        this.server?.process.kill();
      }
    }
    this.status.update({ phase: { kind: 'stopped' } });
  }

  async restart(): Promise<void> {
    await this.stop();
    this.crashTimes = [];
    await this.start();
  }

  /** Sends the settings again after the user changed one the server reads. */
  async pushSettings(): Promise<void> {
    const client = this.running;
    if (client) {
      await client.sendNotification('workspace/didChangeConfiguration', { settings: { infill: currentServerSettings() } });
    }
  }

  private clientOptions(): LanguageClientOptions {
    return {
      // Every text document on disk or unsaved; the server decides what it can complete.
      documentSelector: [{ scheme: 'file' }, { scheme: 'untitled' }],
      outputChannel: this.output,
      initializationOptions: currentServerSettings(),
      middleware: {
        ...this.middleware,
        // Observe $/progress (model loading) for the status bar; `next` lets the client
        // also draw its usual progress indicator.
        handleWorkDoneProgress: (token, params, next) => {
          this.status.update({ phase: phaseAfterProgress(this.status.phase, params) });
          next(token, params);
        },
        workspace: {
          // Answer workspace/configuration ourselves: only the keys the server knows, and
          // only values the user set (see serverSettings.ts for why).
          configuration: (params, token, next) => {
            const answers = params.items.map((item) => (item.section === 'infill' ? currentServerSettings() : undefined));
            if (answers.every((a) => a !== undefined)) {
              return answers;
            }
            return next(params, token);
          },
        },
      },
      errorHandler: {
        error: (): ErrorHandlerResult => ({ action: ErrorAction.Continue, handled: true }),
        closed: () => this.onClosed(),
      },
      initializationFailedHandler: () => false,
    };
  }

  private async onClosed(): Promise<CloseHandlerResult> {
    const now = Date.now();
    this.crashTimes = this.crashTimes.filter((t) => now - t < CRASH_WINDOW_MS);
    this.crashTimes.push(now);
    if (this.runningOnce && this.crashTimes.length <= MAX_CRASHES_IN_WINDOW) {
      this.output.warn(`[infill] the server stopped unexpectedly; restarting (${this.crashTimes.length}/${MAX_CRASHES_IN_WINDOW})`);
      this.status.update({ phase: { kind: 'starting' } });
      return { action: CloseAction.Restart, handled: true };
    }
    // A server that dies during startup would die again: say why instead of looping.
    if (this.runningOnce) {
      void this.reportDeath(undefined);
    }
    return { action: CloseAction.DoNotRestart, handled: true };
  }

  private async reportDeath(error: unknown): Promise<void> {
    // Give the process a moment to finish writing stderr and exit.
    const exit = this.server
      ? await Promise.race([this.server.exited, new Promise<undefined>((r) => setTimeout(() => r(undefined), 3000))])
      : undefined;
    if (exit?.spawnError) {
      this.fail(`infill: could not start "${this.server?.process.spawnfile}": ${exit.spawnError.message}. Check infill.server.path / infill.server.pythonPath.`, 'infill.server.path');
      return;
    }
    if (!exit && error) {
      this.output.error(`[infill] server start failed: ${String(error)}`);
    }
    const failure = explainServerFailure(this.stderrTail.text(), exit?.code);
    this.fail(formatFailure(failure), failure.setting);
  }

  private fail(message: string, setting: string | undefined): void {
    this.output.error(`[infill] ${message}`);
    this.status.update({ phase: { kind: 'failed', reason: message.replace(/^infill: /, '') } });
    const actions = setting ? ['Open Settings', 'Show Log'] : ['Show Log', 'Restart'];
    void vscode.window.showErrorMessage(message, ...actions).then((choice) => {
      if (choice === 'Open Settings' && setting) {
        void vscode.commands.executeCommand('workbench.action.openSettings', setting);
      } else if (choice === 'Show Log') {
        this.output.show(true);
      } else if (choice === 'Restart') {
        void this.restart();
      }
    });
  }

  dispose(): void {
    void this.stop();
    this.readyEmitter.dispose();
    for (const d of this.disposables) {
      d.dispose();
    }
  }
}
