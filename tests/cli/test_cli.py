"""The command line: `python -m mondrian` and its demo (on the smallest bundled dataset)."""

import subprocess
import sys

import pytest

from mondrian.cli.main import main


def test_without_a_command_prints_the_usage(capsys):
    assert main([]) == 0
    assert "demo" in capsys.readouterr().out


def test_demo_prints_a_markdown_table(capsys):
    assert main(["demo", "--dataset", "iris", "--n-estimators", "5", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "|" in out and "Mondrian" in out


def test_unknown_dataset_is_a_usage_error():
    with pytest.raises(SystemExit) as raised:
        main(["demo", "--dataset", "nope"])
    assert raised.value.code == 2


def test_module_entry_point():
    done = subprocess.run(
        [sys.executable, "-m", "mondrian", "demo", "--help"], capture_output=True, text=True
    )
    assert done.returncode == 0
    assert "--n-estimators" in done.stdout
