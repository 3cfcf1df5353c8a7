"""A page as headless Chromium renders it: element boxes from the DOM and a screenshot, read in one load.

Chromium is driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`: commands on fd 3,
replies on fd 4, each a JSON text ended by NUL), so no port, no websocket client and no driver package
are needed. The flags keep it off the network: without them it waits on background fetches that a
closed network never answers.
"""

from __future__ import annotations

import io
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from typing import Any, Optional

INSTALL = "apt-get update && apt-get install -y chromium"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--force-device-scale-factor=1",
    "--remote-debugging-pipe",
)


def chromium() -> Optional[str]:
    """The browser's path, or None where it is not installed."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Page:
    """One page loaded from `url` in a fresh headless Chromium, laid out `width` CSS pixels wide."""

    def __init__(self, url: str, width: int = 1300, timeout_s: float = 60.0) -> None:
        exe = chromium()
        if exe is None:
            raise FileNotFoundError(f"no chromium on PATH: {INSTALL}")
        self._deadline = time.monotonic() + timeout_s
        self._profile = tempfile.TemporaryDirectory(prefix="attncheck-chromium-", ignore_cleanup_errors=True)
        cmd_r, self._cmd_w = os.pipe()
        self._out_r, out_w = os.pipe()

        def fds() -> None:  # in the child: the pipe's ends at the descriptors Chromium reads and writes
            os.dup2(cmd_r, 3)
            os.dup2(out_w, 4)

        self._log = open(os.path.join(self._profile.name, "chromium.log"), "w+b")
        self._proc = subprocess.Popen(
            [exe, *FLAGS, f"--user-data-dir={self._profile.name}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=self._log,
            preexec_fn=fds,
            pass_fds=(3, 4),
            start_new_session=True,  # its own process group: closing ends its renderer and helpers too
        )
        os.close(cmd_r)
        os.close(out_w)
        self._buf = b""
        self._next = 0
        try:
            pages: list[dict[str, Any]] = []
            while not pages:  # the first tab may come a moment after the browser answers
                pages = [t for t in self._send("Target.getTargets")["targetInfos"] if t["type"] == "page"]
                self._check_time()
            page = pages[0]
            self._session = self._send("Target.attachToTarget", targetId=page["targetId"], flatten=True)["sessionId"]
            self.call("Emulation.setDeviceMetricsOverride", width=width, height=800, deviceScaleFactor=1, mobile=False)
            self.call("Page.navigate", url=url)
            while self.evaluate("document.readyState") != "complete":
                time.sleep(0.05)
                self._check_time()
            height = int(self.evaluate("Math.ceil(document.documentElement.scrollHeight)"))
            # The whole page in one viewport: DOM boxes and screenshot pixels share one frame.
            self.call(
                "Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False
            )
            self.width, self.height = width, height
        except BaseException:
            self.close()
            raise

    def _check_time(self) -> None:
        if time.monotonic() > self._deadline:
            raise TimeoutError("headless chromium did not answer in time")

    def _send(self, method: str, session: Optional[str] = None, **params: Any) -> Any:
        self._next += 1
        msg: dict[str, Any] = {"id": self._next, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        while True:
            while b"\0" not in self._buf:
                self._check_time()
                ready, _, _ = select.select([self._out_r], [], [], 0.5)
                if ready:
                    chunk = os.read(self._out_r, 1 << 20)
                    if not chunk:
                        self._log.seek(0)
                        raise RuntimeError(
                            f"chromium closed its pipe: {self._log.read()[-2000:].decode(errors='replace')}"
                        )
                    self._buf += chunk
            raw, self._buf = self._buf.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def call(self, method: str, **params: Any) -> Any:
        """A DevTools command in the page's session."""
        return self._send(method, self._session, **params)

    def evaluate(self, expression: str) -> Any:
        """A JavaScript expression's value (JSON-able) in the page."""
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression[:80]}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def screenshot(self) -> Any:
        """The rendered page as an RGB array (rows, columns, 3), one pixel per CSS pixel."""
        import base64

        import numpy as np
        from PIL import Image

        png = base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"])
        return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))

    def close(self) -> None:
        """Ask the browser to quit; past a few seconds, end its process group."""
        try:
            if self._proc.poll() is None:
                self._deadline = time.monotonic() + 5
                self._send("Browser.close")
        except (OSError, RuntimeError, TimeoutError):
            pass
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(self._proc.pid, signal.SIGKILL)  # helpers left in the group this browser leads
        except ProcessLookupError:
            pass
        self._proc.wait()
        for fd in (self._cmd_w, self._out_r):
            try:
                os.close(fd)
            except OSError:
                pass
        self._log.close()
        self._profile.cleanup()

    def __enter__(self) -> "Page":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
