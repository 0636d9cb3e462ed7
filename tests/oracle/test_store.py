"""The solved-position store: mirror keys, the SQLite store shared by two processes, and
a real Redis server (started here) including an outage and the reconnection after it."""

from __future__ import annotations

import logging
import multiprocessing
import shutil
import socket
import subprocess
import time

import numpy as np
import pytest

import games
from oracle_service.store import (
    EmbeddedStore,
    RedisStore,
    Solved,
    connect4_key,
    connect4_keys,
    mirror_bits,
    open_store,
)
from tests.local_servers import free_port

MOVES = ["4453", "1234567", "7711223", "", "4", "3355", "162534"]


def _mirror_moves(moves: str) -> str:
    return "".join(str(8 - int(ch)) for ch in moves)


def test_mirror_bits_is_the_engines_mirror_symmetry():
    g = games.make("connect4")
    mirror = g.symmetries()[1]
    acts = [[int(ch) - 1 for ch in m] for m in MOVES]
    state = g.from_moves(acts)
    mirrored_state = g.from_moves([[int(mirror.action[a]) for a in m] for m in acts])
    assert (mirror_bits(state.current) == mirrored_state.current).all()
    assert (mirror_bits(state.mask) == mirrored_state.mask).all()
    # Same thing seen through the encodings, the engine's definition of the symmetry.
    np.testing.assert_array_equal(mirror.obs(g.encode(state)), g.encode(mirrored_state))
    assert (mirror_bits(mirror_bits(state.mask)) == state.mask).all()


def test_a_position_and_its_mirror_share_one_key():
    for m in MOVES:
        k, mirrored = connect4_key(m)
        k2, mirrored2 = connect4_key(_mirror_moves(m))
        assert k == k2, m
        if m in ("", "4", "1234567", "3355"):  # symmetric positions: never "mirrored"
            assert not mirrored and not mirrored2
        else:
            assert mirrored != mirrored2, m
    assert connect4_key("4453") == (connect4_key("4435")[0], True)
    assert connect4_key("4435")[1] is False
    assert connect4_key("44") == (connect4_key([3, 3])[0], False)  # symmetric: never mirrored
    g = games.make("connect4")
    state = g.from_moves([[3, 3, 4, 2]])
    keys, mirrored = connect4_keys(state.current, state.mask)
    assert (int(keys[0]), bool(mirrored[0])) == connect4_key("4453")
    with pytest.raises(ValueError, match="full"):
        connect4_key("4444444")


def test_values_pack_and_mirror():
    s = Solved(5, (1, None, -3, 5, 0, 2, -18))
    assert Solved.unpack(s.pack()) == s and len(s.pack()) == 8
    assert Solved.unpack(Solved(-7).pack()) == Solved(-7)
    assert s.oriented(True) == Solved(5, (-18, 2, 0, 5, -3, None, 1))
    assert s.oriented(False) is s
    with pytest.raises(ValueError, match="corrupt"):
        Solved.unpack(b"abc")


def test_mirrored_lookup_reads_the_analysis_mirrored(tmp_path):
    store = EmbeddedStore(tmp_path / "s.sqlite")
    analysis = (1, None, -3, 5, 0, 2, -18)  # as if for "4453"
    k, mirrored = connect4_key("4453")
    store.put_many([(k, Solved(5, analysis).oriented(mirrored))])  # stored canonical
    k2, mirrored2 = connect4_key("4435")
    assert k2 == k and len(store) == 1
    (v,) = store.get_many([k2])
    assert v.oriented(mirrored2).analysis == tuple(reversed(analysis))
    assert store.get_many([k])[0].oriented(mirrored).analysis == analysis


def _writer(path, start, n, barrier):
    store = EmbeddedStore(path)
    barrier.wait()
    for i in range(start, start + n, 10):
        store.put_many((k, Solved(k % 37 - 18)) for k in range(i, i + 10))


