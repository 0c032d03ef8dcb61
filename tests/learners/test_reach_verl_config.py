"""Our estimators reach every verl process and read their options from verl's own config (the
reach venv: scripts/test_reach.sh).

* ``import verl`` registers them (our ``verl.plugins`` entry point), in a fresh interpreter and in
  a Ray actor whose code imports nothing of ours;
* the docs' YAML (docs/integrations.md, verl section) composes with verl's ``ppo_trainer`` through
  Hydra as verl's entry point does, struct mode on; its ``algorithm.agentenvs`` options reach the
  estimator inside a Ray actor, and the group size is ``actor_rollout_ref.rollout.n``.
"""

from __future__ import annotations

import pickle
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.reach
verl = pytest.importorskip("verl")
ray = pytest.importorskip("ray")
torch = pytest.importorskip("torch")

from agentenvs.wrappers.registry import make_config  # noqa: E402
from test_reach_verl import (  # noqa: E402  (its folder is on sys.path: pytest's prepend import mode)
    _source_rows,
    as_data_proto,
    expected_tokens,
    random_groups,
)

DOC = Path(__file__).resolve().parents[2] / "docs" / "integrations.md"


def docs_yaml() -> str:
    """The YAML block of docs/integrations.md's verl section."""
    verl_section = DOC.read_text(encoding="utf-8").split("\n## verl\n")[1].split("\n## ")[0]
    (snippet,) = re.findall(r"```yaml\n(.*?)```", verl_section, flags=re.S)
    return snippet


def compose_docs_config(tmp_path: Path):
    """verl's config as ``python -m verl.trainer.main_ppo --config-path=DIR --config-name=NAME``
    composes it from the docs' YAML (Hydra, struct mode as verl leaves it)."""
    from hydra import compose, initialize_config_dir

    (tmp_path / "agentenvs_ppo.yaml").write_text(docs_yaml(), encoding="utf-8")
    with initialize_config_dir(str(tmp_path), version_base=None):
        return compose("agentenvs_ppo")


def test_import_verl_alone_registers_ours():
    """A fresh interpreter that imports only verl has our seven estimators; with
    ``VERL_USE_EXTERNAL_PLUGINS=none`` (verl's switch) it has none."""
    code = (
        "import sys, verl\n"
        "from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY as R\n"
        "print(sorted(k for k in R if k.startswith('agentenvs_')))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    names = eval(run.stdout.strip().splitlines()[-1])
    assert names == sorted(
        f"agentenvs_{m}" for m in ("grpo", "gigpo", "graphgpo", "rtmc", "spa", "triage", "hisr")
    )
    off = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env={**__import__("os").environ, "VERL_USE_EXTERNAL_PLUGINS": "none"},
    )
    assert off.returncode == 0 and off.stdout.strip().splitlines()[-1] == "[]"


def test_docs_yaml_composes_with_verls_schema(tmp_path):
    """No ``set_struct(False)``: every key of the docs' YAML exists in verl's schema or is added by
    a config file (``algorithm.agentenvs``), and the group size verl uses is 8."""
    from omegaconf import OmegaConf

    cfg = compose_docs_config(tmp_path)
    assert OmegaConf.is_struct(cfg)
    assert cfg.algorithm.adv_estimator.startswith("agentenvs_")
    assert cfg.actor_rollout_ref.rollout.n == 8
    assert "env" not in cfg  # verl-agent's schema, not verl's
    from verl.trainer.ppo.v1 import get_trainer_cls

    assert cfg.trainer.use_v1 and get_trainer_cls(cfg.trainer.v1.trainer_mode).__module__ == (
        "agentenvs.learners.verl.trainer"
    )


#: Runs in a Ray worker (defined from source, so Ray ships it by value and the worker imports no
#: test module of ours): what ``import verl`` registered before anything of ours was imported, then
#: verl's ``compute_advantage`` on the pickled batch under the pickled algorithm config.
ACTOR_CODE = """
def in_actor(blob):
    import pickle, sys
    before = any(name.startswith("agentenvs") for name in sys.modules)
    import verl  # loads the verl.plugins entry points
    from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY
    from verl.trainer.ppo.ray_trainer import compute_advantage
    names = sorted(k for k in ADV_ESTIMATOR_REGISTRY if k.startswith("agentenvs_"))
    data, algorithm = pickle.loads(blob)
    out = compute_advantage(data, adv_estimator=algorithm.adv_estimator, config=algorithm)
    return {"imported_before": before, "names": names, "advantages": out.batch["advantages"]}
"""


def in_actor_function():
    namespace: dict = {"__name__": "agentenvs_test_actor"}  # in no sys.modules: pickled by value
    exec(ACTOR_CODE, namespace)
    return namespace["in_actor"]


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_options_from_the_yaml_reach_the_estimator_in_a_ray_actor(tmp_path, local_ray):
    """The worker registers ours through the entry point alone, and the YAML's
    ``algorithm.agentenvs`` options (not the defaults) decide its advantages."""
    import agentenvs.learners.verl as ours

    cfg = compose_docs_config(tmp_path)
    method = cfg.algorithm.adv_estimator.removeprefix(ours.PREFIX)
    options = dict(cfg.algorithm.agentenvs)
    rng = np.random.default_rng(5)
    groups = random_groups(rng, 6)
    trajectories = [t for g in groups for t in g]
    data = ours.attach_step_uids(as_data_proto(trajectories, rng))
    order = _source_rows(data, trajectories)
    want = expected_tokens(groups, method, data, order, make_config(method, **options))
    default = expected_tokens(groups, method, data, order)
    assert float((want - default).abs().max()) > 1e-3  # the options matter on this batch

    got = ray.get(ray.remote(in_actor_function()).remote(pickle.dumps((data, cfg.algorithm))))
    assert got["imported_before"] is False
    assert f"agentenvs_{method}" in got["names"] and len(got["names"]) == 7
    assert float((got["advantages"].double() - want).abs().max()) <= 1e-6
