"""The README's first screen and the manual's links.

A newcomer reads the first screen only: what to run, how to get an operator and
where the results are must be there, not in a table 100 lines down. The manual
lives in docs/; a link to a moved page or a renamed section is a dead end.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[2]
FIRST_SCREEN = 50  # lines
OWN_PAGES = ["README.md", *(f"docs/{n}.md" for n in ("operators", "crawl", "settings"))]
OWN_PAGES += ["docs/deployment.md", "docs/development.md"]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def make_default_bind() -> str:
    found = re.search(r"^BIND \?= (\S+)$", (PROJECT_ROOT / "Makefile").read_text(), re.M)
    assert found, "no BIND default in the Makefile"
    return found.group(1)


def anchors(page: Path) -> set[str]:
    """GitHub's ids of a page's headings: lower case, punctuation gone, spaces to dashes."""
    prose = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.M | re.S)  # a `# comment`
    titles = re.findall(r"^#+ (.+)$", prose, re.M)
    return {re.sub(r"[^\w\- ]", "", t.strip().lower()).replace(" ", "-") for t in titles}


def test_the_first_screen_says_what_to_run_and_where_the_results_are():
    screen = "\n".join((PROJECT_ROOT / "README.md").read_text().splitlines()[:FIRST_SCREEN])
    for needed in ("make run", "make test", "hostcrawl user create", "hosts export"):
        assert needed in screen, f"{needed!r} is not on the README's first screen"
    # The panel's address as `make run` prints it, with the Makefile's default.
    assert f"panel: http://{make_default_bind()}/" in screen


def test_the_readme_links_every_page_of_the_manual():
    readme = (PROJECT_ROOT / "README.md").read_text()
    for page in sorted((PROJECT_ROOT / "docs").glob("*.md")):
        assert f"](docs/{page.name})" in readme, f"the README does not link docs/{page.name}"


@pytest.mark.parametrize("name", OWN_PAGES)
def test_links_reach_a_file_and_a_heading(name):
    page = PROJECT_ROOT / name
    for target in LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", target):
            continue  # an outside address
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists(), f"{name}: {target} names no file"
        if anchor:
            assert anchor in anchors(linked), f"{name}: {target} names no heading"
