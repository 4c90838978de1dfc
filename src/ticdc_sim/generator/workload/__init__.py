"""Synthetic workloads: a YAML spec (`spec.py`) of tables, value generators and an operation
mix, turned into the upstream's transactions (`run.py`) with values that are pure functions
of (seed, table, column, row, version) (`values.py`)."""

from ticdc_sim.generator.workload.run import Generator, check
from ticdc_sim.generator.workload.spec import Override, SpecError, Workload, load, parse

__all__ = ["Generator", "Override", "SpecError", "Workload", "check", "load", "parse"]
