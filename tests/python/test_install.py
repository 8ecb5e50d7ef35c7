"""The two documented ways of installing the package work offline: `pip install
--no-build-isolation --no-index ./python` into a venv that sees Debian's packages, and the
.pth file that scripts/setup.sh writes."""

from __future__ import annotations

import os
import shutil
import subprocess

from conftest import REPO

CHECK = (
    "import sys, nadyn, nadyn.plot; "
    "ds = nadyn.open(sys.argv[1]); "
    "print(nadyn.__file__); print(ds.sizes['time'], ds.attrs['status'])"
)


def clean_env():
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["MPLBACKEND"] = "Agg"
    return env


def test_pip_install_offline_into_a_venv(simulate, tmp_path):
    run = simulate("run.h5", "--n", "4", "--T", "0.1")
    # A copy, so that the build leaves nothing in the source tree.
    source = tmp_path / "source"
    shutil.copytree(REPO / "python", source, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    venv = tmp_path / "venv"
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", str(venv)], check=True)
    pip = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "--no-build-isolation", "--no-index", "--no-cache-dir", str(source)],
        capture_output=True, text=True, env=clean_env(), timeout=300,
    )
    assert pip.returncode == 0, pip.stdout + pip.stderr
    result = subprocess.run([str(venv / "bin" / "python"), "-c", CHECK, str(run)], capture_output=True,
                            text=True, env=clean_env(), cwd=tmp_path, check=True)
    location, summary = result.stdout.splitlines()
    assert location.startswith(str(venv)), location
    assert summary == "11 complete"


def test_setup_pth_step(simulate, tmp_path):
    # The step of scripts/setup.sh, run with a site directory of our own: the .pth file it
    # writes names python/ and makes the package importable by a python that reads it.
    run = simulate("run.h5", "--n", "4", "--T", "0.1")
    script = (REPO / "scripts" / "setup.sh").read_text()
    step = script[script.index("# `import nadyn` for Debian's"):]
    site = tmp_path / "site"
    for query in ("$(/usr/bin/python3 -c 'import site; print(site.getsitepackages()[0])')",
                  "$(/usr/bin/python3 -m site --user-site)"):  # without root or sudo
        assert query in step
        step = step.replace(query, str(site))
    subprocess.run(["bash", "-euo", "pipefail", "-c", f"root={REPO}\n{step}"], check=True, env=clean_env())
    assert (site / "nadyn.pth").read_text().strip() == str(REPO / "python")
    # What our site directory adds goes first: another checkout's nadyn.pth in the system's
    # site directory (a second clone on the same machine) must not shadow this one.
    code = (f"import site, sys; before = list(sys.path); site.addsitedir({str(site)!r}); "
            "sys.path[:0] = [p for p in sys.path if p not in before]; " + CHECK)
    result = subprocess.run(["/usr/bin/python3", "-c", code, str(run)], capture_output=True, text=True,
                            env=clean_env(), cwd=tmp_path, check=True)
    assert result.stdout.splitlines()[0] == str(REPO / "python" / "nadyn" / "__init__.py")
