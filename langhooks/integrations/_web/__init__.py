"""The live web view: the ASGI app, its run sources and its page."""
