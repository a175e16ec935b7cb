"""The modules of the runs app import each other one way only: no cycle between two files,
counting the imports a function makes when it runs (the ones a module-level check misses)."""

from __future__ import annotations

import ast
from pathlib import Path

import webapp.runs

PACKAGE = "webapp.runs"
FOLDER = Path(webapp.runs.__file__).parent


def _module_names() -> set[str]:
    return {path.stem for path in FOLDER.glob("*.py") if path.stem != "__init__"}


def imported_modules(source: str, *, modules: set[str]) -> set[str]:
    """The modules of the app that `source` imports anywhere: at the top, inside a function
    or a class, under `if TYPE_CHECKING` (a cycle there still ties the two files)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if alias.name.startswith(PACKAGE + ".") and len(parts) > 2:
                    found.add(parts[2])
        elif isinstance(node, ast.ImportFrom):
            if node.level > 1:
                continue  # out of the package: not a module of this app
            base = node.module or ""
            if node.level == 0:
                if base != PACKAGE and not base.startswith(PACKAGE + "."):
                    continue
                base = base[len(PACKAGE):].lstrip(".")
            if base:
                found.add(base.split(".")[0])
            else:  # `from webapp.runs import views` or `from . import views`
                found.update(alias.name for alias in node.names)
    return found & modules


def import_graph() -> dict[str, set[str]]:
    modules = _module_names()
    return {name: imported_modules((FOLDER / f"{name}.py").read_text(), modules=modules) - {name}
            for name in sorted(modules)}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each group of modules that reach one another (a strongly connected component of more
    than one module), found by Tarjan's algorithm."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def test_the_finder_sees_imports_inside_functions() -> None:
    source = (
        "from webapp.runs.models import Run\n"
        "from webapp.benchmarks.models import Dataset\n"
        "def later():\n"
        "    from webapp.runs import tasks\n"
        "    import webapp.runs.live\n"
        "    from .dispatch import send_chunks\n"
        "    from ..teams import models\n"
    )
    modules = {"models", "tasks", "live", "dispatch"}
    assert imported_modules(source, modules=modules) == {"models", "tasks", "live", "dispatch"}


def test_the_cycle_finder_finds_a_cycle_through_three_modules() -> None:
    graph = {"services": {"tasks"}, "tasks": {"execution"}, "execution": {"services"},
             "models": set()}
    assert cycles(graph) == [["execution", "services", "tasks"]]


def test_no_import_cycle_between_modules_of_the_runs_app() -> None:
    graph = import_graph()
    assert "models" in graph["services"], "the graph was read"
    assert cycles(graph) == []


def test_tasks_only_call_down() -> None:
    """Nothing in the app imports the task module: work is sent by task name
    (`dispatch`), so services, execution and the sweeper stay below the tasks."""
    graph = import_graph()
    importers = sorted(name for name, targets in graph.items()
                       if "tasks" in targets and name != "apps")
    assert importers == []


def test_user_side_writes_do_not_reach_the_worker_side() -> None:
    graph = import_graph()
    assert not graph["services"] & {"tasks", "execution", "aggregation", "recovery"}
