"""The parts of deploy/local-cluster/ that run without root: the generated `ray up`
config (valid for Ray, token auth on every node, each node naming its bridge address,
a learner host by marker, the hosts' offline setup) and the verdict of check.sh's
summary. The whole path (hosts, sshd, ray up, a job, a host lost, ray down) runs in
.ci/run as `bash deploy/local-cluster/check.sh` (docs/cluster.md)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
from ray.autoscaler._private.util import prepare_config, validate_config

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "deploy" / "local-cluster"))
import make_config  # noqa: E402  (a script's module, found on the path above)


@pytest.fixture
def state(tmp_path):
    (tmp_path / "hosts").write_text("sp-h1 10.77.0.11\nsp-h2 10.77.0.12\nsp-h3 10.77.0.13\nsp-h4 10.77.0.14\n")
    return tmp_path


def test_the_generated_config_is_a_valid_local_cluster_of_the_hosts(state):
    config = make_config.make_config(state)
    validate_config(prepare_config(copy.deepcopy(config)))
    assert config["provider"] == {"type": "local", "head_ip": "10.77.0.11",
                                  "worker_ips": ["10.77.0.12", "10.77.0.13", "10.77.0.14"]}
    assert config["auth"] == {"ssh_user": "root", "ssh_private_key": str(state / "id_ed25519")}
    # The secrets come from the cluster's state directory, never from the operator's home.
    assert config["file_mounts"]["~/.ray/auth_token"] == str(state / "auth_token")
    assert config["file_mounts"]["~/.selfplay/redis_password"] == str(state / "redis_password")
    for command in (config["head_start_ray_commands"][1], config["worker_start_ray_commands"][1]):
        assert "RAY_AUTH_MODE=token" in command
        assert "--node-ip-address=$(hostname -I" in command  # no default route to guess it from
        assert "ulimit -n 65536 2>/dev/null || ulimit -n" in command
        # The directory every host sees is declared shared: a run there passes a cluster run's check.
        assert f"SELFPLAY_SHARED_DIRS={state / 'shared'} " in command
    worker = config["worker_start_ray_commands"][1]
    assert "test -e ~/.selfplay/learner-host" in worker and f"--num-cpus={make_config.WORKER_CPUS}" in worker


def test_the_hosts_setup_installs_nothing_from_the_network_and_keeps_ray_on_the_login_path(state):
    setup = make_config.make_config(state)["setup_commands"]
    assert not any("pip install" in c for c in setup)
    assert setup[-1].startswith("grep -qs 'selfplay/.venv/bin' ~/.bashrc")  # for `ray down`'s bare `ray stop`
    assert any("import launch, ray, torch" in c for c in setup)


def test_a_state_without_workers_is_refused(tmp_path):
    (tmp_path / "hosts").write_text("sp-h1 10.77.0.11\n")
    with pytest.raises(SystemExit, match="need a head and a worker"):
        make_config.make_config(tmp_path)


def summary(tmp_path, records, **kw):
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text("".join(json.dumps(r) + "\n" for r in records))
    args = {"hosts": 4, "ray-up-seconds": 90, "job-status": "SUCCEEDED", "lost-host": "sp-h3",
            "nodes-after-return": 4, **kw}
    argv = [a for k, v in args.items() for a in (f"--{k}", str(v))]
    proc = subprocess.run([sys.executable, str(ROOT / "deploy/local-cluster/summary.py"), str(tmp_path), *argv],
                          capture_output=True, text=True, timeout=60)
    return proc.returncode, json.loads(proc.stdout), proc.stderr


LAST = {"updates": 33, "faults/actor_restarts_total": 1, "faults/replay_rows_lost_total": 0,
        "faults/learner_restarts_total": 0}


def test_the_summary_of_a_good_run(tmp_path):
    rc, out, err = summary(tmp_path, [{"updates": 16}, LAST])
    assert rc == 0, err
    assert (out["hosts"], out["job_status"], out["updates"], out["restarts"], out["rows_lost_counted"]) == \
        (4, "SUCCEEDED", 33, 1, 0)


@pytest.mark.parametrize("change, problem", [
    ({"job-status": "FAILED"}, "job FAILED"),
    ({"nodes-after-return": 3}, "3 of 4 nodes alive"),
])
def test_the_summary_fails_a_bad_run(tmp_path, change, problem):
    rc, _, err = summary(tmp_path, [LAST], **change)
    assert rc == 1 and problem in err


def test_a_host_loss_that_no_fault_counts_fails(tmp_path):
    rc, out, err = summary(tmp_path, [{**LAST, "faults/actor_restarts_total": 0}])
    assert rc == 1 and out["restarts"] == 0 and "was not counted in faults/*" in err


def test_a_host_lost_after_the_job_ended_is_named_as_such(tmp_path):
    """A budget that ends before the host is cut off checks nothing: the verdict says so,
    rather than blaming the fault counts."""
    rc, out, err = summary(tmp_path, [{**LAST, "faults/actor_restarts_total": 0}], **{"job-at-loss": "SUCCEEDED"})
    assert rc == 1 and out["job_at_loss"] == "SUCCEEDED"
    assert "was lost when the job was SUCCEEDED, not under it" in err and "not counted" not in err


LEARNER_BACK = {"updates": 128, "faults/learner_restarts_total": 1, "faults/learner_restored_updates_total": 64}


def test_a_learner_back_on_another_host_with_its_updates_passes(tmp_path):
    rc, out, err = summary(tmp_path, [LEARNER_BACK], **{"storage": "s3", "lost-host": "sp-h2",
                                                          "learner-host-after": "sp-h3"})
    assert rc == 0, err
    assert (out["storage"], out["learner_restarts"], out["learner_restored_updates"], out["learner_host_after"]) == \
        ("s3", 1, 64, "sp-h3")


@pytest.mark.parametrize("record, host_after, problem", [
    ({**LEARNER_BACK, "faults/learner_restored_updates_total": 0}, "sp-h3", "did not come back with a checkpoint"),
    (LEARNER_BACK, "none", "did not come back on another host than sp-h2"),
    (LEARNER_BACK, "sp-h2", "did not come back on another host than sp-h2"),
])
def test_a_learner_not_restored_elsewhere_fails(tmp_path, record, host_after, problem):
    rc, _, err = summary(tmp_path, [record], **{"storage": "s3", "lost-host": "sp-h2", "learner-host-after": host_after})
    assert rc == 1 and problem in err


OUTAGE_END = {"updates": 128, "checkpoints_failed": 2, "faults/replay_rows_lost_total": 0,
              "faults/actor_restarts_total": 0}


def test_a_storage_outage_ridden_out_passes_with_its_counts(tmp_path):
    rc, out, err = summary(tmp_path, [OUTAGE_END], **{"storage": "s3", "lost-host": "none", "storage-outage": 60})
    assert rc == 0, err
    assert (out["storage_outage_s"], out["storage_retries"], out["rows_lost"]) == (60, 2, 0)


@pytest.mark.parametrize("record, problem", [
    ({**OUTAGE_END, "faults/replay_rows_lost_total": 64}, "the storage outage lost 64 replay rows"),
    ({k: v for k, v in OUTAGE_END.items() if k != "checkpoints_failed"}, "no checkpoint was refused during the 60 s"),
])
def test_a_storage_outage_that_lost_rows_or_went_unseen_fails(tmp_path, record, problem):
    rc, _, err = summary(tmp_path, [record], **{"storage": "s3", "lost-host": "none", "storage-outage": 60})
    assert rc == 1 and problem in err


GPU_NODE_BACK = {"updates": 128, "faults/learner_restarts_total": 1, "faults/learner_restored_updates_total": 64,
                 "faults/learner_wait_s_total": 291.4}


def test_a_lone_learner_node_waited_for_passes_with_the_wait(tmp_path):
    rc, out, err = summary(tmp_path, [GPU_NODE_BACK], **{"storage": "s3", "lost-host": "sp-h2", "down-s": 300})
    assert rc == 0, err
    assert (out["down_s"], out["learner_wait_s"], out["learner_restored_updates"]) == (300, 291.4, 64)


@pytest.mark.parametrize("record, problem", [
    ({**GPU_NODE_BACK, "faults/learner_wait_s_total": 0}, "no wait for the learner was recorded"),
    ({**GPU_NODE_BACK, "faults/learner_restored_updates_total": 0}, "did not come back with a checkpoint"),
])
def test_a_lone_learner_node_not_waited_for_fails(tmp_path, record, problem):
    rc, _, err = summary(tmp_path, [record], **{"storage": "s3", "lost-host": "sp-h2", "down-s": 300})
    assert rc == 1 and problem in err


RESUMED_END = {"updates": 128, "faults/actor_restarts_total": 0}


def test_a_run_resumed_after_its_head_was_lost_passes_with_what_it_restored(tmp_path):
    rc, out, err = summary(tmp_path, [RESUMED_END], **{"storage": "s3", "lost-host": "sp-h1", "head-lost": 1,
                                                         "updates-at-loss": 80, "pair-at-loss": 64,
                                                         "resumed-from-updates": 64})
    assert rc == 0, err
    assert (out["head_lost"], out["resumed_from_updates"], out["updates_lost"], out["job_status"]) == \
        (True, 64, 16, "SUCCEEDED")


@pytest.mark.parametrize("resumed, problem", [
    (0, "restored no checkpoint's updates"),
    (48, "restored 48 updates, not the newest pair's (64)"),
])
def test_a_resume_from_nothing_or_an_older_pair_fails(tmp_path, resumed, problem):
    rc, _, err = summary(tmp_path, [RESUMED_END], **{"storage": "s3", "lost-host": "sp-h1", "head-lost": 1,
                                                       "updates-at-loss": 80, "pair-at-loss": 64,
                                                       "resumed-from-updates": resumed})
    assert rc == 1 and problem in err
