"""The soak's pure parts (benchmarks/soak.py), no Ray: the verdict, the memory check, the
roles of processes, the faults by kind, the fault kinds with and without hosts."""

from types import SimpleNamespace

import pytest

from benchmarks.soak import (FAULTS, HOST_FAULT, MEMORY_TOLERANCE, Injector, MemorySample, _by_kind, _descendants, _role,
                         fault_kinds, host_cpus, lasting_check, memory_check, verdict)

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


def test_memory_check_names_growth_and_reports_falls():
    baseline = {"driver": 100 * MIB, "raylet": 100 * MIB, "gcs_server": 100 * MIB, "redis-server": 100 * MIB}
    end = {"driver": 119 * MIB, "raylet": 81 * MIB, "gcs_server": 121 * MIB, "redis-server": 79 * MIB}
    out = memory_check(baseline, end)
    assert out["over"] == ["gcs_server"]  # grew by more than 20%: a leak
    assert out["fell"] == ["redis-server"]  # fell by more than 20%: reported, not a failure
    assert out["roles"]["driver"] == {"mib_baseline": 100.0, "mib_end": 119.0, "ratio": 1.19}
    assert MEMORY_TOLERANCE == 0.20


def test_memory_check_names_a_role_that_did_not_come_back():
    out = memory_check({"driver": 100 * MIB, "OracleWorker": 50 * MIB, "raylet": 0}, {"driver": 100 * MIB, "raylet": 9})
    assert out["over"] == ["OracleWorker (no process at the end)"]
    assert out["roles"] == {"driver": {"mib_baseline": 100.0, "mib_end": 100.0, "ratio": 1.0}}
    # Three raylets at the baseline, two at the end (a host that did not return), the
    # memory within 20%: still named.
    counted = memory_check({"raylet": 90 * MIB}, {"raylet": 80 * MIB}, counts=({"raylet": 3}, {"raylet": 2}))
    assert counted["over"] == ["raylet (2 of 3 processes at the end)"]
    assert counted["roles"]["raylet"]["processes_end"] == 2
    assert memory_check({"raylet": 90 * MIB}, {"raylet": 80 * MIB}, counts=({"raylet": 3}, {"raylet": 3}))["over"] == []


def sample(**processes):
    """A MemorySample of processes given as key=(role, MiB)."""
    by_role = {}
    for role, mib in processes.values():
        by_role[role] = by_role.get(role, 0) + mib * MIB
    return MemorySample(by_role, {k: r for k, (r, _) in processes.items()},
                        {k: m * MIB for k, (_, m) in processes.items()})


def test_a_process_that_lived_through_is_judged_both_ways_against_itself():
    """The head's raylet lived through the soak: its own memory counts, both ways. A host's
    raylet replaced by a fault (another pid or start time) is judged only in its role's sum."""
    baseline = sample(p1=("raylet", 100), p2=("raylet", 100), p3=("redis-server", 12))
    end = sample(p1=("raylet", 70), p9=("raylet", 60), p3=("redis-server", 15))
    out = lasting_check(baseline, end, {"redis-server": (2 * MIB, 5 * MIB)})
    assert out == {"processes": 2, "over": ["raylet p1: x0.70"]}  # Redis flat apart from its data
    assert lasting_check(baseline, sample(p1=("raylet", 110), p3=("redis-server", 12)))["over"] == []
    assert baseline.counts() == {"raylet": 2, "redis-server": 1}


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
    ("/venv/bin/python -m benchmarks.soak --minutes 10", None),
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
