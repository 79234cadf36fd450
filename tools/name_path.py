"""A found name's path through the crawler: from HostsSpider.parse to the database and back.

One real parse of a page (a real HtmlResponse to the spider's own request, the spider set
up as a crawl sets it up) whose item then goes through HostWritePipeline to a throwaway
embedded Postgres (or DATABASE_URL's), with a profiler on. The page names FOLLOWED once,
in a `<script src>`, among other names, denied ones and broken ones. A module is visited
when the name enters it (a call whose arguments hold it), comes out of it (a return that
holds it goes back to the caller's module) or when a function holding it resumes (a
coroutine after its await); a visit is a run of one module, so the figures are:

- visits: the modules in the order the name passes through them;
- returns: visits to a module the name had already left (visits - distinct modules);
- root and group: how many times FOLLOWED's root, and its place's source group, were
  asked for (`crawler.core.hostnames.root`, `crawler.core.sources.group_of`), by module.

    .venv/bin/python tools/name_path.py            # from the repo root
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import dis
import inspect
import os
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("LOCAL_SUFFIXES", "test")

FOLLOWED = "cdn.followed.test"
PLACE = "script src"
PAGE_HOST = "page.test"
PAGE = f"""<!doctype html><title>A page</title>
<a href="https://www.other.test/">other</a> <a href="//blog.other.test/x">blog</a>
<a href="https://social.test/share">denied</a> <a href="https://x.comundefined/">no TLD</a>
<a href="mailto:someone@page.test">no hostname</a> <a href="/here">own</a>
<script src="https://{FOLLOWED}/app.js"></script>
<img src="https://img.other.test/a.png"> <link rel="preconnect" href="https://fonts.test/">
<script>var api = "https://api.other.test/v1";</script>
"""
HEADERS = {"Link": "<https://hdr.test/style.css>; rel=preload"}
DENIED = "social.test"
RESUMABLE = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR
YIELD_VALUE = dis.opmap["YIELD_VALUE"]
# The deepest a name sits in what a function is given: item → names → tuple → name → str.
DEPTH = 6


def suspends(frame) -> bool:
    """A generator or coroutine that yields or awaits: no return to its caller."""
    return frame.f_code.co_code[frame.f_lasti] == YIELD_VALUE


def holds(value, depth: int = DEPTH) -> bool:
    """Whether FOLLOWED is in `value`: the string, or within a container or a dataclass."""
    if isinstance(value, str):
        return value == FOLLOWED
    if depth == 0:
        return False
    if isinstance(value, dict):
        return any(holds(k, depth - 1) or holds(v, depth - 1) for k, v in value.items())
    if isinstance(value, list | tuple | set | frozenset):
        return any(holds(v, depth - 1) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = dataclasses.fields(value)
        return any(holds(getattr(value, f.name, None), depth - 1) for f in fields)
    return False


class NamePath:
    """A profiler that records the modules FOLLOWED passes through, in order."""

    def __init__(self) -> None:
        self.visits: list[str] = []
        self.functions: list[dict[str, None]] = []  # per visit, the functions it ran
        self.asked: dict[str, Counter[str]] = {"root": Counter(), "group": Counter()}
        self.written_at: int | None = None
        self.done = False  # the pipeline is done with the item
        self._on_path: dict[int, object] = {}  # frames holding the name (kept alive)
        # Generators and coroutines met, kept alive: a resumption is no new call.
        self._resumable: dict[int, object] = {}
        self._lock = threading.Lock()
        self._wrappers: set[object] = set()

    def visit(self, module: str, function: str) -> None:
        if not module.startswith("crawler."):
            return
        if self.visits and self.visits[-1] == module:
            self.functions[-1].setdefault(function)
            return
        self.visits.append(module)
        self.functions.append({function: None})

    def enter(self, frame) -> None:
        """Before the name's first step: the calls from HostsSpider.parse that led to it."""
        if self.visits:
            return
        stack = []
        while frame is not None:
            stack.append(frame)
            frame = frame.f_back
        for outer in reversed(stack):
            module = outer.f_globals.get("__name__", "")
            if module.startswith("crawler.") and outer.f_code not in self._wrappers:
                self._on_path.setdefault(id(outer), outer)
                self.visit(module, outer.f_code.co_name)

    def caller(self, frame):
        """The first frame below `frame` that is not one of our counting wrappers."""
        frame = frame.f_back
        while frame is not None and frame.f_code in self._wrappers:
            frame = frame.f_back
        return frame

    def profile(self, frame, event: str, arg) -> None:
        if event not in ("call", "return"):
            return
        module = frame.f_globals.get("__name__", "")
        if not module.startswith("crawler.") or frame.f_code in self._wrappers:
            return
        with self._lock:
            if event == "call":
                self._called(frame, module)
            else:
                self._returned(frame, module, arg)

    def _called(self, frame, module: str) -> None:
        key = id(frame)
        if self.done or key in self._on_path or key in self._resumable:
            return  # a generator or coroutine resumes: what it is sent comes by a return
        if frame.f_code.co_flags & RESUMABLE:
            self._resumable[key] = frame
        if any(holds(v) for v in frame.f_locals.values()):
            self.enter(frame.f_back)
            self._on_path[key] = frame
            self.visit(module, frame.f_code.co_name)
            if frame.f_code.co_name == "insert_hosts" and self.written_at is None:
                self.written_at = len(self.visits)

    def _returned(self, frame, module: str, value) -> None:
        if self.done:
            return
        handed = holds(value)
        if not handed and (id(frame) not in self._on_path or suspends(frame)):
            return  # no name comes out: an await or a yield of something else
        self.enter(frame)
        self.visit(module, frame.f_code.co_name)
        caller = self.caller(frame)
        name = caller.f_globals.get("__name__", "") if caller is not None else ""
        if not name.startswith("crawler."):
            # Out of the crawler: the item leaves the spider, or the pipeline is done.
            self.done = frame.f_code.co_name == "process_item"
        elif id(caller) in self._on_path or handed:
            self._on_path.setdefault(id(caller), caller)
            self.visit(name, caller.f_code.co_name)

    def counting(self, kind: str, function, wanted: str):
        """`function`, counting the calls whose argument is `wanted` by calling module."""

        def counted(value, *args, **kwargs):
            if value != wanted:
                return function(value, *args, **kwargs)
            caller = sys._getframe(1)
            module = caller.f_globals.get("__name__", "")
            with self._lock:
                self.asked[kind][module] += 1
                self.enter(caller)
                self.visit(function.__module__, function.__name__)
            answer = function(value, *args, **kwargs)
            with self._lock:
                self.visit(module, caller.f_code.co_name)
            return answer

        self._wrappers.add(counted.__code__)
        return counted


