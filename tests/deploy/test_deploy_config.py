"""deploy/: the cluster configs pass Ray's own schema (prepared as `ray up` prepares
them, without the cloud), declare the resources launch/placement.py places by, keep
ports closed and token authentication on, install nothing unpinned and name their host
images; the KubeRay manifests are well formed, share the oracle store's Redis and the
run directory across groups, and agree with each other and with the Dockerfile; the
Dockerfile's pins are pyproject's, its base is pinned to a Python patch release, it sets
HOME and installs the dependencies before it copies the sources."""

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
CLOUD_YAMLS = [DEPLOY / "cluster.yaml", DEPLOY / "cluster-gcp.yaml"]  # AWS, GCP: Docker images on every node
KUBERAY = DEPLOY / "kuberay"
CLOSED_PORTS = (6379, 6380, 8265, 10001)  # GCS, Redis, dashboard, Ray client
WORLD = ("0.0.0.0/0", "::/0")
DEPLOY_RESOURCES = {"actor", "learner", "replay"}


def _load(path: Path):
    return yaml.safe_load(path.read_text())


def _ray_up_config(config: dict) -> dict:
    """``config`` as `ray up` validates it: Ray's ``prepare_config`` (its provider's
    defaults merged), then Ray's ``validate_config`` (its schema). For the local provider
    `ray up`'s bootstrap follows, without a cloud; a cloud provider's would go on to call
    its API, which a test does not."""
    config = copy.deepcopy(config)
    prepared = prepare_config(config)
    validate_config(prepared)
    if config["provider"]["type"] == "local":
        return commands._bootstrap_config(config, no_config_cache=True)
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
    assert [p.name for p in CLUSTER_YAMLS] == ["cluster-gcp.yaml", "cluster-local.yaml", "cluster.yaml"]


@pytest.mark.parametrize("path", CLUSTER_YAMLS, ids=lambda p: p.name)
def test_cluster_yaml_passes_rays_schema(path):
    prepared = _ray_up_config(_load(path))
    assert prepared["head_node_type"] in prepared["available_node_types"]
    # The check bites: a misspelt field is refused.
    broken = _load(path)
    broken["head_start_commands"] = ["ray start --head"]
    with pytest.raises(jsonschema.ValidationError, match="head_start_commands"):
        _ray_up_config(broken)


@pytest.mark.parametrize("path", CLOUD_YAMLS, ids=lambda p: p.name)
def test_cloud_cluster_node_types_carry_the_placement_resources(path):
    config = _ray_up_config(_load(path))
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
        bad = _load(path)
        bad["available_node_types"]["actor_worker"]["resources"]["actor"] = 0.5
        _ray_up_config(bad)


def _unpinned_installs(commands_: list[str]) -> list[str]:
    """The pip installs of ``commands_`` that name a package without ``==`` (a
    requirements or constraints file pins, an editable install of a path does not fetch)."""
    with_value = {"-c", "--constraint", "-r", "--requirement", "-i", "--index-url", "--extra-index-url", "-f",
                  "--find-links"}
    unpinned = []
    for cmd in commands_:
        for install in re.findall(r"pip3? install ([^;&|]*)", cmd):
            words, packages = shlex.split(install), []
            for i, word in enumerate(words):
                if not word.startswith("-") and not (i and words[i - 1] in with_value):
                    packages.append(word)
            if any("==" not in w and not w.startswith(("~", "/", ".")) for w in packages):
                unpinned.append(cmd)
    return unpinned


@pytest.mark.parametrize("path", CLOUD_YAMLS, ids=lambda p: p.name)
def test_cloud_cluster_installs_nothing_unpinned(path):
    setup = ("initialization_commands", "setup_commands", "head_setup_commands", "worker_setup_commands")
    prepared = _ray_up_config(_load(path))
    assert [c for key in setup for c in prepared[key]] == []  # the images carry everything
    # The check bites: without the config's own lists, Ray's provider defaults install
    # its cloud client on the head, unpinned (boto3 on AWS, the Google API client on GCP).
    bare = _load(path)
    for key in setup:
        bare.pop(key, None)
    defaults = _ray_up_config(bare)
    assert any("pip install" in c for key in setup for c in defaults[key])
    assert _unpinned_installs([c for key in setup for c in defaults[key]])
    assert _unpinned_installs(["pip install 'boto3>=1.4.8'"]) and not _unpinned_installs(
        ["pip install -c constraints.txt boto3==1.44.18", "pip install -q -e ~/selfplay"])