def test_embedded_store_shared_by_two_processes(tmp_path):
    path = tmp_path / "shared.sqlite"
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=_writer, args=(str(path), s, 300, barrier)) for s in (0, 300)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    store = EmbeddedStore(path)
    assert len(store) == 600
    got = store.get_many(list(range(600)) + [10**9])
    assert got[:600] == [Solved(k % 37 - 18) for k in range(600)] and got[600] is None
    # A score-only record never overwrites a full one; a full one replaces a score.
    store.put_many([(3, Solved(-18, (0,) * 7))])
    store.put_many([(3, Solved(-18))])
    assert store.get_many([3]) == [Solved(-18, (0,) * 7)]
    assert store.stats()["hits"] == 601
    assert isinstance(open_store(str(path)), EmbeddedStore)


# ------------------------------------------------------------------------ Redis

PASSWORD = "s3cret-test"


def _start_redis(port: int) -> subprocess.Popen:
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                             "--requirepass", PASSWORD, "--save", "", "--appendonly", "no"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"redis-server did not start on port {port}")


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    proc.wait(10)


@pytest.fixture
def redis_server():
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not on PATH: Redis is an optional store (SQLite is the default); "
                    "make test installs it (.ci/system-deps)")
    port = free_port()
    holder = {"port": port, "proc": _start_redis(port)}
    yield holder
    if holder["proc"].poll() is None:
        _stop(holder["proc"])


def test_redis_store_round_trip(redis_server):
    url = f"redis://:{PASSWORD}@127.0.0.1:{redis_server['port']}/0"
    store = open_store(url)
    assert isinstance(store, RedisStore)
    items = [(k, Solved(k % 37 - 18, None if k % 2 else (k % 5, None, 1, 2, 3, 4, -5)))
             for k in range(0, 5000 * 97, 97)]
    store.put_many(items)
    assert len(store) == 5000
    keys = [k for k, _ in items] + [1]
    assert store.get_many(keys) == [v for _, v in items] + [None]
    store.put_many([(0, Solved(-18))])  # score only: keeps the analysis already there
    assert store.get_many([0]) == [items[0][1]]
    assert store.stats()["errors"] == 0


def test_redis_password_from_env(redis_server, monkeypatch):
    monkeypatch.setenv("SELFPLAY_REDIS_PASSWORD", PASSWORD)
    store = RedisStore(f"redis://127.0.0.1:{redis_server['port']}/0")
    store.put_many([(42, Solved(3))])
    assert store.get_many([42]) == [Solved(3)]


def test_redis_outage_is_a_miss_then_reconnects(redis_server, caplog):
    port = redis_server["port"]
    # The back-off is long enough that the dropped put below surely falls inside it.
    store = RedisStore(f"redis://:{PASSWORD}@127.0.0.1:{port}/0", retry_after_s=2.0, timeout_s=0.5)
    store.put_many([(7, Solved(1))])
    assert store.get_many([7]) == [Solved(1)]
    _stop(redis_server["proc"])
    with caplog.at_level(logging.WARNING, logger="oracle_service.store"):
        assert store.get_many([7, 8]) == [None, None]
    assert store.stats()["errors"] == 1
    assert any("redis store" in r.getMessage() for r in caplog.records)
    store.put_many([(9, Solved(2))])  # dropped while the server is away, without an exception
    assert store.stats()["dropped_puts"] == 1
    redis_server["proc"] = _start_redis(port)  # a fresh, empty server on the same port
    # Within retry_after_s puts are dropped and reads miss without trying the network;
    # past it, the next call connects again.
    deadline = time.monotonic() + 30
    while store.get_many([7]) != [Solved(-4)]:
        assert time.monotonic() < deadline, f"the redis store did not reconnect: {store.stats()}"
        store.put_many([(7, Solved(-4))])
        time.sleep(0.05)
    assert store.get_many([7, 9]) == [Solved(-4), None]
    assert store.stats()["errors"] == 1