@contextlib.contextmanager
def asks_counted(path: NamePath):
    """Within: every module's `root` and `group_of` (as imported) counted for FOLLOWED."""
    from crawler.core import hostnames, sources

    wrapped = {
        id(hostnames.root): path.counting("root", hostnames.root, FOLLOWED),
        id(sources.group_of): path.counting("group", sources.group_of, PLACE),
    }
    replaced = []
    for name, module in list(sys.modules.items()):
        if not name.startswith("crawler.") or module is None:
            continue
        for attribute, value in list(vars(module).items()):
            wrapper = wrapped.get(id(value))
            if wrapper is not None and name != value.__module__:
                replaced.append((module, attribute, value))
                setattr(module, attribute, wrapper)
    try:
        yield
    finally:
        for module, attribute, value in replaced:
            setattr(module, attribute, value)


def database() -> str:
    """DATABASE_URL, or a migrated throwaway embedded Postgres."""
    if os.environ.get("DATABASE_URL"):
        return os.environ["DATABASE_URL"]
    from crawler.db.server.engine import embedded_server_url
    from crawler.db.server.migrate import upgrade_to_head

    pgdata = Path(tempfile.mkdtemp(prefix="hostcrawl-name-path-")) / "pg"
    os.environ["DATABASE_URL"] = embedded_server_url(pgdata, cleanup_mode="delete")
    upgrade_to_head()
    return os.environ["DATABASE_URL"]


