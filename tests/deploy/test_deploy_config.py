"""deploy/: the cluster configs pass Ray's own schema (prepared as `ray up` prepares
them, without the cloud), declare the resources launch/placement.py places by, keep
ports closed and token authentication on; the KubeRay manifests are well formed and
agree with each other and with the Dockerfile; the Dockerfile's pins are pyproject's."""

from __future__ import annotations

import copy
import json
import re
import shlex
import tomllib
from pathlib import Path

import jsonschema
import pytest
import yaml
from packaging.specifiers import SpecifierSet
from packaging.version import Version
from ray.autoscaler._private import commands
from ray.autoscaler._private.util import prepare_config, validate_config

from launch.cli import train_parser
from launch.placement import PLACEMENT_ENV, ROLE_RESOURCES

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
CLUSTER_YAMLS = sorted(DEPLOY.glob("cluster*.yaml"))
KUBERAY = DEPLOY / "kuberay"
CLOSED_PORTS = (6379, 6380, 8265, 10001)  # GCS, Redis, dashboard, Ray client
WORLD = ("0.0.0.0/0", "::/0")
DEPLOY_RESOURCES = {"actor", "learner", "replay"}


def _load(path: Path):
    return yaml.safe_load(path.read_text())


def _ray_up_config(config: dict) -> dict:
    """``config`` as `ray up` validates it: defaults merged, then Ray's schema. For the
    local provider that is all of `ray up`'s preparation; a cloud provider's would go
    on to call its API, which a test does not."""
    config = copy.deepcopy(config)
    if config["provider"]["type"] == "local":
        return commands._bootstrap_config(config, no_config_cache=True)
    prepared = prepare_config(config)
    validate_config(prepared)
    return prepared


def _dockerfile() -> tuple[str, dict[str, str]]:
    text = (DEPLOY / "Dockerfile").read_text()
    args = dict(re.findall(r"^ARG (\w+)=(\S+)$", text, re.M))
    return text, args


def _dockerfile_variants() -> set[str]:
    text, _ = _dockerfile()
    return set(re.findall(r"^\s+(\w+)\)\s+index=", text, re.M))


def _start_commands(config: dict) -> list[str]:
    return config.get("head_start_ray_commands", []) + config.get("worker_start_ray_commands", [])


def _walk(node):
    yield node
    if isinstance(node, dict):
        for v in node.values():
            yield from _walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from _walk(v)


def _open_to_world(rule: dict) -> set[int]:
    """The ports of CLOSED_PORTS that an AWS ingress rule opens to the internet."""
    ranges = [r.get("CidrIp") for r in rule.get("IpRanges", [])] + [r.get("CidrIpv6") for r in rule.get("Ipv6Ranges", [])]
    if not any(r in WORLD for r in ranges):
        return set()
    low, high = rule.get("FromPort", -1), rule.get("ToPort", -1)
    if rule.get("IpProtocol") == "-1" or low == -1:
        return set(CLOSED_PORTS)
    return {p for p in CLOSED_PORTS if low <= p <= high}


# ---------------------------------------------------------------- cluster YAMLs


def test_every_cluster_yaml_is_found():
    assert [p.name for p in CLUSTER_YAMLS] == ["cluster-local.yaml", "cluster.yaml"]


@pytest.mark.parametrize("path", CLUSTER_YAMLS, ids=lambda p: p.name)
def test_cluster_yaml_passes_rays_schema(path):
    prepared = _ray_up_config(_load(path))
    assert prepared["head_node_type"] in prepared["available_node_types"]
    # The check bites: a misspelt field is refused.
    broken = _load(path)
    broken["head_start_commands"] = ["ray start --head"]
    with pytest.raises(jsonschema.ValidationError, match="head_start_commands"):
        _ray_up_config(broken)


def test_aws_cluster_node_types_carry_the_placement_resources():
    config = _ray_up_config(_load(DEPLOY / "cluster.yaml"))
    types = config["available_node_types"]
    head = types[config["head_node_type"]]
    assert head["resources"].get("replay", 0) >= 1 and head["resources"].get("CPU") == 0
    actors = [t for t in types.values() if t["resources"].get("actor", 0) >= 1]
    learners = [t for t in types.values() if t["resources"].get("learner", 0) >= 1]
    assert len(actors) == 1 and len(learners) == 1
    # CPU workers autoscale; the learner node has a GPU and runs the CUDA image.
    assert actors[0]["max_workers"] > actors[0]["min_workers"] and actors[0]["resources"]["CPU"] >= 1
    assert learners[0]["resources"]["GPU"] >= 1
    assert learners[0]["docker"]["worker_image"].endswith("selfplay:cuda")
    assert config["docker"]["image"].endswith("selfplay:cpu")
    with pytest.raises(jsonschema.ValidationError):  # Ray wants whole units per node type
        bad = _load(DEPLOY / "cluster.yaml")
        bad["available_node_types"]["actor_worker"]["resources"]["actor"] = 0.5
        _ray_up_config(bad)


