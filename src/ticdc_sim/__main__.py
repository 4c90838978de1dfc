"""`python -m ticdc_sim`: the same as the `ticdc-sim` command."""

from ticdc_sim.cli import main

main()
