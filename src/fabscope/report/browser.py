"""Open a report in headless Chromium and watch it: errors, requests, render time, screenshots.

The browser is Debian's ``chromium`` (or ``BROWSER_PATH``), driven through
the DevTools protocol over a websocket (``websocket-client``).  It runs with
every network path closed (a proxy on a closed local port, every host name
resolving to nothing), and every request the page makes is counted: a
self-contained report makes none but its own ``file://`` load.

Used by the tests, ``bench/bench_report.py`` (render time) and
``docs/make_images.py`` (screenshots of each picture as the browser shows it).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Iterator

from fabscope.errors import FabscopeError
from fabscope.report.export import find_browser

LOCAL = ("file:", "data:", "blob:", "about:")

#: every picture drawn: Plotly has laid it out and drawn its SVG layer
JS_DRAWN = """(() => { const d = Array.from(document.querySelectorAll('.js-plotly-plot'));
  return {total: document.querySelectorAll('figure.picture').length,
          drawn: d.filter(x => x._fullLayout && x.querySelector('.main-svg')).length}; })()"""
JS_BOXES = """JSON.stringify(Array.from(document.querySelectorAll('figure.picture')).map(f => {
  const p = f.querySelector('.js-plotly-plot'); const r = (p || f).getBoundingClientRect();
  return {name: f.dataset.name, x: r.left + window.scrollX, y: r.top + window.scrollY, width: r.width,
          height: r.height, traces: p && p.data ? p.data.length : 0}; }))"""


@dataclass
class PageReport:
    url: str
    errors: list[str] = field(default_factory=list)        # exceptions, console errors, error log entries
    requests: list[str] = field(default_factory=list)      # every URL the page asked for beyond file://
    failed: list[str] = field(default_factory=list)        # loads that failed
    render_seconds: float = float("nan")                  # navigation start to every picture drawn
    pictures: int = 0
    drawn: int = 0
    boxes: list[dict[str, Any]] = field(default_factory=list)
    screenshot: bytes = b""                                 # PNG of the whole page


class DevTools:
    """A minimal DevTools-protocol session on one page target."""

    def __init__(self, ws_url: str) -> None:
        import websocket

        self.ws = websocket.create_connection(ws_url, timeout=120, suppress_origin=True)
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        mid = self.next_id
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == mid:
                if "error" in msg:
                    raise FabscopeError(f"browser: {method}: {msg['error'].get('message')}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def wait_event(self, method: str, timeout: float) -> bool:
        end = time.monotonic() + timeout
        if any(e["method"] == method for e in self.events):
            return True
        while time.monotonic() < end:
            self.ws.settimeout(max(0.05, end - time.monotonic()))
            try:
                msg = json.loads(self.ws.recv())
            except Exception:
                self.ws.settimeout(120)
                return False
            if "method" in msg:
                self.events.append(msg)
                if msg["method"] == method:
                    self.ws.settimeout(120)
                    return True
        self.ws.settimeout(120)
        return False

    def evaluate(self, expr: str) -> Any:
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True)
        return r.get("result", {}).get("value")

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.ws.close()


@contextlib.contextmanager
def chromium(width: int = 1600, height: int = 1000) -> Iterator[DevTools]:
    """A headless Chromium with no way out to any network, and a DevTools session on its page."""
    exe = find_browser()
    if exe is None:
        raise FabscopeError("no Chromium found (Debian: apt-get install chromium; or set BROWSER_PATH)")
    profile = tempfile.mkdtemp(prefix="fabscope-chromium-")
    args = [exe, "--headless=new", "--remote-debugging-port=0", f"--user-data-dir={profile}",
            "--no-first-run", "--no-default-browser-check", "--disable-gpu", "--disable-extensions",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-default-apps", "--metrics-recording-only", "--mute-audio",
            "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
            "--host-resolver-rules=MAP * ~NOTFOUND", "--allow-file-access-from-files",
            f"--window-size={width},{height}", "about:blank"]
    if os.geteuid() == 0:
        args.insert(1, "--no-sandbox")
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    tools = None
    try:
        port_file = os.path.join(profile, "DevToolsActivePort")
        end = time.monotonic() + 120                     # a busy machine's Chromium can take long to start
        while not (os.path.exists(port_file) and open(port_file).read().count("\n") >= 1):
            if proc.poll() is not None or time.monotonic() > end:
                raise FabscopeError(f"chromium did not start (exit {proc.poll()})")
            time.sleep(0.05)
        port = int(open(port_file).read().split()[0])
        # Python (not the browser) asks the DevTools endpoint for the page; the browser's own
        # requests, loopback included ("<-loopback>"), all go to the dead proxy
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        targets = json.loads(opener.open(f"http://127.0.0.1:{port}/json/list", timeout=10).read())
        page = next(t for t in targets if t.get("type") == "page")
        tools = DevTools(page["webSocketDebuggerUrl"])
        yield tools
    finally:
        if tools is not None:
            tools.close()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        shutil.rmtree(profile, ignore_errors=True)


def open_report(path: str | os.PathLike[str], width: int = 1600, screenshot: bool = True,
                timeout: float = 300.0) -> PageReport:
    """Load a report, wait until every picture is drawn (up to ``timeout`` seconds: on 2 cores beside a test
    suite's other lane and a busy loop, Chromium had drawn none of a test report's pictures after 60 s), and
    say what happened."""
    url = "file://" + os.path.abspath(os.fspath(path))
    rep = PageReport(url)
    with chromium(width) as dt:
        for dom in ("Runtime", "Log", "Network", "Page"):
            dt.call(f"{dom}.enable")
        t0 = time.monotonic()
        dt.call("Page.navigate", url=url)
        dt.wait_event("Page.loadEventFired", timeout)
        while time.monotonic() - t0 < timeout:
            st = dt.evaluate(JS_DRAWN) or {}
            rep.pictures, rep.drawn = int(st.get("total", 0)), int(st.get("drawn", 0))
            if rep.pictures and rep.drawn >= rep.pictures:
                rep.render_seconds = time.monotonic() - t0
                break
            time.sleep(0.02)
        time.sleep(0.3)             # let late errors and requests arrive
        dt.evaluate("1")
        rep.boxes = json.loads(dt.evaluate(JS_BOXES) or "[]")
        if screenshot:
            m = dt.call("Page.getLayoutMetrics")
            size = m.get("cssContentSize") or m.get("contentSize")
            w, h = int(size["width"]), int(min(size["height"], 30000))
            dt.call("Emulation.setDeviceMetricsOverride", width=w, height=h, deviceScaleFactor=1, mobile=False)
            time.sleep(0.3)
            shot = dt.call("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                           clip={"x": 0, "y": 0, "width": w, "height": h, "scale": 1})
            rep.screenshot = base64.b64decode(shot["data"])
        dt.evaluate("1")
        for e in dt.events:
            m, p = e["method"], e.get("params", {})
            if m == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                rep.errors.append(d.get("exception", {}).get("description") or d.get("text", "exception"))
            elif m == "Runtime.consoleAPICalled" and p.get("type") == "error":
                rep.errors.append(" ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                rep.errors.append(p["entry"].get("text", ""))
            elif m == "Network.requestWillBeSent":
                u = p.get("request", {}).get("url", "")
                if not u.startswith(LOCAL):
                    rep.requests.append(u)
            elif m == "Network.loadingFailed":
                rep.failed.append(p.get("errorText", "") + " " + p.get("requestId", ""))
    return rep


def picture_shots(path: str | os.PathLike[str], width: int = 1400, timeout: float = 300.0) -> dict[str, bytes]:
    """PNG of each picture as the browser draws it, by picture name (the first of each name)."""
    url = "file://" + os.path.abspath(os.fspath(path))
    out: dict[str, bytes] = {}
    with chromium(width) as dt:
        dt.call("Page.enable")
        dt.call("Page.navigate", url=url)
        t0 = time.monotonic()
        dt.wait_event("Page.loadEventFired", timeout)
        while time.monotonic() - t0 < timeout:
            st = dt.evaluate(JS_DRAWN) or {}
            if st.get("total") and st.get("drawn", 0) >= st["total"]:
                break
            time.sleep(0.05)
        time.sleep(0.5)
        for b in json.loads(dt.evaluate(JS_BOXES) or "[]"):
            if b["name"] in out or b["width"] < 10:
                continue
            shot = dt.call("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                           clip={"x": b["x"], "y": b["y"], "width": b["width"], "height": b["height"], "scale": 1})
            out[b["name"]] = base64.b64decode(shot["data"])
    return out
