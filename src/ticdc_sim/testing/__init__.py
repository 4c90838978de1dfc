"""What tests of a CDC consumer need beside the simulator: a real Kafka broker to point
changefeeds at (`broker`), and Kafka records as a person reads them (`records`). The pytest
plugin (`ticdc_sim.pytest_plugin`) is built on both; neither imports anything heavy."""
