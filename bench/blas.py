"""The BLAS a Python peer runs with, and which one it really loaded.

Peers run with OpenBLAS (Debian's libopenblas0-pthread) and 2 threads, the way a user who
cares would run them. python3-numpy and python3-torch link the libblas.so.3 alternative,
which is the single-threaded reference BLAS wherever OpenBLAS is not installed: a peer left to
it runs several times slower than its user would see. scripts/benchmark.sh fetches the
package into build/bench-openblas/ without installing it; the peers load it through
LD_LIBRARY_PATH, and each report names the library the peer's interpreter mapped, read from
its /proc/self/maps rather than assumed.
"""
import os
import subprocess

# Where scripts/benchmark.sh unpacks libopenblas0-pthread, under the build directory.
FETCHED = os.path.join("bench-openblas", "usr", "lib", "x86_64-linux-gnu", "openblas-pthread")

MAPPED = """import os, sys
import {module}
{touch}
seen = []
for line in open("/proc/self/maps"):
    fields = line.split()
    if len(fields) >= 6 and "blas" in os.path.basename(fields[-1]):
        path = os.path.realpath(fields[-1])
        if path not in seen:
            seen.append(path)
print("\\n".join(seen))
"""

# What makes each module load its BLAS (torch and NumPy both load it at import; a product
# makes sure).
TOUCH = {"torch": "torch.ones(2, 2, dtype=torch.float64) @ torch.ones(2, 2, dtype=torch.float64)",
         "numpy": "numpy.ones((2, 2)) @ numpy.ones((2, 2))"}


def default_openblas(build):
    """The OpenBLAS scripts/benchmark.sh fetched for this build, or "" when it is not there."""
    path = os.path.join(build, FETCHED)
    return path if os.path.exists(os.path.join(path, "libblas.so.3")) else ""


def peer_env(openblas, threads=2):
    """The environment of a peer: its thread counts and, given a directory, that OpenBLAS first
    on the library path (ahead of whatever the libblas.so.3 alternative is)."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads))
    if openblas:
        env["LD_LIBRARY_PATH"] = os.pathsep.join(
            p for p in (os.path.abspath(openblas), os.environ.get("LD_LIBRARY_PATH", "")) if p)
    return env


def loaded_blas(env, module="torch"):
    """The BLAS libraries (real paths, in load order) that /usr/bin/python3 maps after
    importing module under env; [] if the module does not import."""
    code = MAPPED.format(module=module, touch=TOUCH.get(module, ""))
    result = subprocess.run(["/usr/bin/python3", "-c", code], env=env, capture_output=True,
                            text=True)
    if result.returncode != 0:
        return []
    return [line for line in result.stdout.splitlines() if line]


def is_openblas(paths):
    """Whether the mapped libraries include OpenBLAS."""
    return any("openblas" in p for p in paths)


def name_mapped(paths, root=None):
    """Which BLAS a peer mapped, OpenBLAS or the reference BLAS, with the library's path
    (relative to root when under it): a phrase for a report."""
    if not paths:
        return "no BLAS found mapped"
    path = next((p for p in paths if "openblas" in p), paths[0])
    shown = os.path.relpath(path, root) if root and path.startswith(root + os.sep) else path
    return (f"OpenBLAS (`{shown}`)" if is_openblas(paths)
            else f"the reference BLAS, single-threaded (`{shown}`)")


def describe(paths, root=None):
    """name_mapped() for a peer that should have OpenBLAS: the reference BLAS comes with what
    to do about it."""
    name = name_mapped(paths, root)
    if not paths or is_openblas(paths):
        return name
    return f"{name}: OpenBLAS was not found; scripts/benchmark.sh fetches it"


def describe_peer(env, root=None):
    """describe() of what a peer under env maps: PyTorch's BLAS, or NumPy's without PyTorch."""
    return describe(loaded_blas(env, "torch") or loaded_blas(env, "numpy"), root)
