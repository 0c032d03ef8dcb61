"""Fixtures shared by the test modules."""

import pytest


@pytest.fixture
def one_torch_thread():
    """One torch thread for the test, restored afterwards: on 2 shared cores, 2 threads are
    several times slower. Use with ``pytestmark = pytest.mark.usefixtures("one_torch_thread")``."""
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


#: The 100 real WebShop products and the real attribute file, next to the repository when present
#: (``$WEBSHOP_FIXTURE`` overrides); tests that need them skip otherwise.
WEBSHOP_FIXTURE_FILES = ("products_100.jsonl", "items_ins_v2_1000.json")


@pytest.fixture(scope="session")
def webshop_fixture_dir(tmp_path_factory):
    """A directory holding the real 100-product WebShop sample (official format)."""
    import os
    from pathlib import Path

    source = Path(
        os.environ.get("WEBSHOP_FIXTURE")
        or Path(__file__).resolve().parents[2] / "shared" / "data" / "webshop"
    )
    if not all((source / name).is_file() for name in WEBSHOP_FIXTURE_FILES):
        pytest.skip(f"the real WebShop sample is not at {source}")
    target = tmp_path_factory.mktemp("webshop100")
    for name in WEBSHOP_FIXTURE_FILES:
        (target / name).symlink_to(source / name)
    return str(target)
