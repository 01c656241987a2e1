"""What a new user types: every documented install command names this project's distribution,
the README's two quick-start lines work with the stock pip of a fresh virtual environment (no
dependency groups, which need pip 25.1), CI runs them without upgrading pip, and the user
documents carry no development-log wording."""

import re
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = ROOT / "pyproject.toml"
README = ROOT / "README.md"
CI = ROOT / ".ci" / "run"
if not (PYPROJECT.exists() and README.exists()):  # an installed copy of the tests alone
    pytest.skip("needs the checkout's pyproject.toml and README.md", allow_module_level=True)

PROJECT = tomllib.loads(PYPROJECT.read_text())
NAME = PROJECT["project"]["name"]
TEXTS = [README, *sorted((ROOT / "docs").glob("*.md")), ROOT / "docs" / "conf.py",
         *sorted((ROOT / "src" / "mondrian").rglob("*.py")),
         *sorted((ROOT / "tests").rglob("*.py"))]
# `pip install "name[extra]"`, `pip install 'name[extra]'` or `pip install name[extra]`.
EXTRA_INSTALL = re.compile(r"pip install [\"']?([A-Za-z0-9_.-]+)\[")


def _quick_start():
    text = README.read_text()
    section = text.split("\n## Quick start", 1)[1].split("\n## ", 1)[0]
    block = section.split("```bash", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


def test_the_distribution_is_not_another_projects_name():
    # `mondrian` on the public index is an unrelated logging helper.
    assert NAME != "mondrian"
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", NAME)


def test_every_install_command_with_extras_names_this_distribution():
    found = []
    for path in TEXTS:
        if path.resolve() == Path(__file__).resolve():
            continue
        for match in EXTRA_INSTALL.finditer(path.read_text(encoding="utf-8")):
            found.append((path.name, match.group(1)))
    assert found, "no documented install command with an extra"
    wrong = [(where, name) for where, name in found if name not in (NAME, ".", "dask")]
    assert not wrong, f"install commands naming another distribution than {NAME}: {wrong}"


def test_the_dask_import_error_names_this_distribution():
    source = (ROOT / "src" / "mondrian" / "dask" / "__init__.py").read_text()
    assert f"pip install '{NAME}[dask]'" in source


def test_quick_start_works_with_a_stock_pip():
    lines = _quick_start()
    assert len(lines) == 2
    install, tests = lines
    assert install.startswith("pip install . ") and "python -m mondrian demo" in install
    assert f'pip install "{NAME}[test]"' in tests
    assert 'python -m pytest -q -m "not slow"' in tests
    for line in lines:
        assert "--group" not in line  # pip < 25.1 has no --group
    extras = PROJECT["project"]["optional-dependencies"]
    groups = PROJECT["dependency-groups"]
    assert sorted(extras["test"]) == sorted(groups["test"])  # one list, kept in step


def test_ci_keeps_the_stock_pip():
    script = CI.read_text()
    commands = [line for line in script.splitlines() if not line.lstrip().startswith("#")]
    for line in commands:
        assert not re.search(r"pip install[^\n]*(--upgrade|-U)\b[^\n]*\bpip\b", line), line
        assert "--group" not in line, line


def test_user_documents_have_no_development_log_wording():
    pattern = re.compile(r"\b(session|issue) \d+\b", re.IGNORECASE)
    for path in [README, *sorted((ROOT / "docs").glob("*.md"))]:
        hits = [m.group(0) for m in pattern.finditer(path.read_text(encoding="utf-8"))]
        assert not hits, f"{path.name}: {hits}"


def test_roadmap_quotes_the_current_memory_figures():
    roadmap = README.read_text().split("Roadmap (not implemented yet):", 1)[1].split("\n## ", 1)[0]
    assert "56 bytes" not in roadmap and "2.1x" not in roadmap and "6.2x" not in roadmap
    assert "48-byte nodes" in roadmap