@pytest.mark.parametrize("path", CLOUD_YAMLS, ids=lambda p: p.name)
def test_cloud_gpu_node_boots_a_gpu_host_image_and_hands_the_gpu_in(path):
    config = _load(path)
    types = config["available_node_types"]
    (learner,) = [t for t in types.values() if t["resources"].get("learner", 0) >= 1]
    assert "--gpus all" in learner["docker"]["worker_run_options"]
    for name, node_type in types.items():
        node = node_type["node_config"]
        if config["provider"]["type"] == "aws":
            # An AMI named (Ray's default is an end-of-life Ubuntu 18.04 one), its name beside it.
            assert re.fullmatch(r"ami-[0-9a-f]{8,17}", node.get("ImageId", "")), name
        else:
            (disk,) = [d for d in node["disks"] if d.get("boot")]
            assert re.search(r"deeplearning-platform-release/.*nvidia-\d+$", disk["initializeParams"]["sourceImage"])
    text = path.read_text()
    if config["provider"]["type"] == "aws":
        assert "Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04)" in text
    else:
        assert config["provider"]["project_id"] and config["provider"]["availability_zone"]
        gpu_node = learner["node_config"]
        # A GPU VM cannot live-migrate; an accelerator-optimized type brings its GPU.
        assert gpu_node["scheduling"]["onHostMaintenance"] == "TERMINATE"
        assert gpu_node["machineType"].startswith(("g2-", "a2-", "a3-")) or gpu_node.get("guestAccelerators")


def _without_region(commands_: list[str]) -> list[str]:
    return [re.sub(r" AWS_REGION=\S+", "", c) for c in commands_]


def test_gcp_and_aws_clusters_start_ray_alike():
    aws, gcp = _load(DEPLOY / "cluster.yaml"), _load(DEPLOY / "cluster-gcp.yaml")
    for key in ("head_start_ray_commands", "worker_start_ray_commands"):  # AWS's also name its region
        assert _without_region(aws[key]) == gcp[key], key
    for key in ("file_mounts", "docker"):
        assert aws[key] == gcp[key], key
    assert aws["available_node_types"].keys() == gcp["available_node_types"].keys()
    for name, node_type in aws["available_node_types"].items():
        other = gcp["available_node_types"][name]
        assert (node_type["resources"], node_type.get("docker")) == (other["resources"], other.get("docker")), name


def test_aws_nodes_know_their_region():
    """The run storage's S3 client asks the bucket's region of AWS_REGION: every node gets the
    provider's."""
    config = _load(DEPLOY / "cluster.yaml")
    starts = [c for c in _start_commands(config) if "ray start" in c]
    assert len(starts) == 2
    for cmd in starts:
        assert re.search(r"export [^&]*AWS_REGION=(\S+)", cmd).group(1) == config["provider"]["region"], cmd


