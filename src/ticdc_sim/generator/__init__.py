"""The ways of producing upstream transactions, side by side.

`sql/` executes SQL scripts as TiDB would; the synthetic workload generator joins it here.
"""
