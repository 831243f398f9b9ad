"""kite serve against hostile or careless clients, over raw sockets: bodies over the limit
(chunked or not), slow and idle connections, pipelining, half-closes, oversized heads, the
connection cap, a second server on the port, and shutdown with streams open. Every wait is
bounded; each test takes a few seconds at most."""

import json
import resource
import signal
import socket
import statistics
import subprocess
import threading
import time

import pytest

from test_server import KITE, MODEL, Server

TIMEOUT = 10


@pytest.fixture(scope="module")
def server():
    s = Server("--max-seqs", "4")
    yield s
    s.stop()
    assert s.proc.returncode == 0


def connect(server):
    return socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT)


def read_response(sock):
    """One whole response (Content-Length or chunked): (status, headers, body)."""
    f = sock.makefile("rb", buffering=0)  # unbuffered: pipelined answers stay in the socket
    status = int(f.readline().split()[1])
    headers = {}
    while (line := f.readline().rstrip(b"\r\n")):
        k, v = line.decode().split(":", 1)
        headers[k.strip().lower()] = v.strip()
    if headers.get("transfer-encoding") == "chunked":
        body = b""
        while (size := int(f.readline().strip(), 16)):
            body += f.read(size)
            f.readline()
        f.readline()
    else:
        body = f.read(int(headers.get("content-length", 0)))
    return status, headers, body


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS"))


def test_chunked_body_over_the_limit_is_refused_while_it_arrives(server):
    rss_before = rss_kib(server.proc.pid)
    with connect(server) as sock:
        sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"10000\r\n" + b"a" * 0x10000 + b"\r\n"
        sent = 0
        sock.settimeout(0.001)
        answer = b""
        while sent < (1 << 30) and not answer:
            try:
                sock.sendall(chunk)
                sent += len(chunk)
            except (socket.timeout, BrokenPipeError, ConnectionResetError):
                pass
            try:
                answer = sock.recv(65536)
            except socket.timeout:
                pass
        sock.settimeout(TIMEOUT)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:80]
    assert sent < (8 << 20), sent  # refused soon after 1 MiB, not after the whole upload
    assert rss_kib(server.proc.pid) - rss_before < 8 * 1024
    assert server.http.get("/health").status_code == 200


def test_post_without_length_is_answered_at_once(server):
    with connect(server) as sock:
        start = time.monotonic()
        sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n\r\n")
        status, _, body = read_response(sock)
    assert status == 411 and json.loads(body)["error"]["message"]
    assert time.monotonic() - start < 1


@pytest.mark.parametrize("head, status", [
    (b"GET /health HTTP/1.1\r\n" + b"".join(b"X-%d: 1\r\n" % i for i in range(200)) + b"\r\n",
     431),
    (b"GET /health HTTP/1.1\r\nX-Big: " + b"a" * 40000 + b"\r\n\r\n", 431),
    (b"GET /" + b"a" * 40000 + b" HTTP/1.1\r\n\r\n", 414),
    (b"GET /health HTTP/1.1\r\n folded: 1\r\n\r\n", 400),
    (b"POST /v1/completions HTTP/1.1\r\nContent-Length: 5\r\n"
     b"Transfer-Encoding: chunked\r\n\r\n", 400),
    (b"POST /v1/completions HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n", 413),
    (b"GET /health HTTP/2.0\r\n\r\n", 505),
])
def test_malformed_or_oversized_heads_get_4xx(server, head, status):
    with connect(server) as sock:
        sock.sendall(head)
        assert read_response(sock)[0] == status


def test_pipelined_requests_are_answered_in_order(server):
    with connect(server) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
                     b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"
                     b"GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n")
        answers = [read_response(sock) for _ in range(3)]
    assert [a[0] for a in answers] == [200, 200, 404]
    assert json.loads(answers[0][2]) == {"status": "ok"}
    assert json.loads(answers[1][2])["object"] == "list"


