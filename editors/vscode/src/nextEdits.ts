// Next-edit suggestions: after the user pauses, ask the server where the next edit
// probably is (`infill/nextEdit`), draw it where it will land, and let Tab jump to it
// and then accept it. Any other change to the document dismisses it.

import * as vscode from 'vscode';
import { LanguageClient } from 'vscode-languageclient/node';
import {
  FeatureGate,
  isMethodNotFound,
  isStaleAfterChange,
  meaningfulEdits,
  NEXT_EDIT_METHOD,
  NextEditParams,
  NextEditSuggestion,
  previewText,
  Span,
  tabAction,
} from './nextEditModel';

const CONTEXT_KEY = 'infill.nextEditVisible';

export interface NextEditHooks {
  client(): LanguageClient | undefined;
  wanted(document: vscode.TextDocument): boolean;
  delayMs(): number;
}

export class NextEditController implements vscode.Disposable {
  private suggestion: NextEditSuggestion | undefined;
  private timer: NodeJS.Timeout | undefined;
  private pending: vscode.CancellationTokenSource | undefined;
  private applying = false;
  private readonly gate: FeatureGate;
  private readonly removed = vscode.window.createTextEditorDecorationType({
    backgroundColor: new vscode.ThemeColor('diffEditor.removedTextBackground'),
    textDecoration: 'line-through',
  });
  private readonly inserted = vscode.window.createTextEditorDecorationType({});
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly hooks: NextEditHooks, log: (message: string) => void) {
    this.gate = new FeatureGate(log);
    this.disposables.push(
      vscode.workspace.onDidChangeTextDocument((event) => this.onChange(event)),
      vscode.window.onDidChangeActiveTextEditor(() => this.dismiss()),
      vscode.commands.registerCommand('infill.nextEdit.jumpOrAccept', () => this.jumpOrAccept()),
      vscode.commands.registerCommand('infill.nextEdit.dismiss', () => this.dismiss()),
      this.removed,
      this.inserted,
    );
  }

  /** A new server process: it may offer the feature even if the last one did not. */
  serverStarted(client: LanguageClient): void {
    this.gate.reset();
    const experimental = client.initializeResult?.capabilities.experimental as { infill?: { nextEdit?: boolean } } | undefined;
    if (experimental?.infill?.nextEdit === false) {
      this.gate.disable('the server says it has no infill/nextEdit');
    }
  }

  private onChange(event: vscode.TextDocumentChangeEvent): void {
    if (event.contentChanges.length === 0 || this.applying) {
      return;
    }
    const uri = event.document.uri.toString();
    if (this.suggestion && isStaleAfterChange(this.suggestion, uri, event.document.version)) {
      this.dismiss();
    }
    const editor = vscode.window.activeTextEditor;
    if (editor && editor.document === event.document) {
      this.schedule(editor);
    }
  }

  private schedule(editor: vscode.TextEditor): void {
    clearTimeout(this.timer);
    this.pending?.cancel();
    if (!this.gate.enabled || !this.hooks.wanted(editor.document)) {
      return;
    }
    this.timer = setTimeout(() => void this.request(editor), this.hooks.delayMs());
  }

  private async request(editor: vscode.TextEditor): Promise<void> {
    const client = this.hooks.client();
    if (!client || editor !== vscode.window.activeTextEditor) {
      return;
    }
    const document = editor.document;
    const version = document.version;
    const params: NextEditParams = {
      textDocument: { uri: client.code2ProtocolConverter.asUri(document.uri), version },
      position: client.code2ProtocolConverter.asPosition(editor.selection.active),
    };
    const source = new vscode.CancellationTokenSource();
    const token = source.token;
    this.pending = source;
    let result: unknown;
    try {
      result = await client.sendRequest(NEXT_EDIT_METHOD, params, token);
    } catch (error) {
      if (isMethodNotFound(error)) {
        this.gate.disable('the server has no infill/nextEdit request');
      }
      return;
    } finally {
      if (this.pending === source) {
        this.pending = undefined;
      }
      source.dispose();
    }
    if (token.isCancellationRequested || document.version !== version || editor !== vscode.window.activeTextEditor) {
      return; // the user typed on; this answer is for text that no longer exists
    }
    const edits = meaningfulEdits(result, (range) => document.getText(toRange(range)));
    if (edits.length > 0) {
      this.show(editor, { uri: document.uri.toString(), version, edits });
    }
  }

  private show(editor: vscode.TextEditor, suggestion: NextEditSuggestion): void {
    this.suggestion = suggestion;
    const removed: vscode.DecorationOptions[] = [];
    const inserted: vscode.DecorationOptions[] = [];
    for (const edit of suggestion.edits) {
      const range = toRange(edit.range);
      const hover = new vscode.MarkdownString();
      hover.appendMarkdown('**infill** suggests (Tab to jump/accept, Esc to dismiss):\n');
      hover.appendCodeblock(edit.newText, editor.document.languageId);
      if (!range.isEmpty) {
        removed.push({ range, hoverMessage: hover });
      }
      if (edit.newText !== '') {
        inserted.push({
          range: new vscode.Range(range.end, range.end),
          hoverMessage: hover,
          renderOptions: {
            after: {
              contentText: previewText(edit.newText),
              color: new vscode.ThemeColor('editorGhostText.foreground'),
              backgroundColor: new vscode.ThemeColor('diffEditor.insertedTextBackground'),
              fontStyle: 'italic',
            },
          },
        });
      }
    }
    editor.setDecorations(this.removed, removed);
    editor.setDecorations(this.inserted, inserted);
    void vscode.commands.executeCommand('setContext', CONTEXT_KEY, true);
  }

  private async jumpOrAccept(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    const suggestion = this.suggestion;
    if (!editor || !suggestion || editor.document.uri.toString() !== suggestion.uri) {
      this.dismiss();
      return;
    }
    const cursor = editor.selection.active;
    if (tabAction(suggestion, { line: cursor.line, character: cursor.character }) === 'jump') {
      const target = toRange(suggestion.edits[0].range).start;
      editor.selection = new vscode.Selection(target, target);
      editor.revealRange(new vscode.Range(target, target), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
      return;
    }
    this.applying = true;
    try {
      await editor.edit((builder) => {
        for (const edit of suggestion.edits) {
          builder.replace(toRange(edit.range), edit.newText);
        }
      });
    } finally {
      this.applying = false;
      this.dismiss();
    }
  }

  dismiss(): void {
    this.suggestion = undefined;
    this.pending?.cancel();
    for (const editor of vscode.window.visibleTextEditors) {
      editor.setDecorations(this.removed, []);
      editor.setDecorations(this.inserted, []);
    }
    void vscode.commands.executeCommand('setContext', CONTEXT_KEY, false);
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.pending?.cancel();
    for (const d of this.disposables) {
      d.dispose();
    }
  }
}

function toRange(span: Span): vscode.Range {
  return new vscode.Range(span.start.line, span.start.character, span.end.line, span.end.character);
}
