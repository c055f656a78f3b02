// Builds the object the server receives for the `infill` configuration section.
//
// Only keys the server understands are sent (it reports any other key as a bad sampler
// knob), and only values the user set explicitly: the server's own defaults were chosen
// by measurement and may change, so the extension must not pin them by echoing the
// defaults written in package.json.

/** VS Code setting (under `infill.`) → key the server reads. */
export const SERVER_KEYS = [
  'modelDir',
  'maxTokens',
  'debounceMs',
  'constrained',
  'temperature',
  'crossFileChars',
  'sampler',
  'workspaceIndex',
] as const;

export type ServerKey = (typeof SERVER_KEYS)[number];

/**
 * `explicitValue(key)` returns the user's value for `infill.<key>` (workspace folder,
 * workspace or user level), or undefined when the key is left at its default.
 */
export function serverSettings(explicitValue: (key: ServerKey) => unknown): Record<string, unknown> {
  const settings: Record<string, unknown> = {};
  for (const key of SERVER_KEYS) {
    const value = explicitValue(key);
    if (value === undefined || value === null) {
      continue;
    }
    if (key === 'modelDir' && typeof value === 'string' && value.trim() === '') {
      continue; // empty means "the built-in model", which is also the server's default
    }
    if (key === 'sampler' && (typeof value !== 'object' || Object.keys(value as object).length === 0)) {
      continue;
    }
    settings[key] = value;
  }
  return settings;
}
