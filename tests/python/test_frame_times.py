"""--frame-times through Python: the keyword takes a list, the frames sit at exactly the
chosen times (plus 0 and T), the file equals the command line's, and a sweep's time axis is
the chosen times."""

from __future__ import annotations

import os
import subprocess

import h5py
import numpy as np
import pytest

import nadyn

pytestmark = pytest.mark.skipif(not nadyn.has_core, reason="nadyn._core is not built")

BASE = dict(scheme="pre-ln", n=12, d=4, beta=2.0, dt=0.05, seed=3)


def test_keyword_list_gives_frames_at_the_chosen_times(tmp_path):
    times = [2.5, 0.5, 1.0, 1.0, 0.123]  # unsorted, a repeat, one off the dt grid
    t = nadyn.simulate(T=3.0, frame_times=times, out=tmp_path / "py.h5", **BASE)
    assert t.ts.tolist() == [0.0, 0.123, 0.5, 1.0, 2.5, 3.0]
    # Steps: grid index + the off-grid times passed (0.123 lies after grid point 2).
    assert t.steps.tolist() == [0, 3, 11, 21, 51, 61]
    assert t.parameters["frame_times"] == "0.123,0.5,1,2.5"
    # The frame at 0.123 is the state of a run whose horizon is 0.123 (the same steps).
    short = nadyn.simulate(T=0.123, **BASE)
    assert np.array_equal(short.ys[-1], t.ys[1])
    assert np.array_equal(short.r[-1], t.r[1])
    # The command line writes the same file.
    cli = os.environ.get("NADYN_CLI")
    if cli:
        out = tmp_path / "cli.h5"
        args = [cli, "simulate", "--quiet", "--T", "3", "--frame-times", "2.5,0.5,1,1,0.123",
                "--out", str(out)]
        for key, value in BASE.items():
            args += ["--" + key.replace("_", "-"), str(value)]
        subprocess.run(args, check=True, capture_output=True, timeout=120)
        with h5py.File(out, "r") as f:
            assert np.array_equal(f["particles/tokens/position/value"][()], t.ys)
            assert np.array_equal(f["particles/tokens/position/time"][()], t.ts)


def test_bad_frame_times_raise_value_error():
    with pytest.raises(ValueError, match="frame-times must lie in"):
        nadyn.simulate(T=1.0, frame_times=[0.5, 2.0], **BASE)
    with pytest.raises(ValueError, match="not a whole number of layers"):
        nadyn.simulate(T=1.0, frame_times=[0.52], integrator="layers", **BASE)


def test_sweep_time_axis_is_the_chosen_times():
    ds = nadyn.sweep({"run": dict(BASE, T=5.0, frame_times="linspace:0,5,11"),
                      "sweep": {"beta": [1.0, 2.0]}})
    # linspace as the sweep axes compute it: first + (i / (count - 1)) * (last - first).
    expected = np.array([(i / 10) * 5.0 for i in range(10)] + [5.0])
    assert np.array_equal(ds["time"].values, expected)
    assert np.allclose(expected, np.linspace(0, 5, 11), rtol=0, atol=1e-15)
    # frame_times as a TOML list in [run] (here from a Python list) is the same experiment.
    listed = nadyn.sweep({"run": dict(BASE, T=5.0, frame_times=[0.5, 2.25]), "sweep": {"beta": [1.0]}})
    assert listed["time"].values.tolist() == [0.0, 0.5, 2.25, 5.0]
    one = nadyn.simulate(T=5.0, frame_times="linspace:0,5,11", **dict(BASE, beta=2.0))
    assert np.array_equal(ds["mean_cos"].sel(beta=2.0).values, one.observables["mean_cos"])


def _cli_flags(**changes):
    values = dict(BASE, **changes)
    args = []
    for key, value in values.items():
        args += ["--" + key.replace("_", "-"), str(value)]
    return args


def _positions(path):
    with h5py.File(path, "r", locking=False) as f:
        group = f["particles/tokens/position"]
        return group["time"][()], group["step"][()], group["value"][()]


@pytest.mark.skipif(not os.environ.get("NADYN_CLI"), reason="needs the command line")
def test_cli_resume_with_frame_times_is_bitwise(tmp_path):
    import signal
    import time

    cli = os.environ["NADYN_CLI"]
    # Off-grid chosen times (dt = 0.005); about 2 s of run, so SIGINT lands mid-run.
    times = ",".join(f"{0.0137 + 0.05 * k:.4f}" for k in range(300))
    run = _cli_flags(n=192, dt=0.005, T=16.0, frame_times=times)
    whole, part = tmp_path / "whole.h5", tmp_path / "part.h5"
    subprocess.run([cli, "simulate", *run, "--out", str(whole), "--quiet"], check=True,
                   capture_output=True, timeout=300)
    process = subprocess.Popen([cli, "simulate", *run, "--out", str(part), "--quiet"],
                               stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if nadyn.frame_count(part) >= 5:
                break
        except (OSError, ValueError):
            pass
        time.sleep(0.01)
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=60) == 130, "the run ended before SIGINT: make it longer"
    subprocess.run([cli, "simulate", "--resume", str(part), "--quiet"], check=True,
                   capture_output=True, timeout=300)
    for a, b in zip(_positions(whole), _positions(part)):
        assert a.tobytes() == b.tobytes()

    # A complete run extended to a longer T passes through its old T only if that is one
    # of its frame times: then it equals the longer run.
    short = tmp_path / "short.h5"
    subprocess.run([cli, "simulate", *_cli_flags(dt=0.01, T=1.03, frame_times="0.5,1.03"),
                    "--out", str(short), "--quiet"], check=True, capture_output=True)
    longer = tmp_path / "long.h5"
    subprocess.run([cli, "simulate", *_cli_flags(dt=0.01, T=2.0, frame_times="0.5,1.03"),
                    "--out", str(longer), "--quiet"], check=True, capture_output=True)
    subprocess.run([cli, "simulate", "--resume", str(short), "--T", "2", "--quiet"], check=True,
                   capture_output=True)
    for a, b in zip(_positions(longer), _positions(short)):
        assert a.tobytes() == b.tobytes()
    refused = tmp_path / "refused.h5"
    subprocess.run([cli, "simulate", *_cli_flags(dt=0.01, T=1.03, frame_times="0.5"),
                    "--out", str(refused), "--quiet"], check=True, capture_output=True)
    result = subprocess.run([cli, "simulate", "--resume", str(refused), "--T", "2", "--quiet"],
                            capture_output=True, text=True)
    assert result.returncode == 2
    assert "is not one of its frame times" in result.stderr
    assert result.stderr.count("\n") == 1