@pytest.mark.parametrize("half_close", [False, True])
def test_malformed_request_pipelined_behind_a_valid_one_is_answered_at_once(server, half_close):
    with connect(server) as sock:
        start = time.monotonic()
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\nGARBAGE\r\n\r\n")
        if half_close:
            sock.shutdown(socket.SHUT_WR)
        first = read_response(sock)
        second = read_response(sock)
        elapsed = time.monotonic() - start
        assert sock.recv(1) == b""  # then the server closes
    assert first[0] == 200 and json.loads(first[2]) == {"status": "ok"}
    assert second[0] == 400 and second[1].get("connection") == "close"
    assert "malformed" in json.loads(second[2])["error"]["message"]
    assert elapsed < 0.1, elapsed  # as soon as the parser knows, not at the read timeout


def test_half_closed_client_gets_its_answer(server):
    with connect(server) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        sock.shutdown(socket.SHUT_WR)
        status, _, body = read_response(sock)
    assert status == 200 and json.loads(body) == {"status": "ok"}


def test_idle_and_trickling_connections_do_not_starve_others():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    server = Server("--max-seqs", "2", "--read-timeout", "2")
    socks = []
    try:
        for i in range(600):
            s = connect(server)
            if i % 2:  # slowloris: a request head that never ends
                s.sendall(b"POST /v1/completions HTTP/1.1\r\nX-a: 1\r\n")
            socks.append(s)
        for s in socks[1::2]:
            s.sendall(b"X-b: 2\r\n")
        times = []
        for _ in range(10):
            start = time.monotonic()
            assert server.http.get("/health").status_code == 200
            times.append(time.monotonic() - start)
        assert statistics.median(times) < 0.1, times
        r = server.http.post("/v1/completions", json={"prompt": "Hi", "max_tokens": 2})
        assert r.status_code == 200 and r.json()["usage"]["completion_tokens"] == 2
        # --read-timeout 2: the heads that never end get 408, the idle sockets are closed.
        time.sleep(2.5)
        for s in socks[1::2][:5]:
            assert read_response(s)[0] == 408
        for s in socks[::2][:5]:
            assert s.recv(1) == b""
    finally:
        for s in socks:
            s.close()
        server.stop()
    assert server.proc.returncode == 0


def test_connection_cap_answers_503():
    s = Server("--max-seqs", "2", "--max-connections", "4")
    try:
        held = [socket.create_connection(("127.0.0.1", s.port), timeout=TIMEOUT)
                for _ in range(4)]
        time.sleep(0.2)
        with socket.create_connection(("127.0.0.1", s.port), timeout=TIMEOUT) as extra:
            status, headers, body = read_response(extra)
        assert status == 503 and json.loads(body)["error"]["message"]
        for h in held:
            h.close()
        time.sleep(0.2)
        assert s.http.get("/health").status_code == 200
    finally:
        s.stop()
    assert s.proc.returncode == 0


def test_second_server_on_the_same_port_fails(server):
    p = subprocess.run([KITE, "serve", "-m", MODEL, "--host", "127.0.0.1", "--port",
                        str(server.port), "-c", "256", "--kv-mem", "16M"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1
    assert f"cannot listen on 127.0.0.1:{server.port}" in p.stderr
    assert "in use" in p.stderr
    for _ in range(10):
        assert server.http.get("/health").status_code == 200


def test_shutdown_ends_every_open_request_and_exits_0():
    s = Server("--max-seqs", "2")
    results = [None] * 4

    def stream(i):
        with socket.create_connection(("127.0.0.1", s.port), timeout=30) as sock:
            body = json.dumps({"prompt": "Once upon a time", "max_tokens": 1500,
                               "stream": True, "ignore_eos": True}).encode()
            sock.sendall(b"POST /v1/completions HTTP/1.1\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n" % len(body) + body)
            results[i] = read_response(sock)

    threads = [threading.Thread(target=stream, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    time.sleep(1.5)  # two running, two waiting for a slot
    start = time.monotonic()
    s.proc.send_signal(signal.SIGTERM)
    s.proc.wait(timeout=20)
    for t in threads:
        t.join(timeout=20)
    assert s.proc.returncode == 0
    assert time.monotonic() - start < 10
    for status, _, body in results:
        assert status == 200
        events = [e[len("data: "):] for e in body.decode().split("\n\n") if e.startswith("data: ")]
        assert events[-1] == "[DONE]"
        assert "error" in json.loads(events[-2])