def crawl_parts(url: str):
    """The spider (set up as a crawl opens it) and the pipeline, on one crawler; the page
    host claimed and DENIED under no_follow."""
    from scrapy.utils.test import get_crawler
    from sqlalchemy import create_engine

    from crawler.core import config
    from crawler.db.crawl import claims, queue
    from crawler.db.rules import deny_entries
    from crawler.pipelines import HostWritePipeline
    from crawler.spiders.hosts import HostsSpider

    engine = create_engine(url)
    queue.save_hosts(engine, [PAGE_HOST])
    claims.claim(engine, 1, "name-path")
    deny_entries.add_no_follow(engine, [DENIED])
    settings = {s.name: value for s, value, _ in config.effective(os.environ)}
    settings["WORKER_NAME"] = "name-path"
    crawler = get_crawler(HostsSpider, settings)
    spider = HostsSpider.from_crawler(crawler)
    crawler.spider = spider
    spider.setup()
    spider.state.denylist.load()
    return spider, HostWritePipeline.from_crawler(crawler)


def response_of(spider):
    from scrapy.http import HtmlResponse

    request = spider.host_request(PAGE_HOST)
    body = PAGE.encode()
    return HtmlResponse(request.url, body=body, headers=HEADERS, request=request)


def trace(url: str) -> NamePath:
    """FOLLOWED's path through one parse of PAGE and its item through the pipeline, on the
    database at `url`."""
    spider, pipeline = crawl_parts(url)
    path = NamePath()
    response = response_of(spider)
    try:
        with asks_counted(path):
            threading.setprofile(path.profile)
            sys.setprofile(path.profile)
            try:
                for item in list(spider.parse(response)):
                    asyncio.run(pipeline.process_item(item))
            finally:
                sys.setprofile(None)
                threading.setprofile(None)
    finally:
        spider.state.denylist.stop()
    return path


def judged_at(visits: list[str]) -> int:
    """Where the name leaves the core (the filter) for the first time, its verdict given."""
    born = next((i for i, m in enumerate(visits) if m.startswith("crawler.core.")), 0)
    after = (i for i in range(born, len(visits)) if not visits[i].startswith("crawler.core."))
    return next(after, len(visits))


def report(path: NamePath) -> None:
    visits = path.visits
    short = [m.removeprefix("crawler.") for m in visits]
    print(f"# {FOLLOWED} (in a <{PLACE}>), from HostsSpider.parse to the write and back")
    for i, (module, functions) in enumerate(zip(short, path.functions, strict=True), 1):
        mark = "   <- written" if i == path.written_at else ""
        print(f"{i:3} {module:20} {', '.join(functions)}{mark}")
    written = path.written_at or len(visits)
    judged = judged_at(visits)
    spans = (
        ("judged (parse to the filter's verdict)", 0, judged),
        ("after the verdict, to the write", judged, written),
        ("to the write", 0, written),
        ("whole (the answer back to the pipeline)", 0, len(visits)),
    )
    for label, start, end in spans:
        part = visits[start:end]
        returns = len(part) - len(set(part))
        print(
            f"{label}: {len(set(part))} modules, {len(part)} visits,"
            f" {len(part) - 1} moves between modules, {returns} returns to a module already left"
        )
    per_module = Counter(short)
    print("visits per module: " + ", ".join(f"{m} {n}" for m, n in per_module.most_common()))
    for kind, what in (("root", f"root({FOLLOWED})"), ("group", f"group_of({PLACE!r})")):
        by = path.asked[kind]
        where = ", ".join(f"{m.removeprefix('crawler.')} {n}" for m, n in by.most_common())
        print(f"{what} asked {sum(by.values())} times: {where or 'never'}")


def main() -> None:
    report(trace(database()))


if __name__ == "__main__":
    main()
