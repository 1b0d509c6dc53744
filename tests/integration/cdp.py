#!/usr/bin/env python3
# cdp.py: lets the integration tests drive the library's web pages (the flame
# graph on <canvas>) in a real browser: headless Chromium over the DevTools
# protocol. Standard library plus python3-websocket only. Run with --help.
# Exit 0 when every step succeeded, else 1 with a one-line reason on stderr
# (failed step, JS exception, uncaught page exception, HTTP error, timeout).
# CDP_CHROMIUM overrides the browser command (default: chromium).
import argparse, base64, collections, contextlib, ctypes, json, os, queue, re
import shutil, signal, subprocess, sys, tempfile, threading, time, urllib.request
try:
    import websocket  # python3-websocket (websocket-client)
except ImportError:  # e.g. a pyenv python3 first in PATH: use Debian's
    if os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    raise

state = {"step": "starting chromium", "last": None}  # for the timeout message
page_errors = []

CLICK_JS = """(() => { const e = document.querySelector(%s); if (!e) return null;
  e.scrollIntoView({block: 'center', inline: 'center'});
  const r = e.getBoundingClientRect();
  return {x: r.left + r.width / 2, y: r.top + r.height / 2}; })()"""
TYPE_JS = """(() => { const e = document.querySelector(%s); if (!e) return false;
  e.focus(); e.value = %s;
  e.dispatchEvent(new Event('input', {bubbles: true}));
  e.dispatchEvent(new Event('change', {bubbles: true})); return true; })()"""


class Fail(Exception):
    pass


class CDP:
    """A websocket to the page target. Command replies are matched by id;
    every other message is an event, handled while waiting."""

    def __init__(self, url):
        self.ws = websocket.create_connection(url, suppress_origin=True)
        self.next_id, self.loaded = 0, set()  # loaderIds whose load event fired

    def call(self, method, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = self.pump()
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise Fail(f"{method}: {msg['error'].get('message')}")
                return msg.get("result", {})

    def pump(self):
        msg = json.loads(self.ws.recv())
        method, p = msg.get("method"), msg.get("params", {})
        if method == "Page.lifecycleEvent" and p.get("name") == "load":
            self.loaded.add(p.get("loaderId"))
        elif method == "Runtime.exceptionThrown":
            page_errors.append(describe(p["exceptionDetails"]))
            print(f"cdp: page exception: {page_errors[-1]}", file=sys.stderr, flush=True)
        elif method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
            print(f"cdp: console.{p['type']}: {text}", file=sys.stderr, flush=True)
        elif method in ("Inspector.targetCrashed", "Inspector.detached"):
            raise Fail(f"page target went away ({method})")
        return msg

    def evaluate(self, js, by_value=True):
        r = self.call("Runtime.evaluate", expression=js, awaitPromise=True,
                      returnByValue=by_value, userGesture=True)
        if "exceptionDetails" in r:
            raise Fail(f"JS exception in {js!r}: {describe(r['exceptionDetails'])}")
        return r["result"]


def describe(d):
    """One line for a Runtime.ExceptionDetails."""
    exc = d.get("exception", {})
    desc = exc.get("description") or json.dumps(exc.get("value", ""))
    text, first = d.get("text", "Uncaught"), (desc.splitlines() or [""])[0]
    line = text if first in text else f"{text} {first}"
    return line + (f" at {d['url']}:{d.get('lineNumber', 0) + 1}" if d.get("url") else "")


def truthy(r):
    """JS truthiness of a Runtime.RemoteObject."""
    if "unserializableValue" in r:  # NaN, -0, Infinity, 12n ...
        return r["unserializableValue"] not in ("NaN", "-0", "0n")
    if r["type"] in ("object", "function", "symbol"):
        return r.get("subtype") != "null"
    return bool(r.get("value"))


def start_chromium(args, tmp, procs):
    """Starts chromium in its own process group; returns its DevTools port."""
    cmd = [os.environ.get("CDP_CHROMIUM", "chromium"), "--headless=new", "--no-sandbox",
           "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
           "--no-default-browser-check", f"--user-data-dir={tmp}",
           "--remote-debugging-port=0", f"--window-size={args.width},{args.height}",
           "about:blank"]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True,
                            # PR_SET_PDEATHSIG: chromium dies with us even on SIGKILL
                            preexec_fn=lambda: ctypes.CDLL(None).prctl(1, signal.SIGKILL))
    procs.append(proc)
    ports, tail = queue.Queue(), collections.deque(maxlen=10)

    def drain():  # reads stderr for the whole run so that the pipe never fills
        for raw in proc.stderr:
            line = raw.decode(errors="replace").rstrip()
            if "dbus" not in line:  # dbus complaints are noise in containers
                tail.append(line)
            m = re.search(r"DevTools listening on ws://[^:/]+:(\d+)/", line)
            if m:
                ports.put(int(m.group(1)))
    threading.Thread(target=drain, daemon=True).start()
    active = os.path.join(tmp, "DevToolsActivePort")  # the fallback
    while True:
        with contextlib.suppress(queue.Empty):
            return ports.get(timeout=0.1)
        if os.path.exists(active):
            with open(active) as f:
                first = f.readline().strip()
            if first.isdigit():
                return int(first)
        if proc.poll() is not None:
            raise Fail(f"chromium exited with status {proc.returncode}: " + " | ".join(tail))


