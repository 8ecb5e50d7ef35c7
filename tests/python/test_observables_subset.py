"""Only the observables asked for (`--observables NAME,...`, issue 25): a run records exactly
those (and step_size, which --resume needs), each bitwise the value the full run records, with
the same trajectory; what depends on `clusters` (the cluster history, /plateaus) goes with it;
sweep files, `nadyn inspect`, `nadyn.open`, the Python keyword and --resume with a reduced set;
a bad name is one line and exit status 2."""
from __future__ import annotations

import subprocess

import h5py
import numpy as np
import pytest

import nadyn

# 8 heads of Gaussian weights, as a peer's ensemble; rk4 so that step_error is estimated.
def flags(T="2"):
    return ["--scheme", "pre-ln", "--n", "24", "--d", "4", "--beta", "2", "--heads", "8",
            "--weights", "gaussian", "--T", T, "--dt", "0.05", "--every", "2", "--seed", "3",
            "--positions", "all"]


FLAGS = flags()

STANDARD = ["mean_cos", "gap", "velocity", "variance", "displacement", "r_mean", "r_min", "r_max",
            "min_cos", "clusters", "norm_error", "step_size", "step_error", "argmax_flips",
            "attention_entropy"]


def groups(path):
    with h5py.File(path, "r") as f:
        return list(f["observables"].keys()), "cluster_history" in f, "plateaus" in f


def series(path, name):
    with h5py.File(path, "r") as f:
        return f[f"observables/{name}/value"][()]


def positions(path):
    with h5py.File(path, "r") as f:
        return f["particles/tokens/position/value"][()], f["particles/tokens/magnitude/value"][()]


@pytest.mark.parametrize("chosen, extra", [
    # mean_cos alone: the O(n d) moments; no Gram pass, no attention pass, no step-doubling.
    (["mean_cos"], ["--observe", "none"]),
    # The Gram pass without the attention pass; clusters brings its history.
    (["min_cos", "clusters"], ["--observe", "none"]),
    # The attention pass and the step-error estimate alone.
    (["attention_entropy", "argmax_flips", "step_error"], ["--observe", "none"]),
    # A peer's metric alone: the Gram pass for pair_density only.
    ([], ["--observe", "pair_density,modes"]),
    # No moment with the layers integrator: its frames evaluate the attention alone, not the
    # velocity (nothing reads it), and skip the moments.
    (["min_cos"], ["--observe", "pair_density", "--integrator", "layers", "--precision", "float"]),
])
def test_a_reduced_set_records_exactly_it_bitwise(simulate, chosen, extra):
    full = simulate("full.h5", *FLAGS, *extra)
    part = simulate("part.h5", *FLAGS, *extra, "--observables", ",".join(chosen) or "none")
    optional = [name for name in extra[1].split(",") if name != "none"]
    names, history, plateaus = groups(part)
    # The table's order, step_size always, then the optional ones.
    expected = [name for name in STANDARD if name in chosen or name == "step_size"]
    assert sorted(names) == sorted(expected + optional)
    assert history == ("clusters" in chosen) and plateaus == ("clusters" in chosen)
    with h5py.File(part, "r") as f:
        # The record: the names in the table's order (step_size only when named).
        assert f["parameters"].attrs["observables"] == \
            (",".join(name for name in STANDARD if name in chosen) or "none")
        assert list(f["observables"].keys()) == expected + optional  # creation order
    for name in expected + optional:
        a, b = series(full, name), series(part, name)
        assert a.shape == b.shape and a.tobytes() == b.tobytes(), name
    # Computing less changes nothing of the trajectory.
    for a, b in zip(positions(full), positions(part)):
        assert a.tobytes() == b.tobytes()
    # nadyn.open and nadyn inspect read it.
    ds = nadyn.open(part)
    assert set(expected + optional) <= set(ds.data_vars)
    assert not set(STANDARD) - set(expected) & set(ds.data_vars)


def test_the_default_is_every_standard_observable(simulate):
    path = simulate("default.h5", *FLAGS)
    names, history, plateaus = groups(path)
    assert sorted(names) == sorted(STANDARD) and history and plateaus
    with h5py.File(path, "r") as f:
        assert f["parameters"].attrs["observables"] == "all"


