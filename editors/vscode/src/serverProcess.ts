// Starts the server process ourselves (instead of letting vscode-languageclient do it)
// so its stderr can be kept: when the server dies, the last lines say why, and the
// message to the user can name the fix.

import { ChildProcess, spawn } from 'child_process';
import * as vscode from 'vscode';
import { OutputTail } from './diagnose';
import { Launcher, lspArgs } from './launcher';

export interface StartedServer {
  process: ChildProcess;
  /** Resolves once the process has exited (or failed to spawn). */
  exited: Promise<{ code: number | null; spawnError?: Error }>;
}

export function startServerProcess(launcher: Launcher, extraArgs: string[], stderrTail: OutputTail, output: vscode.OutputChannel): StartedServer {
  const args = lspArgs(launcher, extraArgs);
  output.appendLine(`[infill] starting ${launcher.command} ${args.join(' ')} (found through ${launcher.source})`);
  stderrTail.clear();
  const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.scheme === 'file' ? vscode.workspace.workspaceFolders[0].uri.fsPath : undefined;
  const child = spawn(launcher.command, args, {
    cwd,
    // Python buffers stderr lines otherwise, and the tail would miss the last words.
    env: { ...process.env, PYTHONUNBUFFERED: '1' },
    stdio: 'pipe',
  });
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => stderrTail.push(chunk));
  const exited = new Promise<{ code: number | null; spawnError?: Error }>((resolve) => {
    child.once('error', (spawnError) => resolve({ code: null, spawnError }));
    child.once('exit', (code) => resolve({ code }));
  });
  return { process: child, exited };
}
