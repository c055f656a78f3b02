"""make test's system-package step (scripts/apt_install.sh): as root it installs, without
root or password-less sudo it says so and the browser tests skip, and a failed install is
never taken for a skip (CI runs as root: there a missing package must fail the run)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def fake_bin(tmp_path: Path, uid: int) -> dict[str, str]:
    """An environment whose `id -u` is `uid`, whose sudo refuses, and whose apt-get fails loudly."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    scripts = {"id": f"echo {uid}", "sudo": "exit 1", "apt-get": 'echo "apt-get $*" >> "$APT_LOG"; exit 99'}
    for name, body in scripts.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "APT_LOG": str(tmp_path / "apt.log"),
            "INFILL_CHROMIUM": str(tmp_path / "no-chromium")}


def run(script: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(ROOT / "scripts" / script), *args], env=env, capture_output=True, text=True, timeout=120)


def test_without_root_nothing_is_installed_and_the_status_says_why(tmp_path: Path) -> None:
    env = fake_bin(tmp_path, uid=1000)
    assert run("apt_install.sh", env, "chromium").returncode == 3
    assert not (tmp_path / "apt.log").exists()  # apt-get never ran


def test_browser_setup_skips_with_a_message_without_root(tmp_path: Path) -> None:
    done = run("setup_browser_tests.sh", fake_bin(tmp_path, uid=1000), sys.executable)
    assert done.returncode == 0, done.stderr
    assert "SKIPPING the browser tests" in done.stderr and "sudo apt-get install chromium" in done.stderr


def test_a_failed_install_as_root_fails_the_setup(tmp_path: Path) -> None:
    env = fake_bin(tmp_path, uid=0)
    assert run("apt_install.sh", env, "chromium").returncode == 99
    done = run("setup_browser_tests.sh", env, sys.executable)
    assert done.returncode == 1 and "apt-get install chromium failed" in done.stderr
    assert "apt-get update" in (tmp_path / "apt.log").read_text()  # it was tried, as root, without sudo
