// Where a suggestion came from: when the ghost text is a line of the workspace kept as is,
// a faint `from utils.py:120` after it (the server names the place: docs/lsp.md, "Where a
// suggestion came from"). Shown at the end of the cursor's line while the suggestion is;
// any edit, cursor move, other editor or Esc takes it away. `infill.showSource` turns it off.

import * as vscode from 'vscode';
import { sourceLabel } from './inlineCompletions';

const CONTEXT_KEY = 'infill.sourceVisible';
/** Esc while the hint and the ghost text are shown: both go (package.json keybinding). */
export const HIDE_COMMAND = 'infill.internal.hideSuggestion';

export class SourceHint implements vscode.Disposable {
  private readonly decoration = vscode.window.createTextEditorDecorationType({
    after: {
      color: new vscode.ThemeColor('editorCodeLens.foreground'),
      fontStyle: 'italic',
      margin: '0 0 0 2em',
    },
  });
  private shownIn: vscode.TextEditor | undefined;
  private readonly disposables: vscode.Disposable[];

  constructor(private readonly enabled: () => boolean) {
    this.disposables = [
      this.decoration,
      vscode.window.onDidChangeTextEditorSelection(() => this.clear()),
      vscode.window.onDidChangeActiveTextEditor(() => this.clear()),
      vscode.workspace.onDidChangeTextDocument((event) => {
        if (event.contentChanges.length > 0) {
          this.clear();
        }
      }),
      vscode.commands.registerCommand(HIDE_COMMAND, async () => {
        this.clear();
        await vscode.commands.executeCommand('editor.action.inlineSuggest.hide');
      }),
    ];
  }

  /** The server answered at `position`; `origin` when the text is a workspace line (`edited` by the model). */
  answered(document: vscode.TextDocument, position: vscode.Position, origin: string | undefined, edited = false): void {
    this.clear();
    const editor = vscode.window.activeTextEditor;
    if (!origin || !this.enabled() || !editor || editor.document !== document || position.line >= document.lineCount) {
      return;
    }
    const end = document.lineAt(position.line).range.end;
    const contentText = sourceLabel(origin, (path) => vscode.workspace.asRelativePath(path, false), edited);
    editor.setDecorations(this.decoration, [{ range: new vscode.Range(end, end), renderOptions: { after: { contentText } } }]);
    this.shownIn = editor;
    void vscode.commands.executeCommand('setContext', CONTEXT_KEY, true);
  }

  clear(): void {
    if (!this.shownIn) {
      return;
    }
    this.shownIn.setDecorations(this.decoration, []);
    this.shownIn = undefined;
    void vscode.commands.executeCommand('setContext', CONTEXT_KEY, false);
  }

  dispose(): void {
    this.clear();
    for (const d of this.disposables) {
      d.dispose();
    }
  }
}
