"""The project's dependencies for one image target, as a pip requirements file on stdout.

    python3 docker/requirements.py service   # everything the service needs: no Spark
    python3 docker/requirements.py spark     # what `--engine spark` adds: pyspark, pandas

The service image leaves out PySpark (about 300 MB, and it needs Java); the `spark` target
installs it on top. Read from pyproject.toml, so the image never drifts from the package.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

# the Spark job's own dependencies (ticdc_sim.spark imports them lazily, nothing else does)
SPARK = frozenset({"pyspark", "pandas"})


def requirements(target: str, pyproject: Path) -> list[str]:
    document = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    wanted = {"service": False, "spark": True}[target]
    return [
        dependency
        for dependency in document["project"]["dependencies"]
        if (_name(dependency) in SPARK) == wanted
    ]


def _name(requirement: str) -> str:
    """The distribution a PEP 508 requirement names, normalised (PEP 503)."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    if match is None:
        raise SystemExit(f"requirements.py: not a requirement: {requirement!r}")
    return re.sub(r"[-_.]+", "-", match[1]).lower()


def main(argv: list[str]) -> None:
    if len(argv) not in (2, 3) or argv[1] not in ("service", "spark"):
        raise SystemExit("usage: python3 docker/requirements.py service|spark [PYPROJECT]")
    pyproject = Path(argv[2] if len(argv) == 3 else "pyproject.toml")
    print("\n".join(requirements(argv[1], pyproject)))


if __name__ == "__main__":
    main(sys.argv)
