"""Packaging metadata: the SPDX license, the license file, and the vendored reference's notice."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
LICENSE = (ROOT / "LICENSE").read_text(encoding="utf-8")
VENDORED = ROOT / "tests" / "oracle" / "reference" / "replay_handoff.rs"


def test_the_license_is_an_spdx_expression_with_its_file() -> None:
    project = PYPROJECT["project"]
    assert project["license"] == "Apache-2.0"  # a string, not the deprecated table
    assert project["license-files"] == ["LICENSE"]
    assert not any(c.startswith("License ::") for c in project.get("classifiers", []))


def test_the_build_backend_understands_license_expressions() -> None:
    # setuptools reads `license = "<SPDX>"` and `license-files` from 77.0 on.
    (setuptools,) = [r for r in PYPROJECT["build-system"]["requires"] if r.startswith("setuptools")]
    match = re.fullmatch(r"setuptools>=(\d+)(?:\.\d+)*", setuptools)
    assert match is not None and int(match[1]) >= 77


def test_the_license_file_is_the_apache_license() -> None:
    assert LICENSE.lstrip().startswith("Apache License\n                           Version 2.0")
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in LICENSE
    assert "END OF TERMS AND CONDITIONS" in LICENSE


def test_the_license_carries_the_vendored_reference_notice() -> None:
    header = [
        line.removeprefix("// ")
        for line in VENDORED.read_text(encoding="utf-8").splitlines()
        if line.startswith("// SPDX-")
    ]
    assert header[0].startswith("SPDX-FileCopyrightText: Copyright (c) 2026 NVIDIA CORPORATION")
    assert header[1] == "SPDX-License-Identifier: Apache-2.0"
    notice = LICENSE.split("END OF TERMS AND CONDITIONS", 1)[1]
    assert "tests/oracle/reference/replay_handoff.rs" in notice
    for line in header:
        assert f"    {line}\n" in notice
