"""The soak's pure parts (launch/soak.py), no Ray: the verdict, the memory check, the
roles of processes, the faults by kind, the fault kinds with and without hosts."""

from types import SimpleNamespace

import pytest

from launch.soak import (FAULTS, HOST_FAULT, MEMORY_TOLERANCE, Injector, _by_kind, _descendants, _role,
                         fault_kinds, host_cpus, memory_check, verdict)

MIB = 2**20


def good() -> dict:
    return {"completed": True, "rows_lost": 3072, "rows_lost_counted": 3072, "memory": {"roles": {}, "over": []},
            "checkpoints": {"checkpoints": 3, "corrupt": [], "newest_pair": 120}, "resume": {"ok": True}}


def test_verdict_passes_a_good_soak():
    assert verdict(good()) == []


@pytest.mark.parametrize("change, words", [
    ({"completed": False}, "did not complete"),
    ({"rows_lost": 3073}, "3073 rows lost, 3072 counted lost"),
    ({"rows_lost_counted": None}, "counted lost"),
    ({"memory": {"over": ["gcs_server"]}}, "gcs_server"),
    ({"checkpoints": {"checkpoints": 3, "corrupt": ["bad sha"], "newest_pair": 120}}, "bad sha"),
    ({"checkpoints": {"checkpoints": 0, "corrupt": [], "newest_pair": None}}, "checkpoints"),
    ({"resume": {"ok": False, "from_pair": 120}}, "resume"),
])
def test_verdict_names_each_failed_check(change, words):
    problems = verdict({**good(), **change})
    assert len(problems) == 1 and words in problems[0]


def test_memory_check_without_a_baseline_fails():
    assert memory_check(None, {"driver": MIB})["over"] == ["no baseline sample was taken"]
    assert memory_check({}, {"driver": MIB})["over"]


def test_memory_check_within_and_beyond_the_tolerance_both_ways():
    baseline = {"driver": 100 * MIB, "raylet": 100 * MIB, "gcs_server": 100 * MIB, "redis-server": 100 * MIB}
    end = {"driver": 119 * MIB, "raylet": 81 * MIB, "gcs_server": 121 * MIB, "redis-server": 79 * MIB}
    out = memory_check(baseline, end)
    assert sorted(out["over"]) == ["gcs_server", "redis-server"]
    assert out["roles"]["driver"] == {"mib_baseline": 100.0, "mib_end": 119.0, "ratio": 1.19}
    assert MEMORY_TOLERANCE == 0.20


def test_memory_check_skips_roles_missing_at_the_end_or_empty_at_baseline():
    out = memory_check({"driver": 100 * MIB, "OracleWorker": 50 * MIB, "raylet": 0}, {"driver": 100 * MIB, "raylet": 9})
    assert out == {"roles": {"driver": {"mib_baseline": 100.0, "mib_end": 100.0, "ratio": 1.0}}, "over": []}


@pytest.mark.parametrize("cmdline, role", [
    ("ray::SelfPlayWorker.collect", "SelfPlayWorker"),
    ("ray::LearnerWorker", "LearnerWorker"),
    ("ray::ReplayShard.add rows", "ReplayShard"),
    ("ray::IDLE", "IDLE"),
    ("ray::oracle-6689cd438d5c-replica-0:OracleWorker.__init__", "OracleWorker"),
    ("/venv/lib/python3.11/site-packages/ray/core/src/ray/raylet/raylet --node_id=abc", "raylet"),
    ("/venv/lib/python3.11/site-packages/ray/core/src/ray/gcs/gcs_server --port=1", "gcs_server"),
    ("redis-server 127.0.0.1:6379", "redis-server"),
    ("/venv/bin/python -m ray.dashboard.agent --node-ip-address=127.0.0.1", None),
    ("/venv/bin/python -m launch.soak --minutes 10", None),
    ("", None),
])
def test_role_of_a_process(cmdline, role):
    assert _role(cmdline) == role


def test_descendants_follow_the_whole_tree_and_nothing_else():
    procs = {10: (1, "driver", 0), 11: (10, "raylet", 0), 12: (11, "ray::A", 0), 13: (12, "child", 0),
             14: (1, "other", 0), 15: (14, "ray::B", 0)}
    assert sorted(_descendants(10, procs)) == [11, 12, 13]
    assert sorted(_descendants(11, procs)) == [12, 13]
    assert _descendants(13, procs) == []


def test_by_kind_counts_each_kind():
    injected = [{"fault": "actor"}, {"fault": "host"}, {"fault": "actor"}, {"fault": "redis"}]
    assert _by_kind(injected) == {"actor": 2, "host": 1, "redis": 1}
    assert _by_kind([]) == {}


def test_fault_kinds_add_a_host_only_with_hosts():
    assert fault_kinds(1) == FAULTS and HOST_FAULT not in FAULTS
    assert set(FAULTS) == {"actor", "replay", "learner", "oracle", "redis"}
    for hosts in (2, 3, 5):
        assert fault_kinds(hosts) == (*FAULTS, HOST_FAULT)


def test_surviving_hosts_can_take_a_lost_hosts_actors():
    for hosts, actors in [(2, 2), (3, 2), (4, 2), (4, 5), (6, 7)]:
        cpus = host_cpus(hosts, actors)
        assert cpus * max(1, hosts - 2) >= actors  # the hosts left while one is lost
    assert host_cpus(3, 2) == 2 and host_cpus(4, 2) == 1 and host_cpus(2, 2) == 2 and host_cpus(3, 2, 0.5) == 1


def injector(hosts, seed=0) -> Injector:
    return Injector(run=None, redis=None, every=60, seed=seed, hosts=hosts)


def test_with_hosts_every_kind_comes_once_a_round():
    inj = injector(SimpleNamespace(nodes=[object(), object()]))
    for _ in range(3):
        assert sorted(inj.next_kind() for _ in range(6)) == sorted((*FAULTS, HOST_FAULT))


def test_without_hosts_no_host_fault_is_drawn():
    inj = injector(None)
    drawn = {inj.next_kind() for _ in range(200)}
    assert drawn == set(FAULTS)


def test_a_store_is_judged_on_its_memory_apart_from_its_data():
    """Redis holds the solved positions: 12 MiB at the baseline with 2 MiB of data, 15 at
    the end with 5: its memory apart from the data (10 MiB both times) is flat. A store
    whose memory beyond its data grew (10 to 13 MiB) is still named."""
    baseline, end = {"redis-server": 12 * MIB, "driver": 100 * MIB}, {"redis-server": 15 * MIB, "driver": 100 * MIB}
    out = memory_check(baseline, end, {"redis-server": (2 * MIB, 5 * MIB)})
    assert out["over"] == []
    assert out["roles"]["redis-server"]["ratio"] == 1.25  # the raw ratio stays in the record
    assert out["roles"]["redis-server"]["ratio_apart_from_data"] == 1.0
    leaking = memory_check(baseline, end, {"redis-server": (2 * MIB, 2 * MIB)})
    assert leaking["over"] == ["redis-server"] and leaking["roles"]["redis-server"]["ratio_apart_from_data"] == 1.3
    assert memory_check(baseline, end)["over"] == ["redis-server"]  # without the data: the raw ratio
