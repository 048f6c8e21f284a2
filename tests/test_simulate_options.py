"""``handoff-fsm simulate``'s settings: every float option is read one way, the session
policy's settings are options, and the header says every setting the run depends on."""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass

import pytest

from handoff_fsm.cli import build_parser, main
from handoff_fsm.cli.common import real_number
from handoff_fsm.cli.simulate import SESSION_OPTIONS
from handoff_fsm.model import Revision
from handoff_fsm.simulate import SimulationConfig
from handoff_fsm.simulate.config import SESSION_SETTINGS, command_config, settings
from tests.support.cli import run_cli


def _options() -> dict[str, dict[str, argparse.Action]]:
    """Every subcommand's options, by subcommand and option string."""
    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return {
        name: {option: action for action in sub._actions for option in action.option_strings}
        for name, sub in commands.choices.items()
    }


FLOAT_OPTIONS = [
    ("simulate", "--fault-rate"),
    ("simulate", "--decode-cancel-rate"),
    ("simulate", "--deadline-ms"),
    ("simulate", "--ack-timeout-ms"),
    ("simulate", "--cleanup-retry-ms"),
]


def test_no_option_reads_numbers_with_float() -> None:
    """``float`` takes Unicode digits, spaces and underscores: no option may use it."""
    for command, options in _options().items():
        for option, action in options.items():
            assert action.type is not float, f"{command} {option}"
    for command, option in FLOAT_OPTIONS:
        read = _options()[command][option].type
        assert read is real_number or read.__module__ == "handoff_fsm.cli.simulate"


@pytest.mark.parametrize(
    "text", ["0.5", ".5", "5.", "5", "+0.5", "-0", "1e-3", "2E+2", "nan", "inf", "-Infinity"]
)
def test_ascii_numbers_are_read(text: str) -> None:
    value = real_number(text)
    assert repr(value) == repr(float(text))


@pytest.mark.parametrize(
    "text",
    [
        "\u0660.\u0665",  # Arabic-Indic 0.5, which float() reads as 0.5
        "\uff10.\uff15",  # fullwidth 0.5
        "0.\u0665",
        " 0.5",
        "0.5 ",
        "0_5",
        "0x1p-1",
        "",
        ".",
        "e5",
        "1e",
        "--1",
        "nan(1)",
        "1e400",  # a finite spelling beyond the float range
        "-1e400",
    ],
)
@pytest.mark.parametrize(("command", "option"), FLOAT_OPTIONS)
def test_other_numbers_are_refused_with_the_text_given(
    capsys: pytest.CaptureFixture[str], command: str, option: str, text: str
) -> None:
    with pytest.raises(SystemExit) as exit_status:
        main([command, f"{option}={text}"])
    assert exit_status.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}: " in err and f"got {text!r}" in err, err
    assert "Traceback" not in err


@pytest.mark.slow
def test_a_unicode_rate_runs_nothing() -> None:
    result = run_cli("simulate", "--fault-rate", "\u0660.\u0665")
    assert result.returncode == 2 and result.stdout == ""
    assert "got '\u0660.\u0665'" in result.stderr


# ------------------------------------------------------------------ session settings


def test_session_options_are_the_configuration_s_settings() -> None:
    names = [option.removeprefix("--").replace("-", "_") for option, *_ in SESSION_OPTIONS]
    assert names == list(SESSION_SETTINGS)
    defaults = SimulationConfig()
    for option, _read, _metavar, help_text in SESSION_OPTIONS:
        name = option.removeprefix("--").replace("-", "_")
        default = getattr(defaults, name)
        said = re.search(r"\(default (\S+?)[;:)]", help_text)
        assert said is not None, option
        assert said.group(1) == ("off" if default is None else f"{default:g}"), option


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    assert main(["simulate", "--json", "--handoffs", "60", *args]) in (0, 1)
    summary: dict[str, object] = json.loads(capsys.readouterr().out)
    return summary


def test_session_options_reach_the_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert _json(capsys)["ack_timeouts"] == 0
    # Acknowledgements take at least 0.05 ms: a 0.01 ms time-out fires on each.
    assert _json(capsys, "--ack-timeout-ms", "0.01")["ack_timeouts"] != 0
    # Prefill takes at least 10 ms: a 5 ms deadline times every handoff out.
    timed_out = _json(capsys, "--deadline-ms", "5")
    assert timed_out["timeouts"] == timed_out["handoffs"] == 60
    lost = ("--fault-rate", "1", "--seed", "3")
    few, many = _json(capsys, *lost, "--cleanup-retries", "0"), _json(capsys, *lost)
    assert few["cleanup_resends"] == 0 and many["cleanup_resends"] != 0
    quick = _json(capsys, *lost, "--cleanup-retry-ms", "0.001")
    assert quick["virtual_ms"] != many["virtual_ms"]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--deadline-ms", "-1"], "deadline_ms must be a finite number of ms >= 0"),
        (["--ack-timeout-ms", "0"], "ack_timeout_ms must be > 0"),
        (["--cleanup-retry-ms", "0"], "cleanup_retry_ms must be > 0"),
        (["--deadline-ms", "1e299"], "the run could reach"),
    ],
)
def test_session_settings_are_judged_by_the_configuration(
    capsys: pytest.CaptureFixture[str], args: list[str], said: str
) -> None:
    assert main(["simulate", *args]) == 2
    captured = capsys.readouterr()
    assert f"invalid_argument: {said}" in captured.err and captured.out == ""


# ------------------------------------------------------------------ the header


def _header(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["simulate", "--handoffs", "20", *args]) == 0
    out = capsys.readouterr().out
    first_table_line = next(i for i, line in enumerate(out.splitlines()) if "━" in line)
    return " ".join(out.splitlines()[:first_table_line])


def test_the_header_says_every_setting(capsys: pytest.CaptureFixture[str]) -> None:
    args = [
        *("--revision", "a976b2bf", "--decode-cancel-rate", "0.25", "--fault-rate", "0.125"),
        *("--deadline-ms", "250", "--ack-timeout-ms", "40", "--cleanup-retries", "2"),
        *("--cleanup-retry-ms", "7.5", "--seed", "9", "--backend", "sglang"),
    ]
    header = re.sub(r"\s+", " ", _header(capsys, *args))
    config = command_config(
        backend="sglang",
        handoffs=20,
        seed=9,
        fault_rate=0.125,
        decode_cancel_rate=0.25,
        revision=Revision.A976B2BF,
        deadline_ms=250.0,
        ack_timeout_ms=40.0,
        cleanup_retry_ms=7.5,
        cleanup_retries=2,
    )
    for name, value in settings(config):
        assert f"{name} {value}" in header, (name, value)
    for said in (
        "protocol revision a976b2bf",
        "decode-cancel rate 0.25",
        "fault rate 0.125",
        "deadline 250 ms",
        "acknowledgement time-out 40 ms",
        "cancel re-sent after 7.5 ms",
        "cancel re-sent at most 2 times",
        "backend sglang",
        "order DestinationFirst (the backend's)",
        "seed 9",
    ):
        assert said in header, said


def test_settings_walk_every_field_even_a_new_one() -> None:
    @dataclass(frozen=True, slots=True)
    class Extended(SimulationConfig):
        warm_up_ms: float = 12.5
        """A field this module does not know."""

    rows = dict(settings(Extended()))
    assert rows["warm up ms"] == "12.5 ms"
    plain = settings(SimulationConfig())
    assert len(rows) == len(plain) + 1
    assert len(plain) >= len(SimulationConfig.__dataclass_fields__)  # nested plans add rows
