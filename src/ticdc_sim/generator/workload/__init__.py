"""Synthetic workloads: a YAML spec (`spec.py`, read by `reading.py`, documented by
`reference.py`) of tables, value generators and an operation mix, turned into the upstream's
transactions (`run.py`, rows chosen by `schedule.py`) with values that are pure functions of
(seed, table, column, row, version) (`values.py`)."""

from ticdc_sim.generator.workload.reading import Override, build, load, parse, read_yaml
from ticdc_sim.generator.workload.run import Generator, check
from ticdc_sim.generator.workload.spec import SpecError, Workload

__all__ = [
    "Generator",
    "Override",
    "SpecError",
    "Workload",
    "build",
    "check",
    "load",
    "parse",
    "read_yaml",
]
