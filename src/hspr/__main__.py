"""``python -m hspr``: the same command line as ``hspr``."""

from ._entry import run

if __name__ == "__main__":
    run()
