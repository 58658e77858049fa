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
    return [tuple(item.split(",", 1)) for item in res.stdout.splitlines() if item]


@pytest.mark.parametrize("line, want", [
    ("hspr replay --bank ", [("plain", b) for b in (*BANKS, "all")]),
    ("hspr replay --bank ve", [("plain", "verified")]),
    ("hspr replay --methods hspr,uni", [("plain", "hspr,uniform")]),
    ("hspr replay --methods hspr_", [("plain", m) for m in method_names() if m.startswith("hspr_")]),
    # bash: a file item would clear the names (click's script), so a name that matches comes alone (a trial)
    ("hspr replay --targets ba", [("plain", "bash-only")]),
    ("hspr bank agents te", [("plain", "terminal-bench")]),
    ("hspr bank validate mu", [("plain", "multimodal")]),
    ("hspr bank agents verified_", [("file", "verified_")]),  # typed past every name: the files
    ("hspr replay --methods hspr,", [("plain", f"hspr,{m}") for m in method_names() if m != "hspr"]),  # no 'all'
    ("hspr replay --methods all,", []),  # 'all' stands alone: nothing goes with it
    ("hspr replay --config au", [("plain", "auto")]),
    ("hspr replay --config cfg", [("file", "cfg")]),
    ("hspr live start --bank p", [("plain", "pro")]),
    ("hspr select --bank l", [("plain", "lite")]),
    ("hspr report r.json --baseline at", [("plain", "atlas")]),
    ("hspr li", [("plain", "live")]),
])
def test_completion_offers_banks_methods_and_files(line, want, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # bash: a file in the working directory that starts with the word hides the names
    assert _complete(line) == want


def test_hide_completes_the_agent_ids_of_the_bank_given(tmp_path):
    """A re-trial: nothing was offered for `live start --hide`."""
    from hspr.data import load_bank

    lite = [a for a in load_bank("lite").agents if a.startswith("202404")]
    assert lite and _complete("hspr live start --bank lite --hide 202404") == [("plain", a) for a in lite]
    assert ("plain", "20240820_honeycomb") in _complete("hspr live start --hide 20240820_h")  # verified by default
    (tmp_path / "m.csv").write_text("agent,t1,t2\nalpha,1,0\nbeta,0,1\n")
    assert _complete(f"hspr live start --matrix {tmp_path / 'm.csv'} --hide a") == [("plain", "alpha")]
    assert _complete("hspr live start --matrix /no/such.csv --hide a") == []


def test_zsh_and_fish_offer_names_and_files_together():
    """Only bash's script drops names beside a file item; zsh and fish list both."""
    for shell, cword in (("zsh", "3"), ("fish", "te")):  # fish gives the word typed, not its index
        res = CliRunner().invoke(main, [], prog_name="hspr", env={"_HSPR_COMPLETE": f"{shell}_complete",
                                                                  "COMP_WORDS": "hspr bank agents te", "COMP_CWORD": cword})
        assert res.exit_code == 0 and "terminal-bench" in res.stdout and "file" in res.stdout, (shell, res.stdout)


def test_the_cli_modules_load_no_pandas_scipy_stats_or_matplotlib():
    """Every TAB runs `hspr` and loads the command modules its words name (all of them for `hspr <TAB>`):
    a trial measured 1.0-1.5 s per TAB on `replay` and `report`, which imported pandas and scipy.stats when
    loaded. A fresh interpreter that loads every command module must not import them (they load when a
    command runs)."""
    import subprocess
    import sys

    code = ("import sys, hspr.cli as c\n"
            "for name in c.LAZY_COMMANDS: c.main.get_command(None, name)\n"
            "print(sorted(m for m in ('pandas', 'scipy.stats', 'sklearn', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_method_classes_load_no_scipy_or_sklearn():
    """`hspr replay --help` loads every method class (to say what 'all' leaves out): it took 1.6 s on a quiet
    2-core machine, 1.5 s of it scikit-learn's import (DISCO, RSL, tinyBenchmarks) and 0.3 s scipy's (FAQ,
    stratified). The methods import them where they fit or estimate."""
    import subprocess
    import sys

    code = ("import sys, hspr.methods as m\n"
            "[m.method_class(n) for n in m.registry()]\n"
            "print(sorted(x for x in ('scipy', 'sklearn', 'pandas', 'matplotlib') if x in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_replay_config_offers_files_first_in_bash(tmp_path, monkeypatch):
    """A re-trial: `replay --config <TAB>` wrote `auto` at once, though its value is usually a file; in bash
    the files come while any starts with what is typed, `auto` only when none does."""
    monkeypatch.chdir(tmp_path)
    assert _complete("hspr replay --config ") == [("plain", "auto")]  # an empty folder: auto
    (tmp_path / "auto_cfg.json").write_text("{}")
    assert _complete("hspr replay --config au") == [("file", "au")]
    assert _complete("hspr replay --config ") == [("file", "")]
    assert _complete("hspr replay --config aut") == [("file", "aut")]
    assert _complete("hspr replay --config autox") == [("file", "autox")]  # no name, no word: files (none)
    (tmp_path / "auto_cfg.json").unlink()
    assert _complete("hspr replay --config au") == [("plain", "auto")]
