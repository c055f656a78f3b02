// Turns "the server process died" into a message that says what to fix. The server's
// last stderr lines are the evidence; the patterns are the failures users actually hit
// (package missing from the interpreter, model directory missing, unknown subcommand).

/** Keeps the last few lines a process wrote, for error messages. */
export class OutputTail {
  private lines: string[] = [];
  private partial = '';

  constructor(private readonly maxLines = 40) {}

  push(chunk: string): void {
    const parts = (this.partial + chunk).split(/\r?\n/);
    this.partial = parts.pop() ?? '';
    for (const line of parts) {
      this.lines.push(line);
    }
    if (this.lines.length > this.maxLines) {
      this.lines = this.lines.slice(-this.maxLines);
    }
  }

  text(): string {
    return [...this.lines, this.partial].filter((l) => l.trim() !== '').join('\n');
  }

  clear(): void {
    this.lines = [];
    this.partial = '';
  }
}

export interface ServerFailure {
  summary: string;
  fix: string;
  /** Setting that fixes it, when one does. */
  setting?: string;
}

/** Last non-empty line, which for a Python traceback is the exception itself. */
function lastLine(text: string): string {
  const lines = text.split('\n').map((l) => l.trim()).filter(Boolean);
  return lines.length ? lines[lines.length - 1] : '';
}

export function explainServerFailure(stderr: string, exitCode: number | null | undefined): ServerFailure {
  const last = lastLine(stderr);
  const missingModule = /No module named ['"]?([\w.]+)/.exec(stderr);
  if (missingModule) {
    const module = missingModule[1];
    const ours = /^(engine|infill_lsp|grammars)(\.|$)/.test(module);
    return {
      summary: `the infill server could not import ${module}.`,
      fix: ours
        ? 'infill is not installed for this interpreter: run `pip install -e /path/to/infill` (a checkout; the `infill` on PyPI is an unrelated package) with it, or point infill.server.pythonPath at the right one.'
        : `a dependency is missing: run \`pip install -e /path/to/infill\` again in the server's environment (it installs ${module}).`,
      setting: 'infill.server.pythonPath',
    };
  }
  if (/model/i.test(stderr) && /(not found|no such file|does not exist|missing|cannot load|could not load)/i.test(stderr)) {
    return {
      summary: `the infill server could not load its model (${last}).`,
      fix: 'Point infill.modelDir at an existing model directory, or clear it to use the built-in model.',
      setting: 'infill.modelDir',
    };
  }
  if (/invalid choice: ['"]?lsp|unrecognized arguments|usage: infill/i.test(stderr)) {
    return {
      summary: `this infill does not understand \`infill lsp\` (${last}).`,
      fix: 'Update your infill checkout (`git pull`, then `pip install -e /path/to/infill`), or check infill.server.args.',
      setting: 'infill.server.args',
    };
  }
  const code = exitCode === null || exitCode === undefined ? '' : ` (exit code ${exitCode})`;
  return {
    summary: `the infill server stopped${code}${last ? `: ${last}` : '.'}`,
    fix: 'The log (command "infill: Show Log") has its full output; "infill: Restart Server" starts it again.',
  };
}

export function formatFailure(failure: ServerFailure): string {
  // The summary may end with the server's own last line, which has no full stop.
  const summary = /[.!?]$/.test(failure.summary) ? failure.summary : `${failure.summary}.`;
  return `infill: ${summary} ${failure.fix}`;
}
