"""The DDL modules' layering (generator/sql/ddl.py's split, as TiDB's pkg/ddl): each imports, when
it runs, only the modules below it (catalog -> alter -> build -> columns), so there is no cycle;
the Catalog the lower ones take is imported for type checking only."""

import ast
from pathlib import Path

import ticdc_sim.generator.sql as sql

LAYERS = ("columns", "build", "alter", "catalog")


def runtime_imports(module: str) -> set[str]:
    """The DDL modules `module` imports outside `if TYPE_CHECKING:`."""
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
            found |= {name} & set(LAYERS)
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
