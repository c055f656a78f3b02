"""Runs a command as a pass-through proxy and SIGKILLs it a moment after it reports ready.

Used by the e2e test of crash restarts: a fixed kill timer raced the server's start-up on
a loaded machine (killed before `initialize` was answered, it is a failed start, which the
extension rightly reports instead of restarting). Waiting for the server's "ready in" log
line makes every kill a crash of a running server.

    python crash_after_ready.py SECONDS COMMAND [ARGS...]   (exits 3 after the kill)
"""
import os
import subprocess
import sys
import threading
import time

delay = float(sys.argv[1])
child = subprocess.Popen(sys.argv[2:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
ready = threading.Event()


def pump_stdin() -> None:
    while chunk := os.read(0, 65536):
        child.stdin.write(chunk)
        child.stdin.flush()
    child.stdin.close()


def pump_stdout() -> None:
    seen = b""
    while chunk := os.read(child.stdout.fileno(), 65536):
        os.write(1, chunk)
        seen = (seen + chunk)[-4096:]
        if b"ready in" in seen:
            ready.set()


threading.Thread(target=pump_stdin, daemon=True).start()
threading.Thread(target=pump_stdout, daemon=True).start()
while not ready.is_set() and child.poll() is None:
    time.sleep(0.05)
time.sleep(delay)
child.kill()
child.wait()
sys.exit(3)
