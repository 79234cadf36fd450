"""The server settings docs/scaling.md advises, sized from the machine (crawler/core/
server_advice.py): what the embedded server gets for each machine, and which settings of
a server of its owner's `hostcrawl db status` names as short."""

from __future__ import annotations

import pytest

from crawler.core.server_advice import (
    MB,
    Current,
    database_memory,
    describe_embedded,
    embedded_settings,
    server_value,
    shortfalls,
)

GB = 1024 * MB


@pytest.mark.parametrize(
    ("machine_mb", "workers", "wanted_mb", "memory_mb"),
    [
        (24 * 1024, 2, 0, 24 * 1024 - 1000),  # this machine: less 2 workers × 500 MB
        (64 * 1024, 14, 0, 64 * 1024 - 7000),  # 16 cores: 14 workers
        (2048, 2, 0, 1048),
        (1024, 2, 0, 512),  # the workers would leave nothing: Postgres's own floor
        (24 * 1024, 2, 512, 512),  # EMBEDDED_DATABASE_MEMORY_MB wins (the tests')
        (1024, 1, 8192, 8192),  # even above the machine's: the operator's word
    ],
)
def test_the_memory_the_embedded_server_is_sized_for(machine_mb, workers, wanted_mb, memory_mb):
    memory = database_memory(machine_mb, workers, 500, wanted_mb)
    assert memory.mb == memory_mb
    assert memory.chosen == bool(wanted_mb)


@pytest.mark.parametrize(
    ("memory_mb", "buffers", "cache"),
    [
        (512, 128 * MB, 384 * MB),  # the tests' servers: Postgres's own 128 MB
        (1024, 256 * MB, 768 * MB),
        (23 * 1024, 23 * 256 * MB, 23 * 768 * MB),
        (256 * 1024, 64 * GB, 192 * GB),
        (32, 16 * MB, 24 * MB),  # never below 16 MB of buffers
    ],
)
def test_shared_buffers_a_quarter_and_the_cache_three_quarters(memory_mb, buffers, cache):
    values = embedded_settings(memory_mb, {})
    assert values["shared_buffers"] == buffers
    assert values["effective_cache_size"] == cache
    # The rest does not depend on the memory: docs/scaling.md's figures.
    assert values["checkpoint_timeout"] == 15 * 60 and values["autovacuum_naptime"] == 10
    assert values["max_wal_size"] == 4 * GB and values["maintenance_work_mem"] == 256 * MB


@pytest.mark.parametrize(
    ("offered", "method"),
    [
        (("pglz", "on", "off"), None),  # the embedded build: pglz slowed writes, left off
        (("pglz", "lz4", "zstd", "on", "off"), "lz4"),
        (("pglz", "zstd", "on", "off"), "zstd"),
    ],
)
def test_wal_compression_only_with_a_method_cheaper_than_pglz(offered, method):
    values = embedded_settings(1024, {"wal_compression": Current("off", offered)})
    assert values.get("wal_compression") == method


def test_the_start_up_line_says_each_size_and_the_memory_it_came_from():
    memory = database_memory(24 * 1024, 2, 500, 0)
    line = describe_embedded(memory, embedded_settings(memory.mb, {}))
    assert line.startswith(
        "embedded Postgres sized for 23 GB (24 GB of memory less 2 workers ×"
        " MEMORY_BUDGET_MB 500 MB): shared_buffers 5.8 GB, effective_cache_size 17.3 GB,"
    )
    assert "checkpoint_timeout 15 min" in line and "autovacuum_naptime 10 s" in line


# A server as Postgres's defaults leave it (pg_settings' values in bytes and seconds).
DEFAULTS = {
    "shared_buffers": Current(128 * MB),
    "effective_cache_size": Current(4 * GB),
    "maintenance_work_mem": Current(64 * MB),
    "autovacuum_naptime": Current(60),
    "checkpoint_timeout": Current(300),
    "max_wal_size": Current(1 * GB),
    "wal_compression": Current("off", ("pglz", "lz4", "zstd", "on", "off")),
}


def test_a_server_on_defaults_falls_short_of_each_fixed_advice():
    found = {s.name: s for s in shortfalls(DEFAULTS, index_bytes=10 * MB)}
    assert set(found) == {
        "maintenance_work_mem",
        "autovacuum_naptime",
        "checkpoint_timeout",
        "max_wal_size",
        "wal_compression",
    }  # shared_buffers: its 128 MB hold 10 MB of indexes
    assert found["checkpoint_timeout"].describe() == (
        "checkpoint_timeout 5 min: advised at least 15 min"
        " (fewer full-page images in the WAL: one serves more writes of its page)"
    )
    assert found["autovacuum_naptime"].advised == "at most 10 s"
    assert found["wal_compression"].advised == "lz4"


def test_shared_buffers_at_the_default_is_short_once_the_indexes_outgrow_it():
    found = {s.name: s for s in shortfalls(DEFAULTS, index_bytes=4400 * MB)}
    assert found["shared_buffers"].current == "128 MB"
    assert "(its indexes: 4.3 GB)" in found["shared_buffers"].advised
    given = {**DEFAULTS, "shared_buffers": Current(2 * GB)}  # the owner chose: theirs
    assert "shared_buffers" not in {s.name for s in shortfalls(given, index_bytes=4400 * MB)}


def test_a_server_tuned_as_advised_falls_short_of_nothing():
    tuned = {
        name: Current(value)
        for name, value in embedded_settings(8192, {}).items()
        if name != "wal_compression"
    }
    tuned["wal_compression"] = Current("lz4", ("pglz", "lz4", "on", "off"))
    assert shortfalls(tuned, index_bytes=100 * GB) == []
    only_pglz = {**tuned, "wal_compression": Current("off", ("pglz", "on", "off"))}
    assert shortfalls(only_pglz, index_bytes=0) == []  # no cheaper method to advise


@pytest.mark.parametrize(
    ("setting", "unit", "value"),
    [
        ("16384", "8kB", 128 * MB),
        ("65536", "kB", 64 * MB),
        ("1024", "MB", GB),
        ("300", "s", 300),
        ("60000", "ms", 60),
        ("lz4", None, "lz4"),
    ],
)
def test_pg_settings_values_in_bytes_and_seconds(setting, unit, value):
    assert server_value(setting, unit) == value
