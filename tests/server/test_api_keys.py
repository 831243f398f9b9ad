"""kite serve's API keys from --api-key and --api-key-file together: any listed key works,
SIGHUP reloads the file, a reload that fails keeps the old keys, and a file that cannot be
used stops the server before it listens."""

import os
import queue
import signal
import subprocess
import threading
import time

from test_server import KITE, MODEL, STARTUP_TIMEOUT, Server


def status_with_key(server, key, path="/v1/models"):
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    if path == "/v1/models":
        return server.http.get(path, headers=headers).status_code
    return server.http.post(path, json={"content": "hi"}, headers=headers).status_code


def stderr_lines(server):
    """The server's later stderr lines, as they come (the reader thread ends with it)."""
    lines = queue.Queue()

    def read():
        for line in server.proc.stderr:
            lines.put(line)
    threading.Thread(target=read, daemon=True).start()
    return lines


def line_saying(lines, text, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=deadline - time.monotonic())
        except queue.Empty:
            break
        if text in line:
            return line
    raise AssertionError(f"no line saying {text!r} within {timeout} s")


def test_api_key_file_keys_and_reload(tmp_path):
    keys = tmp_path / "keys"
    keys.write_text("# team keys\nfile-key-1\n\n   file-key-2  \r\n# old: revoked-key\n")
    s = Server("--max-seqs", "2", "--api-key", "flag-key", "--api-key-file", str(keys))
    try:
        lines = stderr_lines(s)
        for key in ("flag-key", "file-key-1", "file-key-2"):
            assert status_with_key(s, key) == 200, key
        for key in ("", "revoked-key", "# team keys", "file-key-1 file-key-2"):
            assert status_with_key(s, key) == 401, key
        # The token routes are keyed too; /health is not.
        assert status_with_key(s, "", "/tokenize") == 401
        assert status_with_key(s, "file-key-2", "/tokenize") == 200
        assert s.http.get("/health").status_code == 200

        keys.write_text("file-key-3\n")
        s.proc.send_signal(signal.SIGHUP)
        assert "1 API keys" in line_saying(lines, "reloaded")
        assert status_with_key(s, "file-key-3") == 200
        assert status_with_key(s, "file-key-1") == 401
        assert status_with_key(s, "flag-key") == 200  # --api-key stays

        # A reload that fails keeps the keys it had, and says so in one line.
        keys.write_text("# nothing but comments\n")
        s.proc.send_signal(signal.SIGHUP)
        assert "keeping the 1 keys" in line_saying(lines, "holds no key")
        os.remove(keys)
        s.proc.send_signal(signal.SIGHUP)
        assert "keeping the 1 keys" in line_saying(lines, "cannot read")
        assert status_with_key(s, "file-key-3") == 200
    finally:
        s.stop()
    assert s.proc.returncode == 0


def test_unusable_api_key_files_stop_the_server_before_it_listens(tmp_path):
    empty = tmp_path / "empty"
    empty.write_text("\n# no key here\n\n")
    for path, why in [(tmp_path / "missing", "cannot read the API key file"),
                      (empty, "holds no key")]:
        r = subprocess.run([KITE, "serve", "-m", MODEL, "--port", "0", "--api-key-file",
                            str(path)], capture_output=True, text=True, timeout=STARTUP_TIMEOUT)
        assert r.returncode == 1, r.stderr
        assert why in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr
