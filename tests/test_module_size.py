"""Rooms a newcomer can read in one sitting (STYLE.md: modules of about 400 lines with one subject,
functions of about 80).

A module under apps/ past MAX_MODULE_LINES lines, or a function past MAX_FUNCTION_LINES, fails
here unless it is named below with the reason: STYLE.md's 400 is where a module is split. An
exception that is no longer needed (its module was split, or shrank) fails too, so the list
only shrinks.
"""

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.smoke

ROOT = Path(__file__).resolve().parents[1]
APPS = ROOT / "apps"

MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 80

MODULE_EXCEPTIONS: dict[str, str] = {}
FUNCTION_EXCEPTIONS: dict[str, str] = {}


def modules() -> list[Path]:
    return [path for path in sorted(APPS.rglob("*.py")) if "migrations" not in path.parts]


def long_functions(source: str) -> list[tuple[str, int]]:
    """(name, lines) of every function or method longer than MAX_FUNCTION_LINES."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            assert node.end_lineno is not None
            lines = node.end_lineno - node.lineno + 1
            if lines > MAX_FUNCTION_LINES:
                found.append((node.name, lines))
    return found


def _name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_no_module_grows_past_the_limit():
    too_long = {
        _name(path): lines
        for path in modules()
        if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    unexplained = {name: lines for name, lines in too_long.items() if name not in MODULE_EXCEPTIONS}
    assert unexplained == {}, (
        f"split these into modules of one subject each (at most {MAX_MODULE_LINES} lines)"
    )
    stale = sorted(set(MODULE_EXCEPTIONS) - set(too_long))
    assert stale == [], "no longer over the limit: remove them from MODULE_EXCEPTIONS"


def test_no_function_grows_past_the_limit():
    too_long = {
        f"{_name(path)}:{name}": lines
        for path in modules()
        for name, lines in long_functions(path.read_text())
    }
    unexplained = {
        name: lines for name, lines in too_long.items() if name not in FUNCTION_EXCEPTIONS
    }
    assert unexplained == {}, (
        f"break these up into functions that each do one thing (at most {MAX_FUNCTION_LINES} lines)"
    )
    stale = sorted(set(FUNCTION_EXCEPTIONS) - set(too_long))
    assert stale == [], "no longer over the limit: remove them from FUNCTION_EXCEPTIONS"


def test_the_modules_read_are_the_apps():
    names = {_name(path) for path in modules()}
    assert "apps/activity/recording/unit.py" in names
    assert "apps/workspaces/services/key_cache.py" in names
    assert not any("/migrations/" in name for name in names)


def test_a_long_function_is_seen_wherever_it_is():
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    source = (
        f"def long():\n{body}\n\n"
        f"class Shape:\n    def method(self):\n    {body.replace(chr(10), chr(10) + '    ')}\n\n"
        f"async def short():\n    return 1\n"
    )
    assert long_functions(source) == [
        ("long", MAX_FUNCTION_LINES + 1),
        ("method", MAX_FUNCTION_LINES + 1),
    ]
