"""Tests needing cargo, node, dot or chromium skip without them; ``make test`` fails on any skip.

Each case runs a small suite in a nested pytest session (pytester) that uses this
repository's own ``tests/conftest.py``, with ``PATH`` pointing at a folder that holds
only the fake tools the case wants.
"""

from __future__ import annotations

import importlib.util
import re
import stat
from pathlib import Path

import pytest

from tests import requirements

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent

NEEDS_DOT = """
import pytest

@pytest.mark.requires("dot")
def test_draws():
    pass

def test_plain():
    pass
"""


def _tool(folder: Path, name: str, output: str = "") -> None:
    """A fake executable ``name`` in ``folder`` that prints ``output``."""
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(f"#!/bin/sh\necho '{output}'\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A nested session with the real conftest, an empty PATH and no REQUIRE_ALL."""
    pytester.makeini("[pytest]\naddopts = -p no:hypothesispytest -p no:cacheprovider\n")
    pytester.makeconftest((TESTS / "conftest.py").read_text(encoding="utf-8"))
    bin_dir = pytester.path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.delenv(requirements.REQUIRE_ALL_ENV, raising=False)
    return pytester


def test_a_missing_tool_skips_with_the_reason_and_the_cure(suite: pytest.Pytester) -> None:
    suite.makepyfile(NEEDS_DOT)
    result = suite.runpytest("-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(
        ["SKIPPED * requires Graphviz's dot *: dot is not on PATH; run `make graphviz`*"]
    )
    assert result.ret == pytest.ExitCode.OK


def test_require_all_turns_the_skip_into_a_failure(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(requirements.REQUIRE_ALL_ENV, "1")
    suite.makepyfile(NEEDS_DOT)
    result = suite.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*not run, and HANDOFF_FSM_REQUIRE_ALL=1 * allows no skipped test: requires *dot*"]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED


@pytest.mark.parametrize("require_all", ["", "1"])
def test_a_present_tool_runs_the_test(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, require_all: str
) -> None:
    monkeypatch.setenv(requirements.REQUIRE_ALL_ENV, require_all)
    _tool(suite.path / "bin", "dot")
    suite.makepyfile(NEEDS_DOT)
    result = suite.runpytest()
    result.assert_outcomes(passed=2)


def test_require_all_fails_any_skip_but_not_an_expected_failure(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite.makepyfile(
        """
        import pytest

        def test_skips_itself():
            pytest.skip("not today")

        @pytest.mark.skip(reason="switched off")
        def test_switched_off():
            pass

        @pytest.mark.xfail(reason="known bug", strict=True)
        def test_known_bug():
            assert False
        """
    )
    suite.runpytest().assert_outcomes(skipped=2, xfailed=1)
    monkeypatch.setenv(requirements.REQUIRE_ALL_ENV, "1")
    result = suite.runpytest()
    result.assert_outcomes(failed=1, errors=1, xfailed=1)
    result.stdout.fnmatch_lines(["*allows no skipped test: not today*"])
    result.stdout.fnmatch_lines(["*allows no skipped test: switched off*"])


def test_require_all_fails_a_module_skipped_at_collection(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite.makepyfile(
        """
        import pytest

        pytest.importorskip("a_module_nobody_installed")

        def test_never_collected():
            pass
        """
    )
    assert suite.runpytest().ret == pytest.ExitCode.NO_TESTS_COLLECTED
    monkeypatch.setenv(requirements.REQUIRE_ALL_ENV, "1")
    result = suite.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*allows no skipped test: *a_module_nobody_installed*"])


def test_an_unknown_tool_name_is_a_usage_error(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        """
        import pytest

        @pytest.mark.requires("dott")
        def test_typo():
            pass
        """
    )
    result = suite.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.re_match_lines(
        [
            r".*test_typo: @pytest.mark.requires takes tool names from "
            r"\['cargo', 'chromium', 'dot', 'node'\], "
            r"got \['dott'\]$"
        ]
    )


# ----------------------------------------------------------------------------- probes


@pytest.mark.slow
@pytest.mark.parametrize(
    ("version", "problem"),
    [
        ("cargo 1.84.1 (66221abde 2024-11-19)", "cargo 1.84 is older than 1.85 (edition 2024)"),
        ("cargo 1.85.0 (d73d2caf9 2024-12-31)", None),
        ("cargo 2.0.0", None),
        ("not a version", "`cargo --version` did not answer"),
    ],
)
def test_cargo_needs_edition_2024(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str, problem: str | None
) -> None:
    _tool(tmp_path, "cargo", version)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert requirements.REQUIREMENTS["cargo"].problem() == problem


@pytest.mark.slow
def test_node_needs_version_18_and_the_mermaid_check_packages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir, tool = tmp_path / "bin", tmp_path / "mermaid-check"
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setattr(requirements, "MERMAID_CHECK", tool)
    node = requirements.REQUIREMENTS["node"]
    assert node.problem() == "node is not on PATH"
    _tool(bin_dir, "node", "v16.20.2")
    assert node.problem() == "node 16.20 is older than 18"
    _tool(bin_dir, "node", "v20.11.0")
    assert node.problem() == "mermaid-check's npm package 'mermaid' is not installed"
    for package in requirements.NODE_PACKAGES:
        (tool / "node_modules" / package).mkdir(parents=True)
        (tool / "node_modules" / package / "package.json").write_text("{}", encoding="utf-8")
    assert node.problem() is None


def test_make_test_requires_every_test_to_run() -> None:
    """``make test`` runs pytest under REQUIRE_ALL, and ``.ci/run`` runs ``make test``."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = re.search(r"^test:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert recipe is not None
    assert re.search(rf"{requirements.REQUIRE_ALL_ENV}=1 \$\(BIN\)/pytest", recipe[1])
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^make test$", ci, re.MULTILINE)


def test_chromium_is_the_one_on_path_and_playwright_must_be_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chromium = requirements.REQUIREMENTS["chromium"]
    monkeypatch.setenv("PATH", str(tmp_path))
    assert chromium.problem() == "chromium is not on PATH"
    _tool(tmp_path, "chromium")
    assert requirements.chromium_path() == str(tmp_path / "chromium")
    assert chromium.problem() is None  # playwright is in the dev extra, so installed here
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    why = chromium.problem()
    assert why is not None and "playwright" in why


def test_make_test_installs_chromium_where_it_is_missing() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    test = re.search(r"^test:(.*)$", makefile, re.MULTILINE)
    assert test is not None and "chromium" in test[1].split()
    recipe = re.search(r"^chromium:\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert recipe is not None
    assert "command -v chromium" in recipe[1] and "apt-get install -y -qq chromium" in recipe[1]
    commands = [line for line in makefile.splitlines() if not line.lstrip().startswith("#")]
    assert not any("playwright install" in line for line in commands)  # no browser download
