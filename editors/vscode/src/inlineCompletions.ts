// Ghost text comes from vscode-languageclient's built-in textDocument/inlineCompletion
// support (LSP 3.18). This middleware adds what the extension needs around it: the
// on/off switches, the latency shown in the status bar, and reporting acceptance.

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
