"""The pure core: hostcrawl's rules as functions and values.

No I/O, and no import of ours from outside this folder.
"""
