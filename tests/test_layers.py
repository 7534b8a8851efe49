"""What the import-linter contracts cannot say about the floors (docs/architecture.md, "Floors").

The floors themselves (common <- api <- workspaces <- feature apps <- top apps) and "a feature
app imports another's events, models and rendering only" are import-linter contracts in
pyproject.toml, run by `make lint`. This file holds the rest:

- every app stands on a floor of the layers contract (an app named nowhere is checked by nothing);
- no module imports a private name (`_x`) of another app;
- a feature app reads another feature app's models but never writes them (`Model.objects.create`,
  `.update`, `.delete`, ...): the rows belong to the app that announces them.

Every import and call counts, at module level or inside a function, in every file under apps/.
The second half feeds each check code it must refuse, so a check that stopped seeing anything
would fail here.
"""

import ast
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.smoke

ROOT = Path(__file__).resolve().parents[1]
APPS = ROOT / "apps"

# Manager and queryset methods that write rows.
WRITES = frozenset(
    {
        "create",
        "bulk_create",
        "bulk_update",
        "update",
        "delete",
        "get_or_create",
        "update_or_create",
    }
)


def _contracts() -> list[dict]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return config["tool"]["importlinter"]["contracts"]


def floors() -> list[set[str]]:
    """The layers contract's floors, top first, each a set of app names."""
    (layers,) = [contract for contract in _contracts() if contract["type"] == "layers"]
    return [
        {name.strip().removeprefix("apps.") for name in floor.replace("|", ":").split(":")}
        for floor in layers["layers"]
    ]


def feature_apps() -> set[str]:
    (independence,) = [c for c in _contracts() if c["type"] == "independence"]
    return {name.removeprefix("apps.") for name in independence["modules"]}


def _absolute(node: ast.ImportFrom, package: str) -> str:
    base = node.module or ""
    if node.level:  # relative: resolved against the importing package
        parent = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join([*parent, base] if base else parent)
    return base


def _write_call_on(node: ast.Call, models: set[str]) -> str | None:
    """The model name if `node` is `Model.objects[.filter(...)...].<write>(...)`."""
    func = node.func
    if not (isinstance(func, ast.Attribute) and func.attr in WRITES):
        return None
    current: ast.expr = func.value
    while True:
        if isinstance(current, ast.Call):
            current = current.func
        elif isinstance(current, ast.Attribute):
            if current.attr == "objects" and isinstance(current.value, ast.Name):
                return current.value.id if current.value.id in models else None
            current = current.value
        else:
            return None


def violations_in(source: str, *, app: str, module: str = "") -> list[str]:
    module = module or f"apps.{app}.example"
    package = module.rsplit(".", 1)[0]
    features = feature_apps()
    found = []
    foreign_models: set[str] = set()  # names bound to another feature app's models
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = _absolute(node, package)
            parts = base.split(".")
            if parts[0] != "apps" or len(parts) < 2 or parts[1] == app:
                continue
            for alias in node.names:
                full = f"{base}.{alias.name}"
                if any(p.startswith("_") and p != "__init__" for p in full.split(".")[2:]):
                    found.append(f"{module}:{node.lineno}: {full} is a private name of {parts[1]}")
                if app in features and parts[1] in features and parts[2:] == ["models"]:
                    foreign_models.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                private = any(p.startswith("_") and p != "__init__" for p in parts[2:])
                if parts[0] == "apps" and len(parts) > 1 and parts[1] != app and private:
                    found.append(f"{module}:{node.lineno}: {alias.name} is a private name")
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and (model := _write_call_on(node, foreign_models)):
            found.append(
                f"{module}:{node.lineno}: apps.{app} writes {model}, another feature app's "
                "rows; read them, and let their app write them (listen to its events)"
            )
    return found


def app_modules() -> Iterator[tuple[str, str, Path]]:
    for path in sorted(APPS.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if len(parts) < 3 or "migrations" in parts:  # apps/__init__.py
            continue
        yield parts[1], ".".join(parts), path


def test_every_app_stands_on_a_floor_of_the_layers_contract():
    apps = {path.parent.name for path in APPS.glob("*/__init__.py")}
    named = set().union(*floors())
    assert apps == named, "name each app on a floor in pyproject.toml's layers contract"


def test_the_feature_floor_is_the_independence_contract():
    (feature_floor,) = [floor for floor in floors() if "activity" in floor]
    assert feature_floor == feature_apps()


def test_no_private_names_across_apps_and_no_writes_to_another_apps_rows():
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
        ("usage", "from apps.activity.charts import _frame", "private name"),
        ("webhooks", "from apps.activity.events import _run_listeners", "private name"),
        ("api", "import apps.common._secret", "private name"),
        ("webhooks", "def f():\n    from ..activity.events import _x", "private name"),
        ("usage", "from apps.activity.models import Run\nRun.objects.create(id=1)", "writes Run"),
        (
            "webhooks",
            "def f():\n    from apps.activity import models\n"
            "    from apps.activity.models import Run as R\n"
            "    R.objects.filter(id=1).update(status='x')",
            "writes R",
        ),
        ("tools", "from apps.activity.models import Run\nRun.objects.all().delete()", "writes"),
    ],
)
def test_what_the_contracts_cannot_say_is_found(app, source, says):
    found = violations_in(source, app=app)
    assert len(found) == 1
    assert says in found[0]


@pytest.mark.parametrize(
    ("app", "source"),
    [
        ("webhooks", "from apps.usage.events import threshold_example"),
        ("usage", "from apps.activity.models import Run\nRun.objects.filter(id=1).exists()"),
        ("activity", "from apps.activity.models import Run\nRun.objects.create(id=1)"),
        ("activity", "from apps.activity.services import _private_helper"),
        ("demo", "from apps.activity.models import Run\nRun.objects.create(id=1)"),
        ("webhooks", "from apps.webhooks.models import Delivery\nDelivery.objects.create()"),
    ],
)
def test_what_is_allowed_passes(app, source):
    assert violations_in(source, app=app) == []
