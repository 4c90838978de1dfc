"""DDL -> the catalog of schemas and tables, and the DDL events TiCDC would emit: the names
callers import, from the modules that split TiDB's `pkg/ddl` between them.

- catalog.py: `Catalog`, its schemas and the handler of each DDL statement (`executor.go`);
- alter.py: `AlterApplier`, one ALTER TABLE action (`modify_column.go`, `index.go`);
- build.py: `TableBuilder`, indexes, foreign keys and partitions (`create_table.go`,
  `partition.go`);
- columns.py: `build_column`, defaults, and the name, limit and type checks (`column.go`).
"""

from ticdc_sim.generator.sql.build import SchemaInfo
from ticdc_sim.generator.sql.catalog import Catalog

__all__ = ["Catalog", "SchemaInfo"]
