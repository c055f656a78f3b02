// Typed view of the `infill.*` settings. Kept free of the `vscode` module so the
// rules can be unit-tested with Node's test runner.

/** Per-language switch, keyed by VS Code language id; "*" is the default for the rest. */
export type LanguageEnableMap = Record<string, boolean>;

/** How the extension starts the language server. */
export interface ServerSettings {
  /** Path to the `infill` executable; empty means "look it up on PATH". */
  path: string;
  /** A Python interpreter that has infill installed; used when `path` is empty. */
  pythonPath: string;
  /** Extra arguments appended after `infill lsp`. */
  args: string[];
}

export const DEFAULT_LANGUAGE_ENABLE: LanguageEnableMap = {
  '*': true,
  plaintext: false,
  markdown: false,
  scminput: false,
};

/**
 * Whether completions are wanted for a language. A language listed explicitly wins;
 * otherwise "*" decides; with neither, completions are on (the server decides what
 * it can complete).
 */
export function isEnabledForLanguage(map: LanguageEnableMap | undefined, languageId: string): boolean {
  const effective = { ...DEFAULT_LANGUAGE_ENABLE, ...(map ?? {}) };
  if (Object.prototype.hasOwnProperty.call(effective, languageId)) {
    return effective[languageId] !== false;
  }
  return effective['*'] !== false;
}

/** Reads a possibly-untyped settings object into ServerSettings, ignoring bad values. */
export function readServerSettings(raw: unknown): ServerSettings {
  const record = (raw && typeof raw === 'object' ? raw : {}) as Record<string, unknown>;
  const text = (value: unknown): string => (typeof value === 'string' ? value.trim() : '');
  const args = Array.isArray(record.args) ? record.args.filter((a): a is string => typeof a === 'string') : [];
  return { path: text(record.path), pythonPath: text(record.pythonPath), args };
}

/**
 * Settings whose change needs a new server process (the rest reach the running server
 * through workspace/didChangeConfiguration).
 */
export const RESTART_SETTINGS = ['infill.server', 'infill.modelDir', 'infill.remote'] as const;

/** The `infill.remote.*` settings: a team server that answers instead of a local model. */
export interface RemoteSettings {
  /** Base URL of `infill serve` (or any OpenAI-compatible server); empty = a local model. */
  url: string;
  /** File holding the token; empty = the INFILL_TOKEN environment variable, if any. */
  tokenFile: string;
  /** Model name to request; empty = the first one the server lists. */
  model: string;
}

export function readRemoteSettings(raw: unknown): RemoteSettings {
  const record = (raw && typeof raw === 'object' ? raw : {}) as Record<string, unknown>;
  const text = (value: unknown): string => (typeof value === 'string' ? value.trim() : '');
  return { url: text(record.url), tokenFile: text(record.tokenFile), model: text(record.model) };
}

/**
 * Arguments for `infill lsp` that point it at a remote server. The token itself never
 * goes on the command line (other users can read it there): only the file it is in.
 */
export function remoteArgs(remote: RemoteSettings): string[] {
  if (!remote.url) {
    return [];
  }
  const args = ['--remote', remote.url];
  if (remote.tokenFile) {
    args.push('--remote-token-file', remote.tokenFile);
  }
  if (remote.model) {
    args.push('--remote-model', remote.model);
  }
  return args;
}