def open_page(args, tmp, procs):
    port = start_chromium(args, tmp, procs)
    state["step"] = f"attaching to chromium on port {port}"
    while True:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5) as r:
            pages = [t for t in json.load(r) if t.get("type") == "page"]
        if pages:
            break
        time.sleep(0.1)
    cdp = CDP(pages[0]["webSocketDebuggerUrl"])
    cdp.call("Page.enable")
    cdp.call("Page.setLifecycleEventsEnabled", enabled=True)
    cdp.call("Runtime.enable")
    cdp.call("Emulation.setDeviceMetricsOverride", width=args.width,
             height=args.height, deviceScaleFactor=1, mobile=False)
    state["step"] = f"loading {args.url}"
    nav = cdp.call("Page.navigate", url=args.url)
    if nav.get("errorText"):
        raise Fail(f"cannot load {args.url}: {nav['errorText']}")
    while nav.get("loaderId") not in cdp.loaded:  # the load event of this navigation,
        cdp.pump()                                  # not a late one of about:blank
    status = cdp.evaluate("performance.getEntriesByType('navigation')[0]?.responseStatus")
    if status.get("value", 0) >= 400:
        raise Fail(f"{args.url} answered HTTP {status['value']}")
    return cdp


def run_step(cdp, kind, arg):
    if kind == "wait":
        while True:
            r = cdp.evaluate(arg, by_value=False)
            state["last"] = (json.dumps(r["value"]) if "value" in r else
                             r.get("unserializableValue", r.get("description", r["type"])))
            if truthy(r):
                return
            time.sleep(0.1)
    elif kind == "eval":
        r = cdp.evaluate(arg)
        print(json.dumps(r.get("value", r.get("unserializableValue"))), flush=True)
    elif kind == "screenshot":
        with open(arg, "wb") as f:
            f.write(base64.b64decode(cdp.call("Page.captureScreenshot", format="png")["data"]))
    elif kind == "click":
        box = cdp.evaluate(CLICK_JS % json.dumps(arg)).get("value")
        if not box:
            raise Fail(f"--click: no element matches {arg!r}")
        for t, button, buttons, count in (("mouseMoved", "none", 0, 0),
                                          ("mousePressed", "left", 1, 1),
                                          ("mouseReleased", "left", 0, 1)):
            cdp.call("Input.dispatchMouseEvent", type=t, x=box["x"], y=box["y"],
                     button=button, buttons=buttons, clickCount=count)
    elif kind == "type":
        m = re.match(r"((?:\[[^\]]*\]|[^=\[])+)=(.*)", arg, re.S)  # first '=' outside [..]
        if not m:
            raise Fail(f"--type wants SELECTOR=TEXT, got {arg!r}")
        if not cdp.evaluate(TYPE_JS % (json.dumps(m[1]), json.dumps(m[2]))).get("value"):
            raise Fail(f"--type: no element matches {m[1]!r}")


class Step(argparse.Action):
    def __call__(self, parser, ns, value, option):
        ns.steps.append((option.lstrip("-"), value))


def main():
    ap = argparse.ArgumentParser(description="Drive a page in headless Chromium; "
                                 "the steps run in the order given.")
    ap.add_argument("--url", required=True)
    ap.add_argument("--timeout", type=float, default=60, help="wall clock, seconds (60)")
    ap.add_argument("--width", type=int, default=1200)
    ap.add_argument("--height", type=int, default=900)
    for name, meta, what in (
            ("wait", "JS", "poll every 100 ms until JS is truthy"),
            ("eval", "JS", "print the value of JS (promises awaited) as a JSON line"),
            ("screenshot", "FILE", "write a PNG of the page to FILE"),
            ("click", "SELECTOR", "click the centre of the first matching element"),
            ("type", "SELECTOR=TEXT", "focus it, set its value, fire input and change")):
        ap.add_argument("--" + name, action=Step, metavar=meta, dest="steps", help=what)
    ap.set_defaults(steps=[])
    args = ap.parse_args()

    def stop(sig, _):
        why = f"timed out after {args.timeout:g}s" if sig == signal.SIGALRM else "SIGTERM"
        last = "" if state["last"] is None else f"; last value: {state['last']}"
        raise Fail(f"{why} in {state['step']}{last}")
    signal.signal(signal.SIGALRM, stop)
    signal.signal(signal.SIGTERM, stop)
    signal.setitimer(signal.ITIMER_REAL, args.timeout)
    tmp, procs, status = tempfile.mkdtemp(prefix="cdp-"), [], 1
    try:
        cdp = open_page(args, tmp, procs)
        for kind, arg in args.steps:
            state["step"], state["last"] = f"--{kind} {arg!r}", None
            run_step(cdp, kind, arg)
        state["step"] = "finishing"
        cdp.evaluate("0")  # a round trip: the events sent before it are seen
        if page_errors:
            raise Fail(f"{len(page_errors)} uncaught page exception(s), first: {page_errors[0]}")
        status = 0
    except Fail as e:
        print(f"cdp: {e}", file=sys.stderr)
    except (OSError, ValueError, websocket.WebSocketException, KeyboardInterrupt) as e:
        print(f"cdp: {state['step']}: {type(e).__name__}: {e}", file=sys.stderr)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        for p in procs:  # chromium, if it was started
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)  # chromium and its children
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(status)


if __name__ == "__main__":
    main()