def test_summary_and_inspect_without_clusters(cli, tmp_path):
    out = tmp_path / "few.h5"
    result = subprocess.run([cli, "simulate", *FLAGS, "--observables", "gap", "--out", str(out)],
                            capture_output=True, text=True, check=True)
    summary = [line for line in result.stdout.splitlines() if line.startswith("complete:")]
    assert len(summary) == 1 and "mean_cos = " in summary[0] and "clusters" not in summary[0]
    # mean_cos is computed for the summary line without being recorded: 1 - gap's last value.
    mean_cos = float(summary[0].split("mean_cos = ")[1].split(",")[0])
    assert mean_cos == pytest.approx(1 - series(out, "gap")[-1], rel=1e-11)
    table = subprocess.run([cli, "inspect", str(out)], capture_output=True, text=True, check=True)
    assert "gap" in table.stdout and "clusters" not in table.stdout.split("parameters")[0]
    plateaus = subprocess.run([cli, "inspect", str(out), "--plateaus"], capture_output=True,
                              text=True)
    assert plateaus.returncode == 2 and "no clusters series" in plateaus.stderr


def test_summary_mean_cos_without_any_moment_recorded(cli, tmp_path):
    # No moment recorded: the frames skip them, and the summary line's mean_cos is the last
    # frame's, from its directions after the run.
    out = tmp_path / "lean.h5"
    result = subprocess.run([cli, "simulate", *FLAGS, "--observables", "min_cos", "--out",
                             str(out)], capture_output=True, text=True, check=True)
    assert groups(out)[0] == ["min_cos", "step_size"]
    summary = [line for line in result.stdout.splitlines() if line.startswith("complete:")]
    mean_cos = float(summary[0].split("mean_cos = ")[1].split(",")[0])
    last = positions(out)[0][-1]
    s = last.sum(axis=0)
    n = last.shape[0]
    assert mean_cos == pytest.approx((s @ s - n) / (n * (n - 1)), rel=1e-11)


def test_a_bad_name_is_one_line_and_status_2(cli, tmp_path):
    out = tmp_path / "bad.h5"
    result = subprocess.run([cli, "simulate", "--observables", "mean_cos,pair_frequency",
                             "--out", str(out)], capture_output=True, text=True)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "'pair_frequency'" in result.stderr and "valid choices: all, none, mean_cos" in result.stderr
    assert "attention_entropy" in result.stderr
    assert not out.exists()
    # An optional observable under observables is told where it belongs.
    optional = subprocess.run([cli, "simulate", "--observables", "mean_cos,pair_density",
                               "--out", str(out)], capture_output=True, text=True)
    assert optional.returncode == 2
    assert "'pair_density' is an optional observable: ask for it under observe" in optional.stderr
    assert not out.exists()
    with pytest.raises(ValueError, match="unknown observable 'nope'"):
        nadyn.simulate(n=4, d=2, T=0.1, observables="nope")


def test_python_keyword(tmp_path):
    full = nadyn.simulate(n=16, d=3, T=1.0, dt=0.1, seed=2, heads=2, weights="gaussian")
    part = nadyn.simulate(n=16, d=3, T=1.0, dt=0.1, seed=2, heads=2, weights="gaussian",
                          observables=["velocity", "min_cos"])
    assert sorted(part.observables) == ["min_cos", "step_size", "velocity"]
    assert sorted(full.observables) == sorted(STANDARD)
    for name in part.observables:
        assert part.observables[name].tobytes() == full.observables[name].tobytes()
    assert part.parameters["observables"] == "velocity,min_cos"
    # Written to a file and read back, the same.
    out = tmp_path / "kw.h5"
    written = nadyn.simulate(n=16, d=3, T=1.0, dt=0.1, seed=2, heads=2, weights="gaussian",
                             observables="velocity,min_cos", out=out)
    assert sorted(written.observables) == ["min_cos", "step_size", "velocity"]
    assert written.observables["velocity"].tobytes() == full.observables["velocity"].tobytes()


