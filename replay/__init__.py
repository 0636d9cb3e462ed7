"""Replay: the training-row record (``rows``), the ring buffer with Parquet snapshots
(``buffer``), and the sharded service on Ray with its prefetching sampler (``service``).

Import the module you need; ``replay.service`` is the only one that imports Ray.
"""
