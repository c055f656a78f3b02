// The rules of next-edit suggestions, without the `vscode` module: which server answers
// are worth showing, whether Tab jumps or accepts, and when a suggestion goes stale.
// Positions are LSP's (0-based line, UTF-16 character), as VS Code's are.

export interface Pos {
  line: number;
  character: number;
}

export interface Span {
  start: Pos;
  end: Pos;
}

export interface TextEditLike {
  range: Span;
  newText: string;
}

/** `infill/nextEdit` request parameters, as the server expects them. */
export interface NextEditParams {
  textDocument: { uri: string; version: number };
  position: Pos;
}

/** `infill/nextEdit` result. */
export interface NextEditResult {
  edits: TextEditLike[];
}

export interface NextEditSuggestion {
  uri: string;
  /** Document version the edits apply to; any other version makes them stale. */
  version: number;
  edits: TextEditLike[];
}

export const NEXT_EDIT_METHOD = 'infill/nextEdit';

/** JSON-RPC "method not found": the server has no infill/nextEdit. */
export const METHOD_NOT_FOUND = -32601;

/**
 * Keeps the edits that would change the text. `textIn` returns the document's current
 * text for a range; an edit that rewrites a range with what is already there is noise.
 */
export function meaningfulEdits(result: unknown, textIn: (range: Span) => string): TextEditLike[] {
  if (!result || typeof result !== 'object' || !Array.isArray((result as NextEditResult).edits)) {
    return [];
  }
  return (result as NextEditResult).edits.filter(
    (edit) => isEdit(edit) && textIn(edit.range) !== edit.newText,
  );
}

function isEdit(value: unknown): value is TextEditLike {
  const edit = value as TextEditLike;
  return (
    !!edit &&
    typeof edit.newText === 'string' &&
    !!edit.range &&
    isPos(edit.range.start) &&
    isPos(edit.range.end)
  );
}

function isPos(value: unknown): value is Pos {
  const pos = value as Pos;
  return !!pos && Number.isInteger(pos.line) && Number.isInteger(pos.character) && pos.line >= 0 && pos.character >= 0;
}

/** Tab first moves the cursor to a suggestion that is off the cursor's lines, then accepts. */
export function tabAction(suggestion: NextEditSuggestion, cursor: Pos): 'jump' | 'accept' {
  const first = suggestion.edits[0];
  if (!first) {
    return 'accept';
  }
  const onItsLines = cursor.line >= first.range.start.line && cursor.line <= first.range.end.line;
  return onItsLines ? 'accept' : 'jump';
}

/**
 * Whether a document change makes the suggestion go away: any edit to its document
 * that is not the suggestion being applied (its ranges would no longer be right).
 */
export function isStaleAfterChange(suggestion: NextEditSuggestion, changedUri: string, newVersion: number): boolean {
  return changedUri === suggestion.uri && newVersion !== suggestion.version;
}

/** One line of text for the inline decoration; the hover shows the whole edit. */
export function previewText(newText: string, maxLength = 80): string {
  const lines = newText.split(/\r?\n/);
  let first = lines[0];
  if (first === '' && lines.length > 1) {
    first = lines[1];
  }
  const more = lines.filter((l) => l !== '').length > 1 ? ' …' : '';
  const text = first.length > maxLength ? first.slice(0, maxLength - 1) + '…' : first;
  return (text + more).replace(/\t/g, '  ');
}

/**
 * Tracks whether the server offers infill/nextEdit, so the client asks only while it
 * might, and says so once when it does not.
 */
export class FeatureGate {
  private disabledReason: string | undefined;

  constructor(private readonly log: (message: string) => void) {}

  get enabled(): boolean {
    return this.disabledReason === undefined;
  }

  /** Returns true the first time only, so the caller logs once. */
  disable(reason: string): boolean {
    if (this.disabledReason !== undefined) {
      return false;
    }
    this.disabledReason = reason;
    this.log(`next-edit suggestions are off: ${reason}`);
    return true;
  }

  /** A new server process may have the feature again. */
  reset(): void {
    this.disabledReason = undefined;
  }
}

/** Whether a JSON-RPC error says the method does not exist on the server. */
export function isMethodNotFound(error: unknown): boolean {
  return !!error && typeof error === 'object' && (error as { code?: unknown }).code === METHOD_NOT_FOUND;
}
