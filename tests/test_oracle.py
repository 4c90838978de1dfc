"""The engine against a real MySQL-compatible server (MariaDB): same script, same tables.

Each script runs on one MariaDB; the engine's changelog (DDL queries and row changes) is
applied to a second one; every table must match. The corpus test covers the upstream scripts
MariaDB runs as they are and reports how many pass.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support_mariadb import MariaDB
from support_oracle import MariaDBRejects, check_script

from ticdc_sim.generator.script import decode_script

SCRIPTS = sorted((Path(__file__).parent / "oracle_scripts").glob("*.sql"))
CORPUS = Path(__file__).parents[2] / "shared" / "corpus"


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_script_matches_mariadb(script: Path, mariadb_pair: tuple[MariaDB, MariaDB]) -> None:
    outcome = check_script(*mariadb_pair, script.read_text(), str(script))
    assert outcome.mismatches == []
    assert outcome.rows > 0 and outcome.tables > 0
