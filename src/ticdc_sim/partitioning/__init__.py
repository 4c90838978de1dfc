"""Where TiCDC sends each event: topic and partition dispatchers, DDL and checkpoint placement.

Pure functions of events and configuration, mirroring tiflow
`cdc/sink/dmlsink/mq/dispatcher/` (`event_router.go`, `partition/*.go`, `topic/*.go`) and
`pkg/hash/position_inertia.go`. `router.EventRouter` is the entry point.
"""
