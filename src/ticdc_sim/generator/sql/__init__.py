"""The TiDB emulator: SQL scripts executed as TiDB would, into the transactions TiCDC captures.

- `dialect/`: the TiDB dialect on sqlglot (tokens, parser, generator, expression nodes);
- `script`: scripts split and located as the mysql client reads them;
- `shapes`: repeated statement shapes executed without parsing them again;
- `ddl` and `restore`: the catalog of TableInfo and the DDL text TiDB restores;
- `dml`, `evaluate`, `values`: statements, expressions and MySQL's value conversions;
- `engine`: sessions, transactions and the commit that yields TiCDC's events.
"""
