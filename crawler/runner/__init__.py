"""`make run`: the supervisor of the crawler workers and the panel, and its console."""