@pytest.mark.parametrize("path", CLOUD_YAMLS, ids=lambda p: p.name)
def test_workers_have_an_identity_of_their_own_with_its_policy_stated(path):
    """Every worker node type runs as the workers' own identity (not the head's, which Ray
    gives the head alone): an instance profile on AWS, a service account on GCP; the
    config passes Ray's schema with it, and its policy is the one deploy/iam states."""
    config = _ray_up_config(_load(path))
    head = config["head_node_type"]
    workers = {name: t["node_config"] for name, t in config["available_node_types"].items() if name != head}
    assert workers.keys() == {"actor_worker", "learner_worker"}
    for name, node in workers.items():
        if config["provider"]["type"] == "aws":
            assert node["IamInstanceProfile"] == {"Name": "selfplay-worker"}, name
        else:
            (account,) = node["serviceAccounts"]
            assert account["email"] == f"selfplay-worker@{config['provider']['project_id']}.iam.gserviceaccount.com", name
    head_config = config["available_node_types"][head]["node_config"]
    assert "IamInstanceProfile" not in head_config and "serviceAccounts" not in head_config  # Ray's default, stated
    if config["provider"]["type"] == "aws":
        policy = json.loads((DEPLOY / "iam" / "aws-worker-policy.json").read_text())
        actions = {a for st in policy["Statement"] for a in ([st["Action"]] if isinstance(st["Action"], str) else st["Action"])}
        assert {"s3:GetObject", "s3:PutObject", "s3:ListBucket", "ecr:BatchGetImage"} <= actions
        assert not any(a.endswith("*") for a in actions)  # named actions only
        objects = next(st for st in policy["Statement"] if "s3:PutObject" in st["Action"])
        assert objects["Resource"] == "arn:aws:s3:::BUCKET/selfplay/*"  # the runs' prefix, not every bucket
        passrole = json.loads((DEPLOY / "iam" / "aws-head-passrole.json").read_text())
        assert passrole["Statement"][0]["Resource"].endswith(":role/selfplay-worker")
    text = (DEPLOY / "README.md").read_text()
    assert "selfplay-worker" in text and ("aws-worker-policy.json" in text) and "roles/storage.objectUser" in text


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


# The fields KubeRay's CRDs require (ray-operator/config/crd/bases of KubeRay v1.7.0:
# RayCluster's spec, its headGroupSpec and each workerGroupSpecs item; RayJob's spec
# requires none, its rayClusterSpec is a RayCluster's spec).
CRD_REQUIRED = {"spec": {"headGroupSpec"}, "headGroupSpec": {"template"},
                "workerGroupSpecs": {"groupName", "maxReplicas", "minReplicas", "template"}}


def _manifests() -> dict[str, list[dict]]:
    return {p.name: list(yaml.safe_load_all(p.read_text())) for p in sorted(KUBERAY.glob("*.yaml"))}


def _groups(spec: dict):
    yield "head", spec["headGroupSpec"]
    for group in spec["workerGroupSpecs"]:
        yield group["groupName"], group


def test_every_kuberay_manifest_parses_with_the_fields_the_crds_require():
    kinds = {}
    for name, docs in _manifests().items():
        for doc in docs:
            assert doc["apiVersion"] and doc["kind"] and doc["metadata"]["name"], name
            kinds.setdefault(doc["kind"], []).append(doc)
    assert {"RayCluster", "RayJob", "Deployment", "Service", "PersistentVolumeClaim"} <= kinds.keys()
    for doc in kinds["RayCluster"] + kinds["RayJob"]:
        assert doc["apiVersion"] == "ray.io/v1"
        spec = doc["spec"].get("rayClusterSpec", doc["spec"])
        assert CRD_REQUIRED["spec"] <= spec.keys()
        assert CRD_REQUIRED["headGroupSpec"] <= spec["headGroupSpec"].keys()
        for group in spec["workerGroupSpecs"]:
            assert CRD_REQUIRED["workerGroupSpecs"] <= group.keys(), group.get("groupName")
        for _, group in _groups(spec):
            assert group["template"]["spec"]["containers"], "a pod template without containers"


def _redis() -> tuple[dict, dict]:
    docs = {d["kind"]: d for d in _manifests()["redis.yaml"]}
    return docs["Deployment"], docs["Service"]


