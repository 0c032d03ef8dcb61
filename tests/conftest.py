"""Fixtures shared by the test modules, and the skip-budget plugin (:mod:`skip_budget`).

The test modules sit in folders mirroring the packages (tests/agentenvs/swe, tests/wrappers,
tests/learners/llm, ...); the helper modules they import by name (:mod:`llm_fixtures`,
:mod:`credit_builders`, :mod:`swe_golden`, :mod:`lost_worker`, :mod:`skip_budget`) stay here:
pytest's default ``prepend`` import mode puts this folder on ``sys.path`` when it loads this file.
So does :mod:`serve_abusers`, which a test runs as a script.
Test file names stay unique across folders (no ``__init__.py``: a module is named by its basename).
"""

import time

import pytest
import skip_budget


def pytest_configure(config: pytest.Config) -> None:
    """Register :mod:`skip_budget` (``$AGENTENVS_MAX_SKIPS``) unless ``-p skip_budget`` did."""
    if not config.pluginmanager.is_registered(skip_budget):
        config.pluginmanager.register(skip_budget, "skip_budget")


@pytest.fixture
def one_torch_thread():
    """One torch thread for the test, restored afterwards: on 2 shared cores, 2 threads are
    several times slower. Use with ``pytestmark = pytest.mark.usefixtures("one_torch_thread")``."""
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def tiny_dir():
    """The tiny model's Hugging Face directory (``resolve_model("tiny")``: built once, cached)."""
    pytest.importorskip("transformers")
    from agentenvs.learners.llm.models import resolve_model

    return resolve_model("tiny")


@pytest.fixture(scope="module")
def ray_session(request):
    """A Ray instance of the test module's own (``address="local"``: fresh even if another
    process runs a cluster here); the module is pickled by value, since Ray's workers cannot
    import test modules (the env factories defined there)."""
    ray = pytest.importorskip("ray")
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    ray.cloudpickle.register_pickle_by_value(request.module)
    yield ray
    ray.shutdown()


def ray_actor_gone(actor, seconds: float = 60.0) -> bool:
    """Whether ``actor`` (with a ``spaces`` method, as our env workers) is dead within ``seconds``:
    ``ray.kill`` takes effect asynchronously, so a call sent right after it may still be served."""
    import ray

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            ray.get(actor.spaces.remote(), timeout=10)
        except ray.exceptions.RayActorError:
            return True
        time.sleep(0.5)
    return False


@pytest.fixture
def actor_gone():
    """:func:`ray_actor_gone`, for tests that kill or close Ray env workers."""
    return ray_actor_gone


#: The 100 real WebShop products and the real attribute file, shipped gzipped in
#: ``tests/fixtures/webshop`` (MIT; source and licence beside them).
WEBSHOP_FIXTURE_FILES = ("products_100.jsonl", "items_ins_v2_1000.json")


@pytest.fixture(scope="session")
def webshop_fixture_dir(tmp_path_factory) -> str:
    """A temporary directory holding the real 100-product WebShop sample (official format,
    decompressed under the official names)."""
    import gzip
    from pathlib import Path

    source = Path(__file__).parent / "fixtures" / "webshop"
    target = tmp_path_factory.mktemp("webshop100")
    for name in WEBSHOP_FIXTURE_FILES:
        plain, packed = source / name, source / f"{name}.gz"
        if not (plain.is_file() or packed.is_file()):
            raise FileNotFoundError(f"the WebShop sample has no {name}[.gz] in {source}")
        data = plain.read_bytes() if plain.is_file() else gzip.decompress(packed.read_bytes())
        (target / name).write_bytes(data)
    return str(target)
