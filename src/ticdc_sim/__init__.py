"""ticdc-sim: a simulated TiCDC producer and CDC test-data generator.

Importing this package loads nothing heavy (no pyspark, fastapi or confluent_kafka).
"""

__version__ = "0.1.0"
