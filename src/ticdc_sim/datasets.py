"""The files a workload's initial rows come from (`initial_from`), read in one process by
pyarrow; `ticdc_sim.spark` reads the same files with Spark, to the same table.

CSV files have a header line and every field is read as text (the column's type converts it,
as a SQL literal would be); an empty unquoted field is NULL, a quoted one ("") is ''. Both
readers agree on that, and on row order (the file's).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from ticdc_sim.generator.workload.spec import Dataset, SpecError, Workload


def read_datasets(spec: Workload) -> dict[int, pa.Table]:
    """The `initial_from` files of the spec's tables, by table index."""
    out = {}
    for i, table in enumerate(spec.tables):
        if table.initial_from is not None:
            try:
                out[i] = read_dataset(table.initial_from)
            except SpecError as e:
                raise SpecError(e.message, ("tables", i, "initial_from", *e.path)) from None
    return out


def file_format(dataset: Dataset) -> str:
    """`parquet` or `csv`, once the file is found to be one (errors at paths within
    `initial_from`)."""
    path = dataset.path
    if not path.is_file():
        what = "a directory" if path.is_dir() else "not there"
        raise SpecError(f"{path} is {what}: one file (its order is the rows')", ("path",))
    return dataset.kind


def check_columns(dataset: Dataset, kind: str) -> None:
    """The file's columns named once each, as a table's are (case aside): two of one name
    would fill one column (pyarrow refuses to pick one, Spark renames them)."""
    path = dataset.path
    try:
        if kind == "parquet":
            names = pq.read_schema(path).names
        else:
            names = pacsv.open_csv(path).schema.names
    except (OSError, pa.ArrowException) as e:
        raise SpecError(f"{path}: {e}", ("path",)) from None
    seen: dict[str, str] = {}
    for name in names:
        first = seen.get(name.lower())
        if first is not None:
            twice = (
                f"column {name!r} is there twice"
                if first == name
                else f"columns {first!r} and {name!r} are one column (names ignore case)"
            )
            raise SpecError(f"{path}: {twice}", ("path",))
        seen[name.lower()] = name


def read_dataset(dataset: Dataset) -> pa.Table:
    """The file's rows (errors at paths within `initial_from`)."""
    path = dataset.path
    kind = file_format(dataset)
    check_columns(dataset, kind)
    try:
        if kind == "parquet":
            return pq.read_table(path)
        names = pacsv.open_csv(path).schema.names
        options = pacsv.ConvertOptions(
            column_types={name: pa.string() for name in names},
            strings_can_be_null=True,
            quoted_strings_can_be_null=False,
        )
        return pacsv.read_csv(path, convert_options=options)
    except (OSError, pa.ArrowException) as e:
        raise SpecError(f"{path}: {e}", ("path",)) from None
