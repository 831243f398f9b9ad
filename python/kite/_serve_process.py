"""One `kite serve` child process pinned to its own CPUs: what each kite.ray replica runs.

kite.ray's ingress forwards requests to it over HTTP, so every endpoint, JSON shape,
streaming format, prefix cache and /metrics is exactly `kite serve`'s. The child dies with the
replica (PR_SET_PDEATHSIG), so a killed replica leaves no engine behind holding its CPUs.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import List, Optional, Sequence

_PR_SET_PDEATHSIG = 1


def find_kite_binary(explicit: Optional[str] = None) -> str:
    """The kite executable: --kite-bin, else $KITE_BIN, else `kite` on PATH, else this
    repository's release build (build/bin/kite next to python/kite)."""
    for candidate in (explicit, os.environ.get("KITE_BIN")):
        if candidate:
            return candidate
    on_path = shutil.which("kite")
    if on_path:
        return on_path
    built = Path(__file__).resolve().parents[2] / "build" / "bin" / "kite"
    if built.is_file():
        return str(built)
    raise FileNotFoundError(
        "no kite executable: pass --kite-bin, set KITE_BIN, or put kite on PATH")


class CpuClaim:
    """Claims `count` CPUs of this node for one replica, so that replicas on one node do not
    share cores: a lock file per CPU (flock), released when the holder exits, dead or alive."""

    def __init__(self, count: int) -> None:
        self.cpus: List[int] = []
        self._files = []
        allowed = sorted(os.sched_getaffinity(0))
        lock_dir = Path(tempfile.gettempdir()) / "kite-ray-cpus"
        lock_dir.mkdir(exist_ok=True)
        for start in range(0, len(allowed) - count + 1, count):
            block = allowed[start:start + count]
            files = [self._try_lock(lock_dir / f"cpu{c}.lock") for c in block]
            if all(files):
                self.cpus, self._files = block, files
                return
            for f in files:
                if f:
                    f.close()
        # Every block taken (more replicas than cores on this node): run unpinned.

    @staticmethod
    def _try_lock(path: Path):
        f = open(path, "a")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return f
        except OSError:
            f.close()
            return None

    def release(self) -> None:
        for f in self._files:
            f.close()
        self._files = []


class KiteServeProcess:
    def __init__(self, kite_bin: str, args: Sequence[str], cpus: Sequence[int],
                 host: str = "127.0.0.1", start_timeout_s: float = 300.0) -> None:
        self.cpus = list(cpus)
        command = [kite_bin, "serve", "--host", host, "--port", "0", *args]
        # PR_SET_PDEATHSIG fires when the forking *thread* ends: fork from a thread that lives
        # as long as the child (it waits on it), not from whichever thread runs this.
        started = threading.Event()
        spawned: dict = {}

        def spawn_and_wait() -> None:
            try:
                spawned["proc"] = subprocess.Popen(
                    command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                    preexec_fn=self._child_setup)
            except OSError as e:
                spawned["error"] = e
            started.set()
            if "proc" in spawned:
                spawned["proc"].wait()

        threading.Thread(target=spawn_and_wait, daemon=True, name="kite-serve").start()
        started.wait()
        if "error" in spawned:
            raise RuntimeError(f"cannot start {kite_bin}: {spawned['error']}")
        self.proc: subprocess.Popen = spawned["proc"]
        self.port = self._wait_for_port(start_timeout_s)
        self.url = f"http://{host}:{self.port}"
        self._wait_healthy(start_timeout_s)

    def _child_setup(self) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if self.cpus:
            os.sched_setaffinity(0, self.cpus)

    def _wait_for_port(self, timeout_s: float) -> int:
        deadline = time.monotonic() + timeout_s
        lines = []
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                raise RuntimeError("kite serve exited before listening: "
                                   + (" | ".join(lines[-3:]) or f"status {self.proc.wait()}"))
            lines.append(line.strip())
            found = re.search(r"listening on http://[^:]+:(\d+)", line)
            if found:
                # Keep its log flowing into this replica's log (and the pipe from filling).
                threading.Thread(target=self._relay_log, daemon=True).start()
                return int(found.group(1))
        raise TimeoutError(f"kite serve did not listen within {timeout_s:.0f} s")

    def _relay_log(self) -> None:
        for line in self.proc.stderr:
            sys.stderr.write(line)

    def _wait_healthy(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=5) as r:
                    if r.status == 200:
                        return
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise
            time.sleep(0.05)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def exit_status(self) -> Optional[int]:
        return self.proc.poll()

    def stop(self, grace_s: float = 10.0) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()  # kite serve ends its running requests, then exits
            try:
                self.proc.wait(grace_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
