"""The warnings the documentation tests raise, in a module at tests/ so that pytest-xdist's controller, which
imports a warning's class to report it, finds it (tests/ is on its path through conftest.py)."""


class DocExampleNotRun(UserWarning):
    """A documentation example marked ``<!-- example: not run (reason) -->``."""
