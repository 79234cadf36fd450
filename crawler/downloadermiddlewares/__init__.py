"""Downloader middlewares: what every request passes on its way to the network and back."""
