// What the status bar item says, as a pure function of the extension's state.

export type ServerPhase =
  | { kind: 'starting' }
  | { kind: 'loading'; percentage?: number; message?: string }
  | { kind: 'ready' }
  | { kind: 'failed'; reason: string }
  /** The server runs but its model did not load (it says why in its own message). */
  | { kind: 'modelFailed'; reason: string }
  | { kind: 'stopped' };

export interface StatusState {
  phase: ServerPhase;
  /** Paused by the user with "infill: Toggle Completions". */
  paused: boolean;
  /** Whether the active editor's language is switched on in infill.enable. */
  languageEnabled: boolean;
  /** Round-trip time of the last inline completion request, in milliseconds. */
  lastLatencyMs?: number;
}

export interface StatusView {
  text: string;
  tooltip: string;
  /** Draws the item in the error colours. */
  error: boolean;
}

export function renderStatus(state: StatusState): StatusView {
  const { phase } = state;
  if (phase.kind === 'failed') {
    return { text: '$(error) infill', tooltip: `infill is not running: ${phase.reason}\nClick for actions.`, error: true };
  }
  if (phase.kind === 'modelFailed') {
    return { text: '$(error) infill', tooltip: `The model did not load: ${phase.reason}\nClick for actions.`, error: true };
  }
  if (phase.kind === 'stopped') {
    return { text: '$(debug-stop) infill', tooltip: 'infill server stopped. Click for actions.', error: false };
  }
  if (phase.kind === 'starting') {
    return { text: '$(sync~spin) infill', tooltip: 'Starting the infill server…', error: false };
  }
  if (phase.kind === 'loading') {
    const pct = phase.percentage === undefined ? '' : ` ${Math.round(phase.percentage)}%`;
    const detail = phase.message ? `: ${phase.message}` : '';
    return { text: `$(sync~spin) infill${pct}`, tooltip: `Loading the model${pct}${detail}`, error: false };
  }
  if (state.paused) {
    return { text: '$(circle-slash) infill', tooltip: 'infill completions are off. Click for actions.', error: false };
  }
  if (!state.languageEnabled) {
    return { text: '$(circle-slash) infill', tooltip: 'infill is off for this language (setting infill.enable).', error: false };
  }
  const latency = state.lastLatencyMs === undefined ? '' : ` ${Math.round(state.lastLatencyMs)} ms`;
  const tooltipLatency = state.lastLatencyMs === undefined ? 'no completion yet' : `last completion took ${Math.round(state.lastLatencyMs)} ms`;
  return { text: `$(sparkle) infill${latency}`, tooltip: `infill is on (${tooltipLatency}). Click for actions.`, error: false };
}

/** The subset of LSP's WorkDoneProgressBegin/Report/End this extension reads. */
export interface ProgressValue {
  kind: 'begin' | 'report' | 'end';
  message?: string;
  percentage?: number;
  title?: string;
}

/**
 * The server reports model loading with $/progress: begin and report mean "loading",
 * end means the server can answer again, unless its message says the load failed.
 * A dead server stays failed; a model that failed may load on the next try.
 */
const MODEL_FAILURE = /\b(not loaded|cannot load|could not load|failed)\b/i;

export function phaseAfterProgress(phase: ServerPhase, value: ProgressValue): ServerPhase {
  if (phase.kind === 'failed' || phase.kind === 'stopped') {
    return phase;
  }
  if (value.kind === 'end') {
    // The server ends its loading progress with the outcome, e.g. "model not loaded: …".
    if (value.message && MODEL_FAILURE.test(value.message)) {
      return { kind: 'modelFailed', reason: value.message };
    }
    return { kind: 'ready' };
  }
  const previous = phase.kind === 'loading' ? phase : undefined;
  return {
    kind: 'loading',
    percentage: value.percentage ?? previous?.percentage,
    message: value.message ?? value.title ?? previous?.message,
  };
}
