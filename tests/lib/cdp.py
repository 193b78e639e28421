#!/usr/bin/python3
"""A small Chrome DevTools Protocol driver for the browser tests.

Starts Debian's chromium headless (--no-sandbox: the tests run as root) on a
throwaway profile, reads the DevTools port from its DevToolsActivePort file,
opens one page and runs the steps of its command line in order:

  --goto URL        navigate (a full load, even when only the hash differs)
  --wait SELECTOR   wait until document.querySelector(SELECTOR) exists
  --wait-js EXPR    wait until EXPR (JavaScript) is truthy
  --click SELECTOR  click the element (fails when it is missing)
  --fill SELECTOR=VALUE  set an input's value (the first '=' splits)
  --eval EXPR       print EXPR's value as one line of JSON
  --text SELECTOR   print the element's textContent as one line of JSON
  --shot FILE       a PNG screenshot of the page into FILE
  --sh COMMAND      run a shell command (bash -c) while the page stays open;
                    it failing fails the step

--browser-arg ARG (repeatable) adds ARG to chromium's command line (e.g.
--proxy-server=http://127.0.0.1:PORT). Waits are bounded (--timeout, seconds, default 15). Exits 1 on the first
failed step, 2 when chromium cannot start, and 3 when the page threw a
JavaScript exception or logged an error (a CSP violation, say) unless
--allow-errors. CDP_CHROMIUM names another browser binary. Needs python3-websockets (Debian's, /usr/bin/python3).
"""
import argparse
import asyncio
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

import websockets


class StepError(Exception):
    pass


class Page:
    def __init__(self, ws):
        self.ws = ws
        self.next_id = 0
        self.pending = {}
        self.errors = []
        self.reader = asyncio.ensure_future(self._read())

    async def _read(self):
        async for raw in self.ws:
            msg = json.loads(raw)
            if "id" in msg:
                fut = self.pending.pop(msg["id"], None)
                if fut and not fut.done():
                    fut.set_result(msg)
                continue
            method, params = msg.get("method"), msg.get("params", {})
            if method == "Runtime.exceptionThrown":
                d = params.get("exceptionDetails", {})
                text = d.get("exception", {}).get("description") or d.get("text", "")
                self.errors.append("exception: " + text)
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                e = params["entry"]
                # a failed fetch the page shows as text (the 403 of a refused
                # retry) is no page error
                if e.get("source") != "network":
                    self.errors.append("console: " + e.get("text", ""))
            elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
                args = [a.get("value", a.get("description", "")) for a in params.get("args", [])]
                self.errors.append("console.error: " + " ".join(map(str, args)))

    async def call(self, method, timeout=30, **params):
        self.next_id += 1
        fut = asyncio.get_running_loop().create_future()
        self.pending[self.next_id] = fut
        await self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        msg = await asyncio.wait_for(fut, timeout)
        if "error" in msg:
            raise StepError(f"{method}: {msg['error'].get('message')}")
        return msg.get("result", {})

    async def evaluate(self, expr):
        r = await self.call("Runtime.evaluate", expression=expr, returnByValue=True,
                            awaitPromise=True)
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            raise StepError("evaluate: " + (d.get("exception", {}).get("description")
                                            or d.get("text", "")))
        return r.get("result", {}).get("value")

    async def wait_js(self, expr, timeout):
        deadline = time.monotonic() + timeout
        while True:
            try:
                if await self.evaluate(f"!!({expr})"):
                    return
            except StepError:
                pass  # the page is loading: its context is gone for a moment
            if time.monotonic() > deadline:
                raise StepError(f"timed out after {timeout}s waiting for: {expr}")
            await asyncio.sleep(0.1)


def js_str(s):
    return json.dumps(s)


def start_chromium(profile, extra=()):
    exe = shutil.which(os.environ.get("CDP_CHROMIUM", "chromium"))
    if not exe:
        raise RuntimeError("chromium is not installed (scripts/deps.sh installs it)")
    args = [exe, "--headless=new", "--no-sandbox", "--remote-debugging-port=0",
            f"--user-data-dir={profile}", "--no-first-run", "--no-default-browser-check",
            "--disable-gpu", "--disable-dev-shm-usage", "--disable-extensions",
            "--disable-background-networking", "--window-size=1600,1000", *extra, "about:blank"]
    log = open(os.path.join(profile, "chromium.log"), "wb")
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
    port_file = os.path.join(profile, "DevToolsActivePort")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        try:
            with open(port_file) as f:
                lines = f.read().split("\n")
            if len(lines) >= 2 and lines[0].strip():
                return proc, int(lines[0])
        except FileNotFoundError:
            pass
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    with open(os.path.join(profile, "chromium.log"), errors="replace") as f:
        tail = f.read()[-2000:]
    raise RuntimeError("chromium did not start (no DevToolsActivePort); its output:\n" + tail)


