// "infill: Open Live Playground": starts `infill serve` once, waits for the address it
// prints, and opens it in the browser. The process lives until the window closes.

import { ChildProcess, spawn } from 'child_process';
import * as vscode from 'vscode';
import { Launcher, serveArgs } from './launcher';
import { OutputTail } from './diagnose';
import { UrlWatcher } from './playgroundUrl';

const START_TIMEOUT_MS = 120_000;

export class Playground implements vscode.Disposable {
  private process: ChildProcess | undefined;
  private url: Promise<string> | undefined;

  constructor(private readonly output: vscode.LogOutputChannel) {}

  async open(launcher: Launcher, modelDir: string): Promise<void> {
    if (!this.url) {
      this.url = this.start(launcher, modelDir);
    }
    let url: string;
    try {
      url = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: 'infill: starting the live playground…' },
        () => this.url as Promise<string>,
      );
    } catch (error) {
      this.url = undefined;
      const message = error instanceof Error ? error.message : String(error);
      void vscode.window.showErrorMessage(`infill: the playground did not start: ${message}`, 'Show Log').then((choice) => {
        if (choice) {
          this.output.show(true);
        }
      });
      return;
    }
    // In a remote or browser VS Code (code-server), a loopback address must be mapped.
    const external = await vscode.env.asExternalUri(vscode.Uri.parse(url));
    await vscode.env.openExternal(external);
  }

  private start(launcher: Launcher, modelDir: string): Promise<string> {
    // Port 0: the OS picks a free port and `infill serve` prints the address it got.
    const args = [...serveArgs(launcher), '--port', '0', ...(modelDir ? ['--model', modelDir] : [])];
    this.output.info(`[infill] starting ${launcher.command} ${args.join(' ')}`);
    const child = spawn(launcher.command, args, { env: { ...process.env, PYTHONUNBUFFERED: '1' }, stdio: 'pipe' });
    this.process = child;
    const stderr = new OutputTail(10);
    return new Promise<string>((resolve, reject) => {
      const watcher = new UrlWatcher();
      const timer = setTimeout(() => reject(new Error(`no address after ${START_TIMEOUT_MS / 1000} s`)), START_TIMEOUT_MS);
      child.stdout?.setEncoding('utf8');
      child.stderr?.setEncoding('utf8');
      child.stdout?.on('data', (chunk: string) => {
        this.output.info(`[infill serve] ${chunk.trimEnd()}`);
        const url = watcher.push(chunk);
        if (url) {
          clearTimeout(timer);
          resolve(url);
        }
      });
      child.stderr?.on('data', (chunk: string) => {
        stderr.push(chunk);
        this.output.info(`[infill serve] ${chunk.trimEnd()}`);
      });
      child.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        this.process = undefined;
        this.url = undefined;
        reject(new Error(`\`infill serve\` exited with code ${code}: ${stderr.text().split('\n').pop() ?? ''}`));
      });
    });
  }

  dispose(): void {
    this.process?.kill();
  }
}