def test_kuberay_groups_share_one_oracle_store_and_one_run_directory():
    deployment, service = _redis()
    (redis,) = deployment["spec"]["template"]["spec"]["containers"]
    store = f"redis://{service['metadata']['name']}:{service['spec']['ports'][0]['port']}/0"
    # The port of deploy/start-redis.sh and of the `ray up` configs' store URL.
    assert re.search(r'port="\$\{SELFPLAY_REDIS_PORT:-(\d+)\}"', (DEPLOY / "start-redis.sh").read_text()).group(1) \
        == str(service["spec"]["ports"][0]["port"])
    head_start = " ".join(_load(DEPLOY / "cluster.yaml")["head_start_ray_commands"])
    assert "SELFPLAY_ORACLE_STORE=redis://127.0.0.1:6380/0" in head_start
    password = {e["name"]: e for e in redis["env"]}["SELFPLAY_REDIS_PASSWORD"]["valueFrom"]["secretKeyRef"]
    assert "requirepass" in " ".join(redis["args"]) and "SELFPLAY_REDIS_PASSWORD" in " ".join(redis["args"])
    (claim,) = _manifests()["runs-pvc.yaml"]
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
    for manifest in _rayclusters():
        spec = manifest["spec"].get("rayClusterSpec", manifest["spec"])
        for name, group in _groups(spec):
            pod = group["template"]["spec"]
            (container,) = pod["containers"]
            env = {e["name"]: e for e in container["env"]}
            assert env["SELFPLAY_ORACLE_STORE"]["value"] == store, name
            # The password from the Secret Redis reads, required (no pod without it).
            assert env["SELFPLAY_REDIS_PASSWORD"]["valueFrom"]["secretKeyRef"] == password, name
            assert set(env[PLACEMENT_ENV]["value"].split(",")) == DEPLOY_RESOURCES, name
            volumes = {v["name"]: v for v in pod["volumes"]}
            mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
            assert volumes[mounts["/home/ray/runs"]]["persistentVolumeClaim"]["claimName"] == \
                claim["metadata"]["name"], name
            assert not any("emptyDir" in v for v in volumes.values()), name
            # Redis's NetworkPolicy admits the pods with this label.
            assert group["template"]["metadata"]["labels"]["app.kubernetes.io/part-of"] == "selfplay"
    policy = next(d for d in _manifests()["redis.yaml"] if d["kind"] == "NetworkPolicy")
    admitted = policy["spec"]["ingress"][0]["from"][0]["podSelector"]["matchLabels"]
    assert admitted == {"app.kubernetes.io/part-of": "selfplay"}


def _on_a_cluster(args):
    """The learner config of the run ``args`` starts on one of deploy/'s clusters
    (``--address``): its waits' auto made the cluster's, whose nodes declare a learner node
    type (``SELFPLAY_PLACEMENT_RESOURCES``) that joins after the cluster is up."""
    from launch.config import resolve
    from launch.placement import offered_resources

    declared = {}
    for text in [(DEPLOY / name).read_text() for name in ("cluster.yaml", "cluster-gcp.yaml")] + [
            (KUBERAY / "rayjob.yaml").read_text()]:
        for value in re.findall(r"SELFPLAY_PLACEMENT_RESOURCES[=:\s]+(?:value:\s*)?\"?([a-z,]+)", text):
            declared.setdefault(value, 0)
    assert declared and all("learner" in offered_resources({}, {"SELFPLAY_PLACEMENT_RESOURCES": v}) for v in declared)
    config = resolve(args.game, args.preset, args.overrides, algo=args.algo, seed=args.seed)
    return config.learner.waits_for(embedded=args.address is None, gpu_node_to_come=args.address is not None)


def test_rayjob_results_outlive_it():
    job = _rayclusters()[1]
    assert job["spec"]["shutdownAfterJobFinishes"] is True and job["spec"]["ttlSecondsAfterFinished"] > 0
    args = train_parser().parse_args(shlex.split(job["spec"]["entrypoint"])[3:])
    # The run directory on the claim every group mounts, not on a pod's disk.
    head = job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
    runs = next(m for m in head["containers"][0]["volumeMounts"] if args.run_dir.startswith(m["mountPath"] + "/"))
    assert "persistentVolumeClaim" in {v["name"]: v for v in head["volumes"]}[runs["name"]]
    # It follows the job (the RayCluster KubeRay names after it), so no job finds another's run.
    assert args.run_dir == f"{runs['mountPath']}/$RAY_CLUSTER_NAME"
    # It waits for the GPU pod, which KubeRay may still be scaling up when the job starts,
    # and for a lost GPU node; the job's deadline holds its run and both waits.
    learner = _on_a_cluster(args)
    assert learner.wait_for_gpu_s >= 600 and learner.restart_wait_s >= 600
    assert job["spec"]["activeDeadlineSeconds"] >= args.minutes * 60 + learner.wait_for_gpu_s + learner.restart_wait_s
    text = (KUBERAY / "rayjob.yaml").read_text()
    assert "the RayJob itself: never" in text  # ttlSecondsAfterFinished deletes the RayCluster, not the RayJob


