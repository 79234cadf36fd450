"""``python -m tests.fakeweb --world FILE``: run a fakeweb until stopped."""

import sys

from .server import main

sys.exit(main())
