"""The layering of generator/sql's modules, checked on their imports at run time (those under
`if TYPE_CHECKING:` are for types only):
- the DDL modules (ddl.py's split, as TiDB's pkg/ddl): each imports only those below it
  (catalog -> alter -> build -> columns), so there is no cycle;
- the engine's split: the cluster's state (upstream.py) knows nothing of statements, and the
  executors (dml.py, join.py, grouping.py) and SET (variables.py) never import the engine
  that runs them."""

import ast
from collections.abc import Iterable
from pathlib import Path

import ticdc_sim.generator.sql as sql

LAYERS = ("columns", "build", "alter", "catalog")


def runtime_imports(module: str, among: Iterable[str] = LAYERS) -> set[str]:
    """The modules of `among` that `module` imports outside `if TYPE_CHECKING:`."""
    tree = ast.parse((Path(sql.__file__).parent / f"{module}.py").read_text())
    found: set[str] = set()
    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            pending += node.orelse
            continue
        if isinstance(node, ast.ImportFrom) and node.module:
            name = node.module.removeprefix("ticdc_sim.generator.sql.")
            found |= {name} & set(among)
        pending += ast.iter_child_nodes(node)
    return found


def test_each_ddl_module_imports_only_those_below_it() -> None:
    assert {m: runtime_imports(m) for m in LAYERS} == {
        "columns": set(),
        "build": {"columns"},
        "alter": {"build", "columns"},
        "catalog": {"alter", "build", "columns"},
    }


def test_ddl_names_the_catalog_the_simulator_imports() -> None:
    from ticdc_sim.generator.sql import catalog, ddl

    assert ddl.Catalog is catalog.Catalog
    assert ddl.SchemaInfo is catalog.SchemaInfo


STATEMENT_MODULES = ("engine", "dml", "join", "evaluate", "show", "variables", "infoschema")


def test_the_upstream_knows_no_statement_and_the_executors_no_engine() -> None:
    imports = {
        m: runtime_imports(m, {*STATEMENT_MODULES, "upstream"})
        for m in ("upstream", "dml", "join", "grouping", "variables", "session", "txn", "locks")
    }
    assert imports == {
        "upstream": set(),
        "dml": {"evaluate"},
        "join": {"dml", "evaluate"},
        "grouping": {"dml", "evaluate"},
        "variables": {"evaluate"},
        "session": set(),
        "txn": set(),
        "locks": set(),
    }
    assert {"upstream", "variables"} <= runtime_imports("engine", {"upstream", "variables"})