def test_kuberay_pods_share_an_identity_and_gcs_fault_tolerance():
    """Every group's pods run as the service account of service-account.yaml (a cloud
    identity by its annotations), list the runs claim as shared, and the GCS keeps its
    state in redis.yaml's Redis (KubeRay's gcsFaultToleranceOptions), with the Secret's password."""
    (account,) = _manifests()["service-account.yaml"]
    assert account["kind"] == "ServiceAccount"
    assert {"eks.amazonaws.com/role-arn", "iam.gke.io/gcp-service-account"} <= account["metadata"]["annotations"].keys()
    deployment, service = _redis()
    for manifest in _rayclusters():
        spec = manifest["spec"].get("rayClusterSpec", manifest["spec"])
        for name, group in _groups(spec):
            assert group["template"]["spec"]["serviceAccountName"] == account["metadata"]["name"], name
            for container in group["template"]["spec"]["containers"]:
                env = {e["name"]: e.get("value") for e in container["env"]}
                assert env["SELFPLAY_SHARED_DIRS"] == "/home/ray/runs", name
        ft = spec["gcsFaultToleranceOptions"]
        host, port = ft["redisAddress"].split(":")
        assert host == service["metadata"]["name"] and int(port) == service["spec"]["ports"][0]["port"]
        assert ft["redisPassword"]["valueFrom"]["secretKeyRef"] == {"name": "selfplay-redis", "key": "password"}


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
    # The base pinned to a Python patch release: Ray refuses a node whose Python
    # major.minor.patch differs from the head's, and a floating tag moves between builds.
    python = re.fullmatch(r"python:(\d+\.\d+\.\d+)-slim-bookworm", args["BASE_IMAGE"])
    assert python, f"BASE_IMAGE {args['BASE_IMAGE']} is not pinned to a patch release"
    assert Version(python.group(1)) in SpecifierSet(project["project"]["requires-python"])
    # The project itself is installed from its sources, every package of it: the build
    # context is copied whole, less what deploy/Dockerfile.dockerignore leaves out.
    assert re.search(r"^COPY --chown=ray:ray \. /home/ray/selfplay$", text, re.M)
    assert re.search(r"pip install .*-e /home/ray/selfplay\b", text)
    ignored = {line.strip().strip("/") for line in (DEPLOY / "Dockerfile.dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")}
    packages = {p.rstrip("*") for p in project["tool"]["setuptools"]["packages"]["find"]["include"]}
    assert not packages & ignored, f"packages the image would miss: {packages & ignored}"
    assert not {"pyproject.toml", "deploy"} & ignored


