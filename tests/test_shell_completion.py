"""Shell completion (click's protocol, as the script `_HSPR_COMPLETE=bash_source hspr` prints uses it):
bank names, target sets, methods (items of a comma list) and files complete."""

import pytest
from click.testing import CliRunner

from hspr.cli import main
from hspr.data.banks import BANKS
from hspr.methods import method_names


def _complete(line: str) -> list[tuple[str, str]]:
    """The (type, value) pairs offered for the last word of ``line`` (a trailing space: a new word)."""
    words = line.split()
    cword = len(words) if line.endswith(" ") else len(words) - 1
    res = CliRunner().invoke(main, [], prog_name="hspr",
                             env={"_HSPR_COMPLETE": "bash_complete", "COMP_WORDS": line, "COMP_CWORD": str(cword)})
    assert res.exit_code == 0, res.output
    return [tuple(item.split(",", 1)) for item in res.stdout.splitlines()]


@pytest.mark.parametrize("line, want", [
    ("hspr replay --bank ", [("plain", b) for b in (*BANKS, "all")]),
    ("hspr replay --bank ve", [("plain", "verified")]),
    ("hspr replay --methods hspr,uni", [("plain", "hspr,uniform")]),
    ("hspr replay --methods hspr_", [("plain", m) for m in method_names() if m.startswith("hspr_")]),
    ("hspr replay --targets ba", [("plain", "bash-only"), ("file", "ba")]),
    ("hspr bank agents te", [("plain", "terminal-bench"), ("file", "te")]),
    ("hspr bank validate mu", [("plain", "multimodal"), ("file", "mu")]),
    ("hspr live start --bank p", [("plain", "pro")]),
    ("hspr select --bank l", [("plain", "lite")]),
    ("hspr report r.json --baseline at", [("plain", "atlas")]),
    ("hspr li", [("plain", "live")]),
])
def test_completion_offers_banks_methods_and_files(line, want):
    assert _complete(line) == want
