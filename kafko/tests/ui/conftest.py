"""Fixtures for the console's end-to-end tests: the real kafko binary on a loopback
port with a temporary data directory, Debian's Chromium driven by Playwright, and a
small HTTP client for what the tests do behind the console's back.

Environment: KAFKO_BIN (the server binary, default target/debug/kafko),
KAFKO_UI_ARTIFACTS (screenshots and measurements, default a temp dir), CHROMIUM
(default /usr/bin/chromium).
"""

import json
import os
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import expect, sync_playwright

ROOT = Path(__file__).resolve().parents[3]
BIN = os.environ.get("KAFKO_BIN", str(ROOT / "target/debug/kafko"))
ARTIFACTS = Path(os.environ.get("KAFKO_UI_ARTIFACTS") or tempfile.mkdtemp(prefix="kafko-ui-"))
ARTIFACTS.mkdir(parents=True, exist_ok=True)
# The console polls every 2 s; on a busy 2-core runner give its updates some room.
expect.set_options(timeout=10_000)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One kafko process; `restart()` brings it back on the same port and data."""

    def __init__(self, data_dir, extra=(), token=None):
        self.data_dir = data_dir
        self.extra = list(extra)
        self.token = token
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc = None
        self.start()

    def start(self):
        args = [BIN, "--bind", f"127.0.0.1:{self.port}", "--kafka-bind", "off", "--schema-registry-bind", "off", "--data-dir", str(self.data_dir), *self.extra]
        if self.token:
            args += ["--auth-token", self.token]
        env = {k: v for k, v in os.environ.items() if k != "KAFKO_AUTH_TOKEN"}
        log = open(Path(str(self.data_dir) + ".log"), "ab")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, env=env, text=True)
        deadline = time.time() + 30
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            if line.startswith("listening on"):
                return
            if not line and self.proc.poll() is not None:
                break
        raise RuntimeError(f"kafko did not start; see {self.data_dir}.log")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)

    def restart(self):
        self.stop()
        self.start()

    def request(self, method, path, body=None, headers=None):
        """(status, parsed JSON or text) of one request; never raises on HTTP errors."""
        data = None
        h = dict(headers or {})
        if body is not None:
            raw = isinstance(body, bytes)
            data = body if raw else json.dumps(body).encode()
            h.setdefault("content-type", "application/octet-stream" if raw else "application/json")
        if self.token:
            h.setdefault("authorization", f"Bearer {self.token}")
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=h)
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                status, raw = resp.status, resp.read()
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read()
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, raw.decode(errors="replace")


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("kafko") / "data")
    yield s
    s.stop()


@pytest.fixture(scope="session")
def browser():
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=os.environ.get("CHROMIUM", "/usr/bin/chromium"),
                              args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


@pytest.fixture
def page(browser):
    """A fresh tab in UTC (so datetime inputs are predictable) that fails the test on a
    script error."""
    context = browser.new_context(viewport={"width": 1280, "height": 860}, timezone_id="UTC")
    pg = context.new_page()
    errors = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    yield pg
    context.close()
    assert not errors, f"script errors in the console: {errors}"


def shot(page, name):
    """Saves a screenshot of the page under the artifacts directory."""
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