def _instructions() -> list[tuple[str, str]]:
    """deploy/Dockerfile as (instruction, arguments), continuation lines joined."""
    text = re.sub(r"\\\n", " ", (DEPLOY / "Dockerfile").read_text())
    return [tuple((line.split(None, 1) + [""])[:2]) for line in text.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def test_dockerfile_sets_home_for_rays_docker_runner():
    """`ray up` reads HOME from the image's environment to place its file mounts (the
    token, the Redis password); without it they go under /root, unreadable by `ray`."""
    steps = _instructions()
    home = [re.search(r"\bHOME=(\S+)", args) for op, args in steps if op == "ENV"]
    homes = [m.group(1) for m in home if m]
    user_home = re.search(r"useradd .*--create-home\b.*\b(\w+)$",
                          next(args for op, args in steps if op == "RUN" and "useradd" in args)).group(1)
    assert homes == [f"/home/{user_home}"], homes
    assert [args for op, args in steps if op == "USER"] == [user_home]


def test_dockerfile_installs_dependencies_before_it_copies_the_sources():
    """Editing the code must not rebuild the dependency layer (a gigabyte): every
    dependency is installed from files copied alone, before `COPY .`, and the install
    after it adds the project only (--no-deps)."""
    steps = _instructions()
    copy_all = [i for i, (op, args) in enumerate(steps) if op == "COPY" and re.search(r"(^|\s)\.\s", args)]
    assert len(copy_all) == 1
    installs = [i for i, (op, args) in enumerate(steps) if op == "RUN" and "pip install" in args]
    before = [steps[i][1] for i in installs if i < copy_all[0]]
    after = [steps[i][1] for i in installs if i > copy_all[0]]
    assert any("-r /tmp/deps/requirements.txt" in a and "-c /tmp/deps/pins.txt" in a for a in before), before
    assert after and all("--no-deps" in a for a in after), after
    # What the dependency layer sees: the files that name the dependencies, nothing else.
    early_copies = [args for op, args in steps[:copy_all[0]] if op == "COPY"]
    assert early_copies == ["constraints.txt pyproject.toml deploy/cloud-requirements.txt /tmp/deps/"]
    # The build arguments come after the system layers, which both variants then share.
    first_run = next(i for i, (op, _) in enumerate(steps) if op == "RUN")
    assert all(i > first_run for i, (op, args) in enumerate(steps) if op == "ARG" and "VARIANT" in args)


def test_cloud_requirements_are_pinned_and_the_image_imports_them():
    lines = [line.split("#")[0].strip() for line in (DEPLOY / "cloud-requirements.txt").read_text().splitlines()]
    pins = dict(line.split("==") for line in lines if line)
    assert {"boto3", "google-api-python-client"} <= pins.keys()
    assert all(re.fullmatch(r"[\w.]+", v) for v in pins.values()), pins
    text, _ = _dockerfile()
    assert re.search(r"import [^\n]*\bboto3\b[^\n]*\bgoogleapiclient\b", text)
    # The one line of constraints.txt the image leaves out: torch, installed per variant.
    left_out = set(re.findall(r"-e '\^([\w-]+)=='", text))
    assert left_out == {"torch"}
    # Any other package both files pin, they pin alike (pip refuses two pins of one package).
    locked = dict(re.findall(r"^([\w.-]+)==(\S+)$", (ROOT / "constraints.txt").read_text(), re.M))
    clash = {name: (v, locked[name]) for name, v in pins.items() if name in locked and name not in left_out
             and locked[name] != v}
    assert not clash, f"deploy/cloud-requirements.txt and constraints.txt disagree: {clash}"


def test_one_command_builds_both_image_variants():
    script = (DEPLOY / "build-images.sh").read_text()
    built = set(re.findall(r"docker build -f deploy/Dockerfile --build-arg VARIANT=(\w+) -t \"\$name:(\w+)\"", script))
    assert built == {(v, v) for v in _dockerfile_variants()}
    readme = (DEPLOY / "README.md").read_text()
    assert "deploy/build-images.sh" in readme


# ---------------------------------------------------------------- README


def _readme_launch_commands() -> list[list[str]]:
    text = (DEPLOY / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
    lines = "\n".join(blocks).replace("\\\n", " ").splitlines()
    return [shlex.split(line.split("python -m launch", 1)[1].split("#", 1)[0])
            for line in lines if "python -m launch" in line]


def test_readme_launch_commands_are_valid_runs():
    from launch.config import resolve, validate
    from launch.run_dir import check_shared

    commands_ = _readme_launch_commands()
    starts = [words for words in commands_ if "--resume" not in words]
    resumes = [words for words in commands_ if "--resume" in words]
    assert len(starts) >= 2 and len(resumes) >= 1  # the recovery after a lost head resumes
    for words in starts:
        args = train_parser().parse_args(words)
        assert args.address == "auto", words
        config = resolve(args.game, args.preset, args.overrides, algo=args.algo, seed=args.seed)
        validate(config)
        # A job on a fresh cloud cluster waits for its GPU node, which joins after `ray up`
        # returns, and for a replacement: the defaults on a cluster do, where nothing sets them.
        assert _on_a_cluster(args).wait_for_gpu_s >= 600 and _on_a_cluster(args).restart_wait_s >= 600, words
        assert args.run_dir.startswith(("s3://", "gs://", "/home/ray/runs/")), words  # shared by every node
    for words in resumes:
        args = train_parser().parse_args(words)
        assert args.address == "auto" and not args.overrides and (args.minutes or args.updates), words
        assert args.resume.startswith(("s3://", "gs://")), words
        check_shared(args.resume, args.address, "--resume")
