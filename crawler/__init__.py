"""hostcrawl. Every process (crawl, CLI, panel) reads its settings from its environment:
the core's hostname rules read LOCAL_SUFFIXES from it, whichever door a name comes in by."""

import os

from crawler.core import hostnames

hostnames.read_environment(os.environ)
