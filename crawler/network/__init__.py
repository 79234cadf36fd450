"""Talking to the web: DNS, the download handler, direct probes, what a failure was."""