def test_local_cluster_start_commands_declare_the_placement_resources():
    config = _load(DEPLOY / "cluster-local.yaml")

    def declared(commands_: list[str]) -> set[str]:
        names = set()
        for cmd in commands_:
            for raw in re.findall(r"""resources=['"]?(\{[^}]*\})""", cmd):
                names |= set(json.loads(raw))
        return names

    assert declared(config["head_start_ray_commands"]) == {"replay"}
    assert declared(config["worker_start_ray_commands"]) == {"actor", "learner"}
    assert "--num-cpus=0" in " ".join(config["head_start_ray_commands"])


@pytest.mark.parametrize("path", CLUSTER_YAMLS, ids=lambda p: p.name)
def test_placement_environment_names_resources_the_cluster_declares(path):
    config = _load(path)
    for cmd in _start_commands(config):
        if "ray start" not in cmd:
            continue
        listed = re.search(rf"{PLACEMENT_ENV}=(\S+)", cmd)
        assert listed, f"{path.name}: a ray start without {PLACEMENT_ENV}: {cmd}"
        assert set(listed.group(1).split(",")) == DEPLOY_RESOURCES
    # Every role has a resource in what the deploy configs declare.
    assert all(set(names) & DEPLOY_RESOURCES for names in ROLE_RESOURCES.values())


@pytest.mark.parametrize("path", CLUSTER_YAMLS, ids=lambda p: p.name)
def test_cluster_yaml_keeps_ports_closed_and_token_auth_on(path):
    config = _load(path)
    for node in _walk(config):
        if isinstance(node, dict) and "IpPermissions" in node:
            for rule in node["IpPermissions"]:
                assert not _open_to_world(rule), f"{path.name}: {rule} opens {_open_to_world(rule)} to the internet"
    starts = [c for c in _start_commands(config) if "ray start" in c]
    assert len(starts) == 2
    for cmd in starts:
        assert "RAY_AUTH_MODE=token" in cmd, cmd
        assert "RAY_AUTH_MODE=disabled" not in cmd
        host = re.search(r"--dashboard-host[= ](\S+)", cmd)
        assert host is None or host.group(1) in ("127.0.0.1", "localhost"), cmd
    text = path.read_text()
    assert "RAY_AUTH_MODE=disabled" not in text and "0.0.0.0/0" not in re.sub(r"#.*", "", text)
    # The token and the Redis password come from the operator's files, not this repository.
    mounts = config["file_mounts"]
    assert mounts["~/.ray/auth_token"] == "~/.ray/auth_token"
    assert mounts["~/.selfplay/redis_password"] == "~/.selfplay/redis_password"
    for cmd in _start_commands(config):
        for value in re.findall(r'SELFPLAY_REDIS_PASSWORD=("\$\(cat [^)]*\)"|\S+)', cmd):
            assert value == '"$(cat ~/.selfplay/redis_password)"', cmd
    assert "WANDB_API_KEY" not in text


