// Decides which process to start for `infill lsp` / `infill serve`, and explains what to
// fix when there is nothing to start. Pure apart from the injected file-system probe, so
// every branch is unit-tested.

import * as path from 'path';
import { ServerSettings } from './settings';

/** A program plus the arguments that come before the infill subcommand. */
export interface Launcher {
  command: string;
  /** Arguments before the subcommand (`lsp`, `serve`); empty for the `infill` script. */
  prefixArgs: string[];
  /** Human-readable origin, used in messages and the log. */
  source: 'setting infill.server.path' | 'setting infill.server.pythonPath' | 'PATH';
}

/** A setup problem together with the one thing the user should do about it. */
export interface LaunchProblem {
  kind: 'not-found' | 'bad-path' | 'bad-python' | 'model-missing';
  message: string;
  /** The setting that fixes it, so the message can offer to open it. */
  setting: string;
}

export interface FileProbe {
  isExecutableFile(file: string): boolean;
  isDirectory(dir: string): boolean;
}

// `python -c` runs the same CLI entry point as the `infill` console script, so both ways
// of starting accept the same subcommands and flags.
export const PYTHON_BOOTSTRAP = 'import sys; from infill_lsp.cli import main; sys.exit(main())';

export function findOnPath(program: string, envPath: string | undefined, probe: FileProbe, platform = process.platform): string | undefined {
  if (!envPath) {
    return undefined;
  }
  const separator = platform === 'win32' ? ';' : ':';
  const suffixes = platform === 'win32' ? ['.exe', '.cmd', '.bat', ''] : [''];
  for (const dir of envPath.split(separator)) {
    if (!dir) {
      continue;
    }
    for (const suffix of suffixes) {
      const candidate = path.join(dir, program + suffix);
      if (probe.isExecutableFile(candidate)) {
        return candidate;
      }
    }
  }
  return undefined;
}

export function resolveLauncher(settings: ServerSettings, envPath: string | undefined, probe: FileProbe): Launcher | LaunchProblem {
  if (settings.path) {
    if (!probe.isExecutableFile(settings.path)) {
      return {
        kind: 'bad-path',
        setting: 'infill.server.path',
        message:
          `infill: the setting infill.server.path points to "${settings.path}", which is not an executable file. ` +
          'Set it to the `infill` program (for example .venv/bin/infill), or clear it to look `infill` up on PATH.',
      };
    }
    return { command: settings.path, prefixArgs: [], source: 'setting infill.server.path' };
  }
  if (settings.pythonPath) {
    const python = findPython(settings.pythonPath, envPath, probe);
    if (!python) {
      return {
        kind: 'bad-python',
        setting: 'infill.server.pythonPath',
        message:
          `infill: the setting infill.server.pythonPath is "${settings.pythonPath}", which is not a Python interpreter here. ` +
          'Set it to the python of the environment where you installed infill (`pip install -e /path/to/infill`), or clear it.',
      };
    }
    return { command: python, prefixArgs: ['-c', PYTHON_BOOTSTRAP], source: 'setting infill.server.pythonPath' };
  }
  const onPath = findOnPath('infill', envPath, probe);
  if (!onPath) {
    return {
      kind: 'not-found',
      setting: 'infill.server.path',
      message:
        'infill: the `infill` command was not found on PATH, so completions are off. ' +
        'Install it from a checkout of its repository with `pip install -e /path/to/infill` (the `infill` on PyPI is an unrelated package), then reload the window; ' +
        'or set infill.server.path to the `infill` program, or infill.server.pythonPath to a Python that has it.',
    };
  }
  return { command: onPath, prefixArgs: [], source: 'PATH' };
}

function findPython(setting: string, envPath: string | undefined, probe: FileProbe): string | undefined {
  // A bare name such as "python3" is looked up on PATH like a shell would.
  if (!setting.includes('/') && !setting.includes('\\')) {
    return findOnPath(setting, envPath, probe);
  }
  return probe.isExecutableFile(setting) ? setting : undefined;
}

/** An explicit model directory that does not exist would make the server fail to load. */
export function checkModelDir(modelDir: string, probe: FileProbe): LaunchProblem | undefined {
  if (!modelDir || probe.isDirectory(modelDir)) {
    return undefined;
  }
  return {
    kind: 'model-missing',
    setting: 'infill.modelDir',
    message:
      `infill: the model directory "${modelDir}" (setting infill.modelDir) does not exist. ` +
      'Point infill.modelDir at an existing model directory, or clear it to use the built-in model.',
  };
}

export function isLaunchProblem(value: Launcher | LaunchProblem): value is LaunchProblem {
  return (value as LaunchProblem).kind !== undefined;
}

export function lspArgs(launcher: Launcher, extraArgs: string[]): string[] {
  return [...launcher.prefixArgs, 'lsp', ...extraArgs];
}

export function serveArgs(launcher: Launcher): string[] {
  return [...launcher.prefixArgs, 'serve'];
}
