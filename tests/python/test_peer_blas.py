"""bench/blas.py: the peers' BLAS comes from the library path it is given, ahead of the
system's libblas.so.3 alternative, and the report names the library really mapped."""
import importlib.util
import os
import pathlib
import shutil

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("peer_blas", ROOT / "bench" / "blas.py")
blas = importlib.util.module_from_spec(spec)
spec.loader.exec_module(blas)

REFERENCE = pathlib.Path("/usr/lib/x86_64-linux-gnu/blas/libblas.so.3")


def test_peer_env_sets_the_threads_and_puts_the_given_blas_first(monkeypatch, tmp_path):
    monkeypatch.setenv("LD_LIBRARY_PATH", "/elsewhere")
    env = blas.peer_env(str(tmp_path), threads=2)
    assert env["OMP_NUM_THREADS"] == env["OPENBLAS_NUM_THREADS"] == "2"
    assert env["LD_LIBRARY_PATH"] == f"{tmp_path}{os.pathsep}/elsewhere"
    assert blas.peer_env("")["LD_LIBRARY_PATH"] == "/elsewhere"


@pytest.mark.skipif(not REFERENCE.exists(), reason="Debian's libblas3 is not installed")
def test_the_peer_maps_the_blas_of_its_library_path(tmp_path):
    # A copy of the reference BLAS under a directory of its own: if the environment's path
    # did not come first, NumPy would map the system's library instead of this copy.
    own = tmp_path / "blas"
    own.mkdir()
    shutil.copy(REFERENCE.resolve(), own / "libblas.so.3")
    mapped = blas.loaded_blas(blas.peer_env(str(own)), "numpy")
    assert str(own / "libblas.so.3") in mapped
    assert blas.loaded_blas(blas.peer_env(str(own)), "no_such_module") == []


def test_default_openblas_is_the_fetched_package_under_the_build(tmp_path):
    assert blas.default_openblas(str(tmp_path)) == ""
    fetched = tmp_path / blas.FETCHED
    fetched.mkdir(parents=True)
    (fetched / "libblas.so.3").write_bytes(b"")
    assert blas.default_openblas(str(tmp_path)) == str(fetched)


def test_describe_names_openblas_or_the_reference_blas():
    root = "/work/main"
    openblas = root + "/build/bench-openblas/usr/lib/x86_64-linux-gnu/openblas-pthread/" \
        "libopenblasp-r0.3.21.so"
    text = blas.describe(["/usr/lib/x86_64-linux-gnu/libgfortran.so", openblas], root)
    assert text.startswith("OpenBLAS (`build/bench-openblas/")
    text = blas.describe(["/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0"], root)
    assert text.startswith("the reference BLAS, single-threaded "
                           "(`/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0`)")
    assert blas.describe([], root) == "no BLAS found mapped"


def test_name_mapped_says_which_blas_without_advice():
    root = "/work/main"
    reference = "/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0"
    assert blas.name_mapped([reference], root) == f"the reference BLAS, single-threaded (`{reference}`)"
    assert blas.name_mapped([root + "/build/x/libopenblasp-r0.3.21.so"], root) == \
        "OpenBLAS (`build/x/libopenblasp-r0.3.21.so`)"
    assert blas.describe([reference], root).endswith("scripts/benchmark.sh fetches it")


def test_benchmark_peers_run_on_the_blas_they_are_named_after(monkeypatch, tmp_path):
    # bench/benchmark.py's peers: NumPy with the given OpenBLAS, NumPy with the reference BLAS,
    # PyTorch with the OpenBLAS; each environment puts its directory first and sets the threads.
    spec = importlib.util.spec_from_file_location("bench_main", ROOT / "bench" / "benchmark.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    monkeypatch.setenv("LD_LIBRARY_PATH", "/elsewhere")
    openblas, refblas = str(tmp_path / "openblas"), str(tmp_path / "ref")
    backends = bench.peer_backends(openblas, refblas, have_torch=True)
    assert [(name, module) for name, module, _ in backends] == [
        ("numpy+openblas", "numpy"), ("numpy+refblas", "numpy"), ("torch", "torch")]
    paths = {name: env["LD_LIBRARY_PATH"].split(os.pathsep)[0] for name, _, env in backends}
    assert paths == {"numpy+openblas": openblas, "numpy+refblas": refblas, "torch": openblas}
    assert all(env["OPENBLAS_NUM_THREADS"] == str(bench.THREADS) for _, _, env in backends)
    # Without OpenBLAS or PyTorch: the reference peer alone.
    assert [name for name, _, _ in bench.peer_backends("", refblas, False)] == ["numpy+refblas"]