def test_open_port_check_bites():
    world_dashboard = {"IpProtocol": "tcp", "FromPort": 8000, "ToPort": 9000, "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}
    everything = {"IpProtocol": "-1", "Ipv6Ranges": [{"CidrIpv6": "::/0"}]}
    ssh = {"IpProtocol": "tcp", "FromPort": 22, "ToPort": 22, "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}
    inside = {"IpProtocol": "tcp", "FromPort": 6379, "ToPort": 6379, "IpRanges": [{"CidrIp": "10.0.0.0/16"}]}
    assert _open_to_world(world_dashboard) == {8265}
    assert _open_to_world(everything) == set(CLOSED_PORTS)
    assert _open_to_world(ssh) == set() and _open_to_world(inside) == set()


# ---------------------------------------------------------------- KubeRay


def _rayclusters():
    cluster = _load(KUBERAY / "raycluster.yaml")
    job = _load(KUBERAY / "rayjob.yaml")
    return cluster, job


def _start_resources(group: dict) -> dict:
    raw = group["rayStartParams"].get("resources")
    if raw is None:
        return {}
    # KubeRay's form: '"{\"actor\": 1}"', a shell word holding JSON.
    return json.loads(shlex.split(raw)[0])


def _containers(spec: dict):
    yield from spec["headGroupSpec"]["template"]["spec"]["containers"]
    for group in spec["workerGroupSpecs"]:
        yield from group["template"]["spec"]["containers"]


def test_kuberay_manifests_are_a_raycluster_and_a_rayjob_of_the_same_cluster():
    cluster, job = _rayclusters()
    assert (cluster["apiVersion"], cluster["kind"]) == ("ray.io/v1", "RayCluster")
    assert (job["apiVersion"], job["kind"]) == ("ray.io/v1", "RayJob")
    assert job["spec"]["rayClusterSpec"] == cluster["spec"]
    assert job["spec"]["shutdownAfterJobFinishes"] is True


def test_kuberay_groups_declare_the_placement_resources():
    spec = _rayclusters()[0]["spec"]
    head = spec["headGroupSpec"]
    assert _start_resources(head) == {"replay": 1} and head["rayStartParams"]["num-cpus"] == "0"
    groups = {g["groupName"]: g for g in spec["workerGroupSpecs"]}
    by_resource = {name: [g for g in groups.values() if name in _start_resources(g)] for name in ("actor", "learner")}
    assert len(by_resource["actor"]) == 1 and len(by_resource["learner"]) == 1
    actor, learner = by_resource["actor"][0], by_resource["learner"][0]
    assert actor["minReplicas"] <= actor["replicas"] <= actor["maxReplicas"] and actor["maxReplicas"] > actor["minReplicas"]
    (gpu_container,) = learner["template"]["spec"]["containers"]
    assert gpu_container["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert gpu_container["image"].endswith("selfplay:cuda")
    env = {e["name"]: e for e in head["template"]["spec"]["containers"][0]["env"]}
    assert set(env[PLACEMENT_ENV]["value"].split(",")) == DEPLOY_RESOURCES


def test_kuberay_images_and_ray_version_match_the_dockerfile():
    _, args = _dockerfile()
    variants = _dockerfile_variants()
    assert variants == {"cpu", "cuda"}
    for manifest in _rayclusters():
        spec = manifest["spec"].get("rayClusterSpec", manifest["spec"])
        assert spec["rayVersion"] == args["RAY_VERSION"]
        images = {c["image"] for c in _containers(spec)}
        prefixes = {i.rsplit("selfplay:", 1)[0] for i in images}
        assert len(prefixes) == 1, f"images from different registries: {images}"
        assert {i.rsplit(":", 1)[1] for i in images} == variants, images
    aws = _load(DEPLOY / "cluster.yaml")
    aws_images = {aws["docker"]["image"]} | {t["docker"]["worker_image"] for t in aws["available_node_types"].values()
                                              if "docker" in t}
    assert {i.rsplit(":", 1)[1] for i in aws_images} == variants


def test_kuberay_keeps_the_cluster_closed_and_secrets_out():
    cluster, job = _rayclusters()
    for manifest in (cluster, job):
        spec = manifest["spec"].get("rayClusterSpec", manifest["spec"])
        assert spec["authOptions"]["mode"] == "token"
        assert spec["headGroupSpec"].get("serviceType", "ClusterIP") == "ClusterIP"
        for container in _containers(spec):
            for e in container.get("env", []):
                assert not (e["name"] == "RAY_AUTH_MODE" and e.get("value") == "disabled")
                if re.search(r"KEY|PASSWORD|TOKEN", e["name"]):
                    assert "value" not in e and "secretKeyRef" in e["valueFrom"], e


def test_rayjob_entrypoint_is_a_valid_launch_command():
    job = _rayclusters()[1]
    words = shlex.split(job["spec"]["entrypoint"])
    assert words[:3] == ["python", "-m", "launch"]
    args = train_parser().parse_args(words[3:])  # the real command line's parser
    assert args.address == "auto" and args.algo and args.game
    assert args.run_dir.startswith("/home/ray/runs/")  # the head's runs volume


# ---------------------------------------------------------------- Dockerfile


def test_dockerfile_pins_are_pyprojects():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    text, args = _dockerfile()
    deps = {re.split(r"[\[<>=!~ ]", d, maxsplit=1)[0]: d for d in project["project"]["dependencies"]}
    torch_pin = re.fullmatch(r"torch==(\S+)", deps["torch"]).group(1)
    assert args["TORCH_VERSION"] == torch_pin
    assert '"torch==${TORCH_VERSION}"' in text
    ray_spec = SpecifierSet(deps["ray"].split("]", 1)[1])
    assert Version(args["RAY_VERSION"]) in ray_spec
    assert '"ray[default]==${RAY_VERSION}"' in text
    python = re.fullmatch(r"python:(\d+\.\d+)-.*", args["BASE_IMAGE"]).group(1)
    assert Version(python) in SpecifierSet(project["project"]["requires-python"])
    # The project itself is installed from its sources, every package of it: the build
    # context is copied whole, less what deploy/Dockerfile.dockerignore leaves out.
    assert re.search(r"^COPY --chown=ray:ray \. /home/ray/selfplay$", text, re.M)
    assert re.search(r"pip install .*-e /home/ray/selfplay\b", text)
    ignored = {line.strip().strip("/") for line in (DEPLOY / "Dockerfile.dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")}
    packages = {p.rstrip("*") for p in project["tool"]["setuptools"]["packages"]["find"]["include"]}
    assert not packages & ignored, f"packages the image would miss: {packages & ignored}"
    assert not {"pyproject.toml", "deploy"} & ignored


# ---------------------------------------------------------------- README


def _readme_launch_commands() -> list[list[str]]:
    text = (DEPLOY / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
    lines = "\n".join(blocks).replace("\\\n", " ").splitlines()
    return [shlex.split(line.split("python -m launch", 1)[1].split("#", 1)[0])
            for line in lines if "python -m launch" in line]


def test_readme_launch_commands_are_valid_runs():
    from launch.config import resolve, validate

    commands_ = _readme_launch_commands()
    assert len(commands_) >= 2
    for words in commands_:
        args = train_parser().parse_args(words)
        assert args.address == "auto", words
        validate(resolve(args.game, args.preset, args.overrides, algo=args.algo, seed=args.seed))
