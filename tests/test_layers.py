"""The apps stand on floors and lean one way (docs/architecture.md, "Floors"):

    common  <-  api  <-  workspaces  <-  feature apps  <-  demo

An app imports only from the floors below its own. The feature apps share a floor and know
each other only through what one announces: from another feature app, a module may import its
`events` (to listen), its `models` (to read, never write, the rows an event hands over) and its
`rendering` (to put those rows in the contract's shape), and never a private name. Everything
else of an app (services, selectors, api, pages, tasks, forms...) is its own.

Every import counts, at the top of a module or inside a function, in every file under apps/
(config/ sits above every app and composes them). The second half of this file feeds the same
check imports it must refuse, so a check that stopped seeing anything would fail here.
"""

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.smoke

APPS = Path(__file__).resolve().parents[1] / "apps"

FEATURE = 3
FLOORS = {
    "common": 0,
    "api": 1,
    "workspaces": 2,
    "activity": FEATURE,
    "knowledge": FEATURE,
    "mcp_server": FEATURE,
    "tools": FEATURE,
    "usage": FEATURE,
    "webhooks": FEATURE,
    "scores": FEATURE,
    "demo": 4,
    # Above the feature apps too, composing them: health, readiness and metrics, and the
    # retention that runs each feature app's own purge.
    "operations": 4,
    "retention": 4,
}
FLOOR_NAMES = {0: "common", 1: "api", 2: "workspaces", FEATURE: "feature apps", 4: "top apps"}

# What a feature app may import from another feature app.
PUBLIC_MODULES = frozenset({"events", "models", "rendering"})


@dataclass(frozen=True)
class Import:
    where: str  # file:line, for the message
    app: str  # the importing app
    module: str  # the module imported: "apps.activity.events"


def imports_in(source: str, *, app: str, package: str, where: str) -> Iterator[Import]:
    """Every module `source` imports (a `from m import n` counts as `m.n`: n may be a module)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(f"{where}:{node.lineno}", app, alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolved against the importing package
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            for alias in node.names:
                yield Import(f"{where}:{node.lineno}", app, f"{base}.{alias.name}")


def violation(found: Import) -> str | None:
    parts = found.module.split(".")
    if parts[0] != "apps" or len(parts) < 2 or parts[1] == found.app:
        return None
    target = parts[1]
    if found.app not in FLOORS or target not in FLOORS:
        return f"{found.where}: apps.{found.app} or apps.{target} stands on no floor (FLOORS)"
    if any(part.startswith("_") and part != "__init__" for part in parts[2:]):
        return f"{found.where}: {found.module} is a private name of apps.{target}"
    mine, theirs = FLOORS[found.app], FLOORS[target]
    if theirs > mine:
        return (
            f"{found.where}: apps.{found.app} ({FLOOR_NAMES[mine]}) imports {found.module} "
            f"from a floor above ({FLOOR_NAMES[theirs]})"
        )
    if theirs == mine and (len(parts) < 3 or parts[2] not in PUBLIC_MODULES):
        return (
            f"{found.where}: apps.{found.app} imports {found.module}, an inside of apps.{target}; "
            f"from another feature app only {', '.join(sorted(PUBLIC_MODULES))} may be imported"
        )
    return None


def violations_in(source: str, *, app: str, module: str = "") -> list[str]:
    package = module or f"apps.{app}.example"
    imports = imports_in(source, app=app, package=package.rsplit(".", 1)[0], where=package)
    return [message for found in imports if (message := violation(found))]


def app_modules() -> Iterator[tuple[str, str, Path]]:
    for path in sorted(APPS.rglob("*.py")):
        relative = path.relative_to(APPS.parent).with_suffix("")
        parts = relative.parts
        if len(parts) < 3:  # apps/__init__.py
            continue
        yield parts[1], ".".join(parts), path


def test_every_app_stands_on_a_floor():
    apps = {path.parent.name for path in APPS.glob("*/__init__.py")}
    assert apps == set(FLOORS), "place each app on a floor in FLOORS (and docs/architecture.md)"


def test_the_apps_lean_one_way():
    found = []
    for app, module, path in app_modules():
        found += violations_in(path.read_text(), app=app, module=module)
    assert found == []


def test_the_modules_read_are_the_apps():
    # The check above is only as good as the files it reads.
    modules = {module for _, module, _ in app_modules()}
    assert "apps.api.authentication" in modules
    assert "apps.workspaces.services.key_cache" in modules
    assert "apps.demo.management.commands.seed_demo" in modules
    assert len(modules) > 150


@pytest.mark.parametrize(
    ("app", "source", "says"),
    [
        ("api", "from apps.workspaces.models import Agent", "from a floor above"),
        ("api", "import apps.mcp_server.resource_tokens", "from a floor above"),
        ("common", "from apps.api.errors import REALM", "from a floor above"),
        ("workspaces", "def seed():\n    from apps.knowledge.demo import x", "floor above"),
        ("knowledge", "from apps.demo.management.commands import seed_demo", "floor above"),
        ("usage", "from apps.webhooks.services import delivery_retry", "an inside of"),
        ("usage", "from apps.activity import selectors", "an inside of"),
        ("webhooks", "from apps import usage", "an inside of"),
        ("usage", "from apps.activity.charts import _frame", "private name"),
        ("webhooks", "from apps.activity.events import _run_listeners", "private name"),
        ("activity", "from apps.reports.models import Report", "stands on no floor"),
        ("mcp_server", "from ..knowledge.services import document_list", "an inside of"),
    ],
)
def test_an_import_against_the_floors_is_found(app, source, says):
    found = violations_in(source, app=app)
    assert len(found) == 1
    assert says in found[0]


@pytest.mark.parametrize(
    ("app", "source"),
    [
        ("webhooks", "from apps.usage.events import threshold_example"),
        ("webhooks", "from apps.activity import events, models, rendering"),
        ("usage", "from apps.activity.models import Run"),
        ("workspaces", "from apps.api.credentials import credential_kind_register"),
        ("knowledge", "from apps.workspaces.models import Agent"),
        ("demo", "from apps.usage.services import rollup_rebuild"),
        ("activity", "from apps.activity.services import _private_helper"),
        ("api", "from django.db import connection"),
    ],
)
def test_an_import_along_the_floors_is_allowed(app, source):
    assert violations_in(source, app=app) == []
