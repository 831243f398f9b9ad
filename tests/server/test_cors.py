"""Browser pages from the --cors-origin origins may call kite serve: their responses carry
Access-Control-Allow-Origin and their preflights are answered; without the flag no CORS
header is ever sent."""

import subprocess

import pytest

from test_server import KITE, MODEL, STARTUP_TIMEOUT, Server


PREFLIGHT = {"Access-Control-Request-Method": "POST",
             "Access-Control-Request-Headers": "authorization, content-type"}


def test_cors_origins_get_their_headers_and_preflights():
    s = Server("--max-seqs", "2", "--api-key", "k", "--cors-origin", "http://app.example:3000",
               "--cors-origin", "https://other.example")
    try:
        app = {"Origin": "http://app.example:3000"}
        r = s.http.options("/v1/chat/completions", headers={**app, **PREFLIGHT})
        assert r.status_code == 204, r.text  # without the key: browsers send none here
        assert r.headers["access-control-allow-origin"] == "http://app.example:3000"
        assert "POST" in r.headers["access-control-allow-methods"]
        assert r.headers["access-control-allow-headers"] == "authorization, content-type"
        assert int(r.headers["access-control-max-age"]) > 0
        assert r.headers["vary"] == "Origin"
        assert "content-length" not in r.headers and r.content == b""

        r = s.http.get("/v1/models", headers={**app, "Authorization": "Bearer k"})
        assert r.status_code == 200
        assert r.headers["access-control-allow-origin"] == "http://app.example:3000"
        assert r.headers["vary"] == "Origin"
        # Errors carry it too, so that the page can read them.
        r = s.http.get("/v1/models", headers={"Origin": "https://other.example"})
        assert r.status_code == 401
        assert r.headers["access-control-allow-origin"] == "https://other.example"

        evil = {"Origin": "http://evil.example"}
        r = s.http.options("/v1/chat/completions", headers={**evil, **PREFLIGHT})
        assert r.status_code == 403
        assert "access-control-allow-origin" not in r.headers
        r = s.http.get("/health", headers=evil)
        assert r.status_code == 200 and "access-control-allow-origin" not in r.headers
    finally:
        s.stop()
    assert s.proc.returncode == 0


def test_cors_any_origin():
    s = Server("--max-seqs", "2", "--cors-origin", "*")
    try:
        origin = {"Origin": "http://anywhere.example"}
        r = s.http.options("/v1/completions", headers={**origin, **PREFLIGHT})
        assert r.status_code == 204
        assert r.headers["access-control-allow-origin"] == "*"
        assert "vary" not in r.headers
        r = s.http.post("/v1/completions", json={"prompt": "Hi", "max_tokens": 1},
                        headers=origin)
        assert r.status_code == 200 and r.headers["access-control-allow-origin"] == "*"
    finally:
        s.stop()
    assert s.proc.returncode == 0


def test_no_cors_without_the_flag():
    s = Server("--max-seqs", "2")
    try:
        origin = {"Origin": "http://app.example"}
        r = s.http.get("/v1/models", headers=origin)
        assert r.status_code == 200
        assert not [h for h in r.headers if h.startswith("access-control-")]
        r = s.http.options("/v1/models", headers={**origin, **PREFLIGHT})
        assert r.status_code in (404, 405)
        assert not [h for h in r.headers if h.startswith("access-control-")]
    finally:
        s.stop()
    assert s.proc.returncode == 0


@pytest.mark.parametrize("origin", ["http://app.example/", "app.example", "http://", ""])
def test_bad_cors_origins_are_usage_errors(origin):
    r = subprocess.run([KITE, "serve", "-m", MODEL, "--port", "0", "--cors-origin", origin],
                       capture_output=True, text=True, timeout=STARTUP_TIMEOUT)
    assert r.returncode == 2, r.stderr
    assert "not an origin" in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr
