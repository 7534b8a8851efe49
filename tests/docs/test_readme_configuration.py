"""Every setting read from the environment is in the README's configuration table.

An operator learns what they can set from that table; a setting added in code and not there is
one nobody finds. The names come from the code itself (every `env_*` reader and
`os.environ.get` with a literal name), so a new setting fails this test until it is documented.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
READERS = {"env_str", "env_bool", "env_int", "env_list", "env_float_list", "env_choice"}
# Read by libraries or the process itself, not settings an operator of this service sets.
NOT_SETTINGS = {"DJANGO_SETTINGS_MODULE", "PATH"}


def _literal_name(call: ast.Call) -> str | None:
    if call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
        return call.args[0].value
    return None


def _reads_environment(call: ast.Call) -> bool:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id in READERS
    if isinstance(func, ast.Attribute) and func.attr in READERS | {"get", "getenv"}:
        if func.attr in READERS:
            return True
        owner = func.value
        # os.environ.get("X") and os.getenv("X")
        return (isinstance(owner, ast.Attribute) and owner.attr == "environ") or (
            func.attr == "getenv" and isinstance(owner, ast.Name) and owner.id == "os"
        )
    return False


def settings_read_from_environment() -> set[str]:
    names = set()
    for folder in ("config", "apps"):
        for path in (ROOT / folder).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if isinstance(node, ast.Call) and _reads_environment(node):
                    name = _literal_name(node)
                    if name and name.isupper():
                        names.add(name)
    return names - NOT_SETTINGS


def settings_in_readme_table() -> set[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    names = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            first_cell = line.split("|")[1]
            names.update(re.findall(r"`([A-Z][A-Z0-9_]+)`", first_cell))
    return names


def test_the_scan_finds_settings_we_know_are_read():
    found = settings_read_from_environment()
    assert {"DATABASE_URL", "MCP_ALLOWED_ORIGINS", "OAUTH_TOKEN_RATE_LIMIT"} <= found


def test_every_setting_read_from_the_environment_is_documented():
    missing = settings_read_from_environment() - settings_in_readme_table()
    assert not missing, f"add these to README.md's configuration table: {sorted(missing)}"
