"""Run a benchmark program in a separate, limited process and report pass or fail.

Only evaluation code runs programs, and only benchmark programs: never a user's code.
The child runs isolated (`python -I`, empty environment, a fresh temporary directory as
its working directory), with CPU-time and memory limits and a wall-clock timeout.
"""
from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
from dataclasses import dataclass

MEMORY_LIMIT_BYTES = 1 << 30


@dataclass
class ExecutionResult:
    passed: bool
    reason: str  # "passed" | "failed" | "timeout"


def _limits(cpu_seconds: int) -> None:  # runs in the child before exec
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds))
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))
    os.setsid()


def run_program(source: str, timeout: float = 10.0) -> ExecutionResult:
    with tempfile.TemporaryDirectory(prefix="infill-eval-") as workdir:
        path = os.path.join(workdir, "program.py")
        with open(path, "w") as fh:
            fh.write(source)
        try:
            proc = subprocess.run(
                [sys.executable, "-I", path],
                cwd=workdir,
                env={"PATH": "/usr/bin:/bin", "PYTHONHASHSEED": "0", "OMP_NUM_THREADS": "1"},
                capture_output=True,
                timeout=timeout,
                preexec_fn=lambda: _limits(int(timeout) + 1),
            )
        except subprocess.TimeoutExpired:
            return ExecutionResult(False, "timeout")
    return ExecutionResult(proc.returncode == 0, "passed" if proc.returncode == 0 else "failed")
