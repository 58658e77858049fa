"""What `pip install .` (not editable) or `pip install git+...` gives a user: the wheel's package data."""

from __future__ import annotations

import glob
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_package_data_matches_every_file_of_the_package_that_is_not_code():
    """The tests run on an editable install, which reads the source tree: a bank, a SOURCE.md or the shipped
    configurations that ``package-data`` in pyproject.toml does not match would be missing only from a real
    install (``hspr replay --bank NAME`` failing there alone). setuptools puts in the wheel the files its
    patterns glob under the package folder (checked on 2026-12-07: a wheel built by ``pip wheel`` held
    exactly those); every file under src/hspr that is not Python must be among them."""
    if not (ROOT / "pyproject.toml").is_file():
        pytest.skip("not run from a source tree")
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["hspr"]
    package = ROOT / "src" / "hspr"
    matched = {Path(p).as_posix() for pattern in patterns for p in glob.glob(pattern, root_dir=package)}
    data = {p.relative_to(package).as_posix() for p in package.rglob("*")
            if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts}
    assert data - matched == set()
    assert {"data/bundled/verified/matrix.csv", "data/bundled/verified_bash_only/SOURCE.md",
            "methods/hspr/selected_configs.json", "data/bundled/folds.json"} <= matched
