"""`python -m crawler.cli`: the hostcrawl command."""

from crawler.cli import main

main()
