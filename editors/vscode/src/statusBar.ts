// The status bar item: server phase (including model-loading progress), last latency,
// on/off. Rendering rules live in statusModel.ts; this only owns the VS Code item.

import * as vscode from 'vscode';
import { renderStatus, ServerPhase, StatusState } from './statusModel';

export class StatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private state: StatusState = { phase: { kind: 'starting' }, paused: false, languageEnabled: true };

  constructor() {
    this.item = vscode.window.createStatusBarItem('infill.status', vscode.StatusBarAlignment.Right, 100);
    this.item.name = 'infill';
    this.item.command = 'infill.showMenu';
    this.render();
    this.item.show();
  }

  get phase(): ServerPhase {
    return this.state.phase;
  }

  update(change: Partial<StatusState>): void {
    this.state = { ...this.state, ...change };
    this.render();
  }

  private render(): void {
    const view = renderStatus(this.state);
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
    this.item.backgroundColor = view.error ? new vscode.ThemeColor('statusBarItem.errorBackground') : undefined;
  }

  dispose(): void {
    this.item.dispose();
  }
}