def page_ws_url(port):
    deadline = time.monotonic() + 10
    while True:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5) as r:
            targets = json.load(r)
        pages = [t for t in targets if t.get("type") == "page"]
        if pages:
            return pages[0]["webSocketDebuggerUrl"]
        if time.monotonic() > deadline:
            raise RuntimeError("chromium has no page target")
        time.sleep(0.1)


async def run_steps(port, steps, timeout):
    async with websockets.connect(page_ws_url(port), max_size=None) as ws:
        page = Page(ws)
        for domain in ("Page", "Runtime", "Log"):
            await page.call(domain + ".enable")
        for kind, arg in steps:
            if kind == "goto":
                await page.call("Page.navigate", url="about:blank")
                await page.wait_js("location.href === 'about:blank'", timeout)
                r = await page.call("Page.navigate", url=arg)
                if r.get("errorText"):
                    raise StepError(f"goto {arg}: {r['errorText']}")
                await page.wait_js("document.readyState === 'complete'", timeout)
            elif kind == "wait":
                await page.wait_js(f"document.querySelector({js_str(arg)})", timeout)
            elif kind == "wait_js":
                await page.wait_js(arg, timeout)
            elif kind == "click":
                ok = await page.evaluate(
                    f"(() => {{ const e = document.querySelector({js_str(arg)});"
                    " if (!e) return false; e.click(); return true; })()")
                if not ok:
                    raise StepError(f"click: no element {arg}")
            elif kind == "fill":
                sel, _, value = arg.partition("=")
                ok = await page.evaluate(
                    f"(() => {{ const e = document.querySelector({js_str(sel)});"
                    f" if (!e) return false; e.value = {js_str(value)}; return true; }})()")
                if not ok:
                    raise StepError(f"fill: no element {sel}")
            elif kind == "eval":
                print(json.dumps(await page.evaluate(arg)), flush=True)
            elif kind == "text":
                v = await page.evaluate(
                    f"(() => {{ const e = document.querySelector({js_str(arg)});"
                    " return e ? e.textContent : null; })()")
                if v is None:
                    raise StepError(f"text: no element {arg}")
                print(json.dumps(v), flush=True)
            elif kind == "sh":
                p = await asyncio.create_subprocess_exec("bash", "-c", arg,
                                                         stdout=subprocess.DEVNULL)
                if await p.wait() != 0:
                    raise StepError(f"sh: exit {p.returncode}: {arg}")
            elif kind == "shot":
                r = await page.call("Page.captureScreenshot", format="png",
                                    captureBeyondViewport=True)
                with open(arg, "wb") as f:
                    f.write(base64.b64decode(r["data"]))
        await asyncio.sleep(0.1)  # late events (an exception after the last step)
        page.reader.cancel()
        return page.errors


class Step(argparse.Action):
    def __call__(self, parser, ns, value, option=None):
        ns.steps.append((self.dest, value))


def main():
    ap = argparse.ArgumentParser(description="drive headless chromium (tests)")
    ap.set_defaults(steps=[])
    for name in ("goto", "wait", "wait-js", "click", "fill", "eval", "text", "shot", "sh"):
        ap.add_argument("--" + name, dest=name.replace("-", "_"), action=Step, default=None)
    ap.add_argument("--timeout", type=float, default=15)
    ap.add_argument("--allow-errors", action="store_true")
    ap.add_argument("--browser-arg", action="append", default=[])
    a = ap.parse_args()

    profile = tempfile.mkdtemp(prefix="cdp-profile.")
    proc = None
    try:
        try:
            proc, port = start_chromium(profile, a.browser_arg)
        except Exception as e:  # noqa: BLE001 - any failure to start is one outcome
            print(f"cdp: {e}", file=sys.stderr)
            return 2
        try:
            errors = asyncio.run(asyncio.wait_for(run_steps(port, a.steps, a.timeout),
                                                  a.timeout * (len(a.steps) + 2)))
        except (StepError, asyncio.TimeoutError, OSError,
                websockets.exceptions.WebSocketException) as e:
            print(f"cdp: step failed: {e or type(e).__name__}", file=sys.stderr)
            return 1
        for e in errors:
            print(f"cdp: page error: {e}", file=sys.stderr)
        return 3 if errors and not a.allow_errors else 0
    finally:
        if proc:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        # chromium's helpers may still write into the profile for a moment
        for _ in range(20):
            shutil.rmtree(profile, ignore_errors=True)
            if not os.path.exists(profile):
                break
            time.sleep(0.1)


if __name__ == "__main__":
    sys.exit(main())
