"""The command line of the package (``python -m mondrian``); not imported by ``mondrian``."""
