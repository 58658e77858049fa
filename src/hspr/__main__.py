"""``python -m hspr``: the same command line as ``hspr``."""

from .cli import main

if __name__ == "__main__":
    main(prog_name="hspr")
