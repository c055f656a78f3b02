// Ghost text comes from vscode-languageclient's built-in textDocument/inlineCompletion
// support (LSP 3.18). This middleware adds what the extension needs around it: the
// on/off switches, the latency shown in the status bar, where a suggestion came from
// (a line of the workspace: shown after the ghost text), and reporting acceptance.

// Type-only imports: this module has no runtime dependency on VS Code, so the unit tests
// can run the middleware under plain Node.
import type * as vscode from 'vscode';
import type { Middleware } from 'vscode-languageclient/node';

/** Runs the server's accept command; registered in extension.ts. */
export const ACCEPTED_COMMAND = 'infill.internal.accepted';

export interface InlineHooks {
  /** Whether to ask the server at all for this document (toggle and infill.enable). */
  wanted(document: vscode.TextDocument): boolean;
  /** Whether the server's completion list (its fallback for editors without ghost text) is shown too. */
  completionListWanted(): boolean;
  latency(ms: number): void;
  /**
   * The answer at `position`: `origin` ("path:line") when its text is a line of the
   * workspace (`edited`: a line the model edited), undefined when it is the model's or
   * there is none (sourceHint.ts shows it).
   */
  answered?(document: vscode.TextDocument, position: vscode.Position, origin: string | undefined, edited?: boolean): void;
}

/**
 * Where an item's text came from, as the server says it in its accept command's second
 * argument (`{version, source, origin?}`, docs/lsp.md): the origin ("path:line") when
 * `source` is "workspace" (a line kept as is) or "edited" (a line the model edited),
 * else undefined.
 */
export function answerOrigin(command: vscode.Command | undefined): string | undefined {
  const details = command?.arguments?.[1] as { source?: unknown; origin?: unknown } | undefined;
  if (!details || typeof details !== 'object' || (details.source !== 'workspace' && details.source !== 'edited')) {
    return undefined;
  }
  return typeof details.origin === 'string' && details.origin !== '' ? details.origin : undefined;
}

/** Whether the item's text is a workspace line the model edited (`source` "edited"). */
export function answerEdited(command: vscode.Command | undefined): boolean {
  const details = command?.arguments?.[1] as { source?: unknown } | undefined;
  return !!details && typeof details === 'object' && details.source === 'edited';
}

/**
 * The faint text shown after the ghost text: `from utils.py:120` (`edited from ...` for a
 * line the model edited). `relative` shortens an absolute path (an open document outside
 * the index) as the editor names files.
 */
export function sourceLabel(origin: string, relative: (path: string) => string = (path) => path, edited = false): string {
  const from = edited ? 'edited from' : 'from';
  const match = /^(.*):(\d+)$/.exec(origin);
  return match ? `${from} ${relative(match[1])}:${match[2]}` : `${from} ${origin}`;
}

export function inlineMiddleware(hooks: InlineHooks): Middleware {
  return {
    provideInlineCompletionItems: async (document, position, context, token, next) => {
      if (!hooks.wanted(document)) {
        return null;
      }
      const started = performance.now();
      const result = await next(document, position, context, token);
      if (token.isCancellationRequested) {
        return null;
      }
      hooks.latency(performance.now() - started);
      const items = result ? (Array.isArray(result) ? result : result.items) : [];
      hooks.answered?.(document, position, items.length > 0 ? answerOrigin(items[0].command) : undefined, items.length > 0 && answerEdited(items[0].command));
      for (const item of items) {
        item.command = reportAcceptance(item.command);
      }
      return result;
    },
    provideCompletionItem: (document, position, context, token, next) => {
      // VS Code shows ghost text, so by default the same suggestion is not offered twice.
      if (!hooks.completionListWanted() || !hooks.wanted(document)) {
        return null;
      }
      return next(document, position, context, token);
    },
  };
}

/**
 * VS Code runs an inline item's command when the user accepts it (Tab). The server's
 * command is routed through ours so it reaches the server even if the client has not
 * registered that command name.
 */
function reportAcceptance(command: vscode.Command | undefined): vscode.Command | undefined {
  if (!command) {
    return undefined;
  }
  return { title: command.title, command: ACCEPTED_COMMAND, arguments: [command.command, command.arguments ?? []] };
}