@pytest.mark.parametrize("integrator", ["rk4", "dopri5"])
def test_resume_of_a_reduced_run_is_bitwise(cli, simulate, integrator):
    reduced = ["--integrator", integrator, "--observables", "mean_cos,clusters", "--observe",
               "pair_change"]
    whole = simulate("whole.h5", *flags("4"), *reduced)
    short = simulate("short.h5", *flags("2"), *reduced)
    subprocess.run([cli, "simulate", "--resume", str(short), "--T", "4", "--quiet"], check=True,
                   capture_output=True)
    assert groups(short) == groups(whole)
    for name in ["mean_cos", "clusters", "step_size", "pair_change"]:
        assert series(short, name).tobytes() == series(whole, name).tobytes(), name
    for a, b in zip(positions(short), positions(whole)):
        assert a.tobytes() == b.tobytes()
    with h5py.File(short, "r") as f, h5py.File(whole, "r") as g:
        assert f["cluster_history/merges/value"][()].tobytes() == \
            g["cluster_history/merges/value"][()].tobytes()


SWEEP = """[run]
scheme = "pre-ln"
n = 16
d = 3
T = 1
dt = 0.1
heads = 2
weights = "gaussian"
integrator = "euler"
{extra}
[sweep]
beta = [1, 4]
seed = [1, 2]
"""


def test_sweep_records_only_the_set_asked_for(cli, tmp_path):
    (tmp_path / "full.toml").write_text(SWEEP.format(extra=""))
    (tmp_path / "part.toml").write_text(
        SWEEP.format(extra='observables = "min_cos,attention_entropy"\nobserve = "pair_density"'))
    for name in ("full", "part"):
        subprocess.run([cli, "sweep", f"{name}.toml", "--out", f"{name}.h5", "--quiet"],
                       cwd=tmp_path, check=True, capture_output=True)
    with h5py.File(tmp_path / "part.h5", "r") as part, h5py.File(tmp_path / "full.h5", "r") as full:
        for name in ["min_cos", "attention_entropy", "step_size"]:
            assert part[name][()].tobytes() == full[name][()].tobytes(), name
        for name in set(STANDARD) - {"min_cos", "attention_entropy", "step_size"}:
            assert name not in part, name
        assert "pair_density" in part and np.isfinite(part["pair_density"][()]).all()
    ds = nadyn.open(tmp_path / "part.h5")
    assert "min_cos" in ds and "mean_cos" not in ds
    described = subprocess.run([cli, "inspect", "part.h5"], cwd=tmp_path, capture_output=True,
                               text=True, check=True).stdout
    assert "observables: min_cos step_size attention_entropy" in described
    # --resume of a reduced file trusts the runs it holds (checksums and a finite first
    # value of a series every run records): nothing is run again.
    resumed = subprocess.run([cli, "sweep", "--resume", "part.h5"], cwd=tmp_path,
                             capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert "did not match" not in resumed.stderr and "4 already done" in resumed.stdout


def test_without_step_error_no_estimate_is_made(cli, tmp_path):
    # Euler at dt = 0.1 and beta = 4: the step-doubling estimate is above its bound, so a run
    # that records step_error warns; one that does not makes no estimate (three steps every
    # 20 saved), hence no warning, and the same trajectory.
    base = [cli, "simulate", "--scheme", "pre-ln", "--n", "32", "--d", "8", "--beta", "4",
            "--integrator", "euler", "--dt", "0.1", "--T", "3", "--seed", "2"]
    full = subprocess.run([*base, "--out", str(tmp_path / "a.h5"), "--quiet"],
                          capture_output=True, text=True, check=True)
    part = subprocess.run([*base, "--observables", "mean_cos,clusters", "--out",
                           str(tmp_path / "b.h5"), "--quiet"], capture_output=True, text=True,
                          check=True)
    assert "estimated local error" in full.stderr
    assert "estimated local error" not in part.stderr
    assert np.isfinite(series(tmp_path / "a.h5", "step_error")[0])
    for a, b in zip(positions(tmp_path / "a.h5"), positions(tmp_path / "b.h5")):
        assert a.tobytes() == b.tobytes()
