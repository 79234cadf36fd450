"""What a real browser contacts and links on each corpus page: bench/corpus/browser-truth.json.

The yardstick of bench/yield.py that shares nothing with the crawler (no import from
crawler/, none of its tables). Needs Chromium (/usr/bin/chromium) and Playwright's
Python package; downloads nothing. Regenerate with

    .venv/bin/python bench/_record_browser_truth.py        # --pages N: only the first N pages

Each page is loaded twice, each time in a new browser context (no cache, cookies or
storage from before) of one Chromium with a new empty --user-data-dir, JavaScript off,
then on. Chromium believes it is at the page's original URL: every request of the
context is routed (Playwright's `context.route`, Chromium's Fetch domain); the page's
own URL is fulfilled with the corpus body, every other request is recorded and
aborted, so no request leaves the browser. WebSockets are routed too (recorded, never
connected) and service workers blocked. What bypasses routing (preconnect, DNS
prefetch) resolves, by `--host-resolver-rules=MAP * 127.0.0.1:P`, to a loopback sink
(bench/_loopback_sink.py) that logs the name it was asked for (TLS SNI, CONNECT or
Host:) and closes; the names Chromium asks for on its own (seen on blank pages first,
and its autofill server) are left out. The whole run happens in a new network
namespace holding only loopback (`unshare -n`, re-executed on start), so even a
mistake here cannot reach another address.

A load waits for the `load` event (at most LOAD_SECONDS), then SETTLE_SECONDS for the
page's timers. Groups, per page, of host names other than the page's own:

- links: the http(s) `href` of every `a[href]` and `area[href]` in the DOM after the
  scripts ran (JavaScript on), as the browser resolved them (`el.href`), every frame;
- resources: hosts the browser tried to fetch from or connect to with JavaScript off
  and again with it on: named by the markup itself;
- scripts: hosts it tried only with JavaScript on: requests made by scripts, or by
  elements and URLs that scripts made;
- noscript: hosts it tried only with JavaScript off (`<noscript>` content); recorded,
  not scored.

What it cannot see: no script from another URL runs (every request but the page's own
is aborted, first-party scripts included), so nothing those scripts would request or
write is here; nor anything that needs a response (a redirect, a CSS file's url(), an
iframe's content); nor lazy images below the fold, nor anything after SETTLE_SECONDS
or a user's action.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import shutil
import sys
from pathlib import Path
from urllib.parse import urlsplit

from _loopback_sink import Sink

CORPUS = Path(__file__).parent / "corpus"
OUT = CORPUS / "browser-truth.json"
CHROMIUM = "/usr/bin/chromium"
LOAD_SECONDS, SETTLE_SECONDS = 5.0, 2.0
IN_NAMESPACE = "HOSTCRAWL_TRUTH_NETNS"
BLANK, BLANK_LOADS = "about:blank", 3
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-domain-reliability",
]
# Chromium's own services, seen at the sink after a page with a form: not the page's.
# (A --disable-features here would replace Playwright's, which routing needs.)
BROWSER_SERVICES = frozenset({"content-autofill.googleapis.com"})
LINKS_JS = """() => Array.from(document.querySelectorAll('a[href], area[href]'), e => e.href)"""


def load_pages(limit: int | None) -> list[tuple[str, bytes]]:
    pages = []
    for line in (CORPUS / "pages.tsv").read_text().splitlines()[:limit]:
        name, url = line.split("\t")
        pages.append((url, gzip.decompress((CORPUS / name).read_bytes())))
    return pages


def host_of(url: str) -> str | None:
    try:
        parts = urlsplit(url)
        host = parts.hostname if parts.scheme in ("http", "https", "ws", "wss") else None
    except ValueError:
        return None
    return host.rstrip(".") or None if host else None


class Load:
    """One page in a new browser context: the hosts it asked for, the links its DOM holds."""

    def __init__(self, url: str, body: bytes, javascript: bool) -> None:
        self.url, self.body, self.javascript = url, body, javascript
        self.asked: set[str] = set()
        self.links: set[str] = set()
        self.served = False

    async def route(self, route) -> None:
        request = route.request
        if request.url == self.url and not self.served and request.resource_type == "document":
            self.served = True
            await route.fulfill(status=200, body=self.body, headers={"content-type": "text/html"})
            return
        host = host_of(request.url)
        if host:
            self.asked.add(host)
        await route.abort()

    def websocket(self, ws) -> None:  # never connected to a server: recorded and left open
        host = host_of(ws.url)
        if host:
            self.asked.add(host)

    async def run(self, browser) -> None:
        context = await browser.new_context(
            java_script_enabled=self.javascript, service_workers="block"
        )
        try:
            await self._visit(context)
        finally:
            await context.close()

    async def _visit(self, context) -> None:
        await context.route("**/*", self.route)
        await context.route_web_socket("**", self.websocket)
        page = await context.new_page()
        try:
            await page.goto(self.url, wait_until="load", timeout=LOAD_SECONDS * 1000)
        except Exception as exc:  # noqa: BLE001 - a page that never fires load still counts
            print(f"  {self.url}: {type(exc).__name__}: {str(exc).splitlines()[0]}")
        await page.wait_for_timeout(SETTLE_SECONDS * 1000 if self.javascript else 500)
        if self.javascript:
            for frame in page.frames:
                try:
                    hrefs = await frame.evaluate(LINKS_JS)
                except Exception:  # noqa: BLE001 - a frame gone or navigated away
                    continue
                self.links.update(h for h in map(host_of, hrefs) if h)


async def truth_of(
    browser, sink: Sink, browser_own: set[str], url: str, body: bytes
) -> dict[str, list[str]]:
    own = host_of(url)
    asked: dict[bool, set[str]] = {}
    links: set[str] = set()
    for javascript in (False, True):
        load = Load(url, body, javascript)
        sink.take()
        await load.run(browser)
        await asyncio.sleep(0.2)  # let the sink finish reading the last connections
        names, unnamed = sink.take()
        names -= browser_own
        if names:
            print(f"  sink, javascript {'on' if javascript else 'off'}: {', '.join(sorted(names))}")
        asked[javascript] = {n.lower() for n in load.asked | names} - {own}
        links |= {n.lower() for n in load.links} - {own}
    groups = {
        "links": links,
        "resources": asked[True] & asked[False],
        "scripts": asked[True] - asked[False],
        "noscript": asked[False] - asked[True],
    }
    return {group: sorted(hosts) for group, hosts in groups.items()}


async def generate(limit: int | None) -> dict:
    from playwright.async_api import async_playwright

    sink = Sink()
    await sink.start()
    pages = load_pages(limit)
    result: dict[str, dict[str, list[str]]] = {}
    async with async_playwright() as playwright:
        # Playwright gives the browser a new empty --user-data-dir; each load a new context.
        browser = await playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=[*FLAGS, f"--host-resolver-rules=MAP * 127.0.0.1:{sink.port}"],
        )
        version = browser.version
        browser_own = set(BROWSER_SERVICES)
        for _ in range(BLANK_LOADS):
            await Load(BLANK, b"", True).run(browser)
            await asyncio.sleep(0.2)
            browser_own |= sink.take()[0]
        print(f"the browser's own names (blank pages; ignored at the sink): {sorted(browser_own)}")
        for number, (url, body) in enumerate(pages, 1):
            result[url] = await truth_of(browser, sink, browser_own, url, body)
            counts = " ".join(f"{g} {len(h)}" for g, h in result[url].items())
            print(f"{number}/{len(pages)} {urlsplit(url).hostname}: {counts}", flush=True)
        await browser.close()
    await sink.stop()
    return {
        "about": "bench/_record_browser_truth.py: hosts Chromium contacted or linked per page",
        "chromium": version,
        "load_seconds": LOAD_SECONDS,
        "settle_seconds": SETTLE_SECONDS,
        "browser_own": sorted(browser_own),
        "pages": result,
    }


def into_namespace(argv: list[str]) -> None:
    """Re-run this script in a new network namespace with only loopback up."""
    if os.environ.get(IN_NAMESPACE):
        return
    if not shutil.which("unshare"):
        sys.exit("browser_truth: needs unshare(1) for a loopback-only network namespace")
    os.environ[IN_NAMESPACE] = "1"
    script = 'ip link set lo up && exec "$@"'
    os.execvp("unshare", ["unshare", "-n", "sh", "-c", script, "sh", sys.executable, *argv])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=None, help="only the first N pages")
    parser.add_argument("--out", type=Path, default=OUT, help=f"default {OUT}")
    args = parser.parse_args()
    into_namespace([str(Path(__file__).resolve()), *sys.argv[1:]])
    truth = asyncio.run(generate(args.pages))
    args.out.write_text(json.dumps(truth, indent=1, sort_keys=True, ensure_ascii=True) + "\n")
    print(f"wrote {args.out} ({len(truth['pages'])} pages)")


if __name__ == "__main__":
    main()
