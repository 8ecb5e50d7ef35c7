"""The compiled bindings (nadyn._core via nadyn.simulate, nadyn.sweep, nadyn.reduced,
nadyn.table, nadyn._core.closed_forms) against the command line they mirror: the same
files bit for bit, the same defaults, the same messages, and Ctrl-C."""

from __future__ import annotations

import inspect
import math
import os
import re
import signal
import subprocess
import threading
import time

import h5py
import numpy as np
import pytest
import xarray as xr

import nadyn

pytestmark = pytest.mark.skipif(not nadyn.has_core, reason="nadyn._core is not built")

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def cli_run(cli, *args, expect=0):
    result = subprocess.run([cli, *args], capture_output=True, text=True, timeout=600)
    assert result.returncode == expect, result.stderr
    return result


def datasets(path):
    """Every dataset of a trajectory's series (positions, magnitudes, observables): name -> array."""
    found = {}
    with h5py.File(path, "r", locking=False) as f:
        def visit(name, item):
            if isinstance(item, h5py.Dataset) and name.startswith(("observables/", "particles/")):
                found[name] = item[()]
        f.visititems(visit)
        status = f.attrs["status"]
    return found, status.decode() if isinstance(status, bytes) else status


# Python keywords and the same run's flags. 0.1 + 0.2 is 0.30000000000000004: a float's repr
# must reach the library digit for digit.
CASES = [
    ({"scheme": "pre-ln", "n": 16, "d": 4, "beta": 0.1 + 0.2, "T": 2.0, "seed": 7},
     ["--scheme", "pre-ln", "--n", "16", "--d", "4", "--beta", "0.30000000000000004", "--T", "2", "--seed", "7"]),
    ({"scheme": "mix-ln", "n": 12, "d": 3, "beta": 1.5, "T": 3, "integrator": "dopri5", "t_switch": 1 / 3,
      "causal": True, "init": "cap:0.5"},
     ["--scheme", "mix-ln", "--n", "12", "--d", "3", "--beta", "1.5", "--T", "3", "--integrator", "dopri5",
      "--t-switch", repr(1 / 3), "--causal", "--init", "cap:0.5"]),
    ({"scheme": "ngpt", "n": 10, "d": 5, "beta": 2, "T": 1, "dt": 0.05, "integrator": "layers",
      "weights": "random-per-layer", "alpha": 0.7, "every": 3, "swmr": False},
     ["--scheme", "ngpt", "--n", "10", "--d", "5", "--beta", "2", "--T", "1", "--dt", "0.05", "--integrator",
      "layers", "--weights", "random-per-layer", "--alpha", "0.7", "--every", "3", "--no-swmr"]),
    ({"scheme": "post-ln", "n": 8, "d": 3, "beta": 1.25, "beta_log_n": True, "T": 1,
      "init": "caps:2,0.1,1.5"},
     ["--scheme", "post-ln", "--n", "8", "--d", "3", "--beta", "1.25", "--beta-log-n", "--T", "1",
      "--init", "caps:2,0.1,1.5"]),
]


@pytest.mark.parametrize("keywords,flags", CASES, ids=["pre-ln", "mix-ln-dopri5", "ngpt-layers", "beta-log-n-caps"])
def test_simulate_writes_the_clis_file_bitwise(cli, tmp_path, keywords, flags):
    cli_file = tmp_path / "cli.h5"
    cli_run(cli, "simulate", *flags, "--out", str(cli_file), "--quiet")
    py_file = tmp_path / "python.h5"
    t = nadyn.simulate(**keywords, out=py_file)
    expected, expected_status = datasets(cli_file)
    got, status = datasets(py_file)
    assert status == expected_status == "complete"
    assert sorted(got) == sorted(expected)
    assert any(name.startswith("particles/tokens/position") for name in expected)
    for name, values in expected.items():
        assert got[name].dtype == values.dtype, name
        assert got[name].tobytes() == values.tobytes(), name
    # The Trajectory holds the file's frames.
    assert t.path == os.fspath(py_file)
    assert t.ts.tobytes() == expected["particles/tokens/magnitude/time"].tobytes()
    assert t.ys.tobytes() == expected["particles/tokens/position/value"].tobytes()
    assert t.r.tobytes() == expected["particles/tokens/magnitude/value"].tobytes()
    for name in nadyn._core.observable_names():
        # Same values (clusters is an integer dataset in the file, float64 in memory).
        np.testing.assert_array_equal(t.observables[name],
                                      expected[f"observables/{name}/value"].astype(np.float64),
                                      err_msg=name)
    # The run kept in memory is the same run.
    m = nadyn.simulate(**keywords)
    assert m.path is None and m.status == "complete"
    assert m.ts.tobytes() == t.ts.tobytes()
    assert m.steps.tobytes() == t.steps.tobytes()
    assert m.ys.tobytes() == t.ys.tobytes()
    assert m.r.tobytes() == t.r.tobytes()
    for name in t.observables:
        assert m.observables[name].tobytes() == t.observables[name].tobytes(), name
    for name in ("scheme", "n", "d", "beta", "T", "dt", "integrator", "seed", "t_switch", "every", "weights"):
        assert m.parameters[name] == t.parameters[name], name
    assert m.parameters["beta"] == float(keywords["beta"])
    assert m.theta0.tobytes() == t.theta0.tobytes()
    assert m.r_initial.tobytes() == t.r_initial.tobytes()


def test_arrays_share_memory_with_the_run_no_copy():
    t = nadyn.simulate(n=8, T=0.5)
    for array in (t.ts, t.ys, t.r, t.observables["mean_cos"]):
        assert not array.flags.owndata  # a view on the vector the library filled
        assert array.base is not None
    assert t.ys.shape == (len(t.ts), 8, 3) and t.r.shape == (len(t.ts), 8)
    np.testing.assert_allclose(np.linalg.norm(t.ys, axis=-1), 1.0, atol=1e-12)


def test_to_xarray_is_nadyn_open_of_the_file(tmp_path):
    path = tmp_path / "run.h5"
    t = nadyn.simulate(scheme="peri-ln", n=9, d=3, T=1.5, weights="random", out=path)
    mine, opened = t.to_xarray(), nadyn.open(path)
    for dim in ("time", "token", "dim"):
        assert mine.sizes[dim] == opened.sizes[dim]
    names = ["theta", "r", "theta0", "Q", "K", "V", *nadyn._core.observable_names()]
    xr.testing.assert_equal(mine[names], opened[names])
    np.testing.assert_array_equal(mine.r_initial.values, opened.r_initial.values.reshape(-1))
    for key in ("scheme", "n", "beta", "seed", "rhs_evaluations", "frames"):
        assert mine.attrs[key] == opened.attrs[key], key
    # The registry's descriptions (the file carries them too once it records /parameters/descriptions).
    assert mine.attrs["beta_description"] == next(r["description"] for r in nadyn.parameters() if r["name"] == "beta")
    if "beta_description" in opened.attrs:
        assert mine.attrs["beta_description"] == opened.attrs["beta_description"]


def _help_defaults(cli):
    """`nadyn simulate --help`: flag -> (type, default text), from lines like '--beta FLOAT=4'."""
    text = cli_run(cli, "simulate", "--help").stdout
    defaults = {}
    for line in text.splitlines():
        # The default ends the line when the help text wraps to the next one.
        m = re.match(r"\s+(--[A-Za-z0-9-]+)\s+(INT|FLOAT|TEXT)(?:=(\S+))?(?:\s|$)", line)
        if m:
            defaults[m.group(1)] = (m.group(2), m.group(3))
    return text, defaults


def test_every_keyword_default_is_the_clis(cli):
    text, defaults = _help_defaults(cli)
    signature = inspect.signature(nadyn.simulate)
    rows = nadyn.parameters()
    assert list(signature.parameters) == [row["name"] for row in rows] + ["out", "force", "progress"]
    checked = 0
    for row in rows:
        default = signature.parameters[row["name"]].default
        assert signature.parameters[row["name"]].kind is inspect.Parameter.KEYWORD_ONLY
        flag = row["flag"]
        if row["type"] == "switch":
            # A bare flag in --help; it sets switch_sets, so the default is the other value.
            assert re.search(rf"^\s+{re.escape(flag)}\s", text, re.M), flag
            assert default is (row["switch_sets"] == "0"), row["name"]
            continue
        kind, shown = defaults[flag]
        assert kind == {"integer": "INT", "number": "FLOAT", "name": "TEXT"}[row["type"]], flag
        if shown is None or shown == "":
            assert default is None, row["name"]  # resolved from T and dt (t_switch, every)
            continue
        if row["type"] == "integer":
            assert default == int(shown) and type(default) is int, flag
        elif row["type"] == "number":
            assert default == float(shown) and type(default) is float, flag
        else:
            assert default == shown, flag
        checked += 1
    assert checked >= 15
    assert signature.parameters["out"].default is None and signature.parameters["force"].default is False
    # Every row is described in the docstring.
    for row in rows:
        assert f"    {row['name']} (" in nadyn.simulate.__doc__


def test_default_simulate_prints_the_clis_number(cli, tmp_path):
    # The CLI's default run (the summary line prints mean_cos with %.12g) ...
    result = cli_run(cli, "simulate", "--out", str(tmp_path / "default.h5"), "--quiet")
    printed = float(re.search(r"mean_cos = (\S+),", result.stdout).group(1))
    with h5py.File(tmp_path / "default.h5", "r", locking=False) as f:
        full = f["observables/mean_cos/value"][-1]
    # ... and docs/python.md's one-liner under Debian's python3, with this checkout's package.
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    one_liner = subprocess.run(
        ["/usr/bin/python3", "-c", "import nadyn; print(nadyn.simulate().observables['mean_cos'][-1])"],
        capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert one_liner.returncode == 0, one_liner.stderr
    value = float(one_liner.stdout.strip())
    assert value == full  # every bit (numpy prints the shortest round-tripping repr)
    assert float(f"{value:.12g}") == printed
    assert list(tmp_path.iterdir()) == [tmp_path / "default.h5"]  # no file without out=


def test_unknown_keyword_is_a_type_error_listing_the_valid_ones():
    with pytest.raises(TypeError) as error:
        nadyn.simulate(temperature=3)
    message = str(error.value)
    assert "'temperature'" in message
    for name in [row["name"] for row in nadyn.parameters()] + ["out", "force"]:
        assert re.search(rf"\b{re.escape(name)}\b", message.split("valid keywords:")[1]), name
    with pytest.raises(TypeError):
        nadyn.simulate("pre-ln")  # keywords only
    with pytest.raises(TypeError, match="beta must be an int, float, str or bool"):
        nadyn.simulate(beta=[1, 2])


@pytest.mark.parametrize("keywords,flags", [
    ({"n": 0}, ["--n", "0"]),
    ({"n": 2.5}, ["--n", "2.5"]),
    ({"d": 1}, ["--d", "1"]),
    ({"beta": float("nan")}, ["--beta", "nan"]),
    ({"beta": "warm"}, ["--beta", "warm"]),
    ({"scheme": "layer-norm"}, ["--scheme", "layer-norm"]),
    ({"positions": "some"}, ["--positions", "some"]),
    ({"dt": -0.1}, ["--dt=-0.1"]),
    ({"init": "orthogonal", "n": 8, "d": 3}, ["--init", "orthogonal", "--n", "8", "--d", "3"]),
    ({"heads": 0}, ["--heads", "0"]),
    ({"seed": -1}, ["--seed=-1"]),
    ({"causal": "maybe"}, ["--causal"]),
])
def test_bad_value_is_a_value_error_with_the_clis_message(cli, tmp_path, keywords, flags):
    with pytest.raises(ValueError) as error:
        nadyn.simulate(**keywords, out=tmp_path / "never.h5")
    assert not (tmp_path / "never.h5").exists()
    if keywords.get("causal") == "maybe":  # the command line's switch takes no value
        assert str(error.value) == "--causal 'maybe': causal must be true or false (or 1, 0), got 'maybe'"
        return
    result = cli_run(cli, "simulate", *flags, "--out", str(tmp_path / "cli.h5"), "--quiet", expect=2)
    line = result.stderr.strip()
    assert line.count("\n") == 0 and line.startswith("nadyn: ")
    assert str(error.value) == line[len("nadyn: "):]


def test_existing_out_needs_force(tmp_path):
    path = tmp_path / "run.h5"
    nadyn.simulate(n=4, T=0.1, out=path)
    with pytest.raises(ValueError, match="already exists; pass --force"):
        nadyn.simulate(n=4, T=0.1, out=path)
    assert nadyn.simulate(n=4, T=0.2, out=path, force=True).ts[-1] == pytest.approx(0.2)


def test_a_full_disk_is_an_os_error_and_the_interpreter_exits_cleanly(tmp_path):
    # A file size limit (ulimit -f) that the header or the first frames meet: OSError (it
    # was a ValueError), and no segfault at exit in HDF5's close callback. In a child
    # interpreter with the limit set, for every limit from 16 to 400 KiB.
    import resource  # noqa: PLC0415
    import sys  # noqa: PLC0415

    code = ("import nadyn, sys\n"
            "try:\n"
            "    nadyn.simulate(n=64, d=16, weights='gaussian', T=2, out=sys.argv[1])\n"
            "    print('complete')\n"
            "except OSError as e:\n"
            "    print('OSError', e)\n")
    for kib in range(16, 401, 32):
        out = tmp_path / f"limit{kib}.h5"

        def limit(kib=kib):
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (kib << 10, kib << 10))

        result = subprocess.run([sys.executable, "-c", code, str(out)], capture_output=True,
                                text=True, timeout=120, preexec_fn=limit)
        assert result.returncode == 0, (kib, result.returncode, result.stderr[-2000:])
        assert result.stdout.startswith("OSError"), (kib, result.stdout)
        assert "no space" in result.stdout, (kib, result.stdout)
        if out.exists():
            ds = nadyn.open(out)
            assert ds.attrs["status"] == "failed"
            assert ds.sizes["time"] >= 1


def _interrupt_after(seconds):
    main = threading.main_thread().ident
    timer = threading.Timer(seconds, lambda: signal.pthread_kill(main, signal.SIGINT))
    timer.start()
    return timer


@pytest.mark.parametrize("to_file", [True, False], ids=["file", "memory"])
def test_sigint_raises_keyboard_interrupt_promptly_and_keeps_the_frames(tmp_path, to_file):
    path = tmp_path / "long.h5" if to_file else None
    start = time.monotonic()
    timer = _interrupt_after(0.5)
    try:
        with pytest.raises(KeyboardInterrupt) as error:
            # About a minute of work at full speed: it is running when the signal comes.
            nadyn.simulate(n=256, d=16, T=1e4, dt=0.01, every=50, out=path)
    finally:
        timer.cancel()
    elapsed = time.monotonic() - start
    assert elapsed < 5.0  # the signal came at 0.5 s; the run stops at its next step
    t = error.value.trajectory
    assert t.status == "interrupted"
    assert len(t) >= 1 and t.ts[-1] < 1e4
    if to_file:
        found, status = datasets(path)
        assert status == "interrupted"
        assert found["particles/tokens/magnitude/time"].tobytes() == t.ts.tobytes()
        with h5py.File(path, "r", locking=False) as f:
            assert f["parameters"].attrs["frames"] == len(t)


def test_numerical_fault_raises_after_the_file_records_failed(tmp_path):
    path = tmp_path / "nan.h5"
    with pytest.raises(nadyn.NumericalFault) as error:
        # pre-ln with r0 = 1e-300: the speed 1/r overflows inside the first RK4 stages.
        nadyn.simulate(scheme="pre-ln", r0=1e-300, n=8, d=3, T=1, dt=0.1, out=path)
    assert isinstance(error.value, RuntimeError)
    assert "non-finite" in str(error.value)
    _, status = datasets(path)
    assert status == "failed"
    t = error.value.trajectory
    assert t.status == "failed" and len(t) >= 1 and np.isfinite(t.ys).all()
    with pytest.raises(nadyn.NumericalFault):
        nadyn.simulate(scheme="pre-ln", r0=1e-300, n=8, d=3, T=1, dt=0.1)


EXPERIMENT = {
    "run": {"scheme": "pre-ln", "n": 8, "d": 3, "T": 1.0, "integrator": "euler", "dt": 0.1, "positions": "final"},
    "sweep": {"beta": {"linspace": [0.5, 2.0, 3]}, "seed": {"range": [1, 2]}},
}


def test_sweep_of_a_dict_is_a_dataset_over_its_axes():
    ds = nadyn.sweep(EXPERIMENT, jobs=2)
    assert ds.mean_cos.dims == ("beta", "seed", "time")
    assert ds.mean_cos.shape == (3, 2, 11)
    np.testing.assert_array_equal(ds.beta.values, [0.5, 1.25, 2.0])
    np.testing.assert_array_equal(ds.seed.values, [1, 2])
    assert (ds.status.values == 1).all()
    assert ds.positions.dims == ("beta", "seed", "token", "dim")
    # A sweep's run is the run nadyn.simulate makes with the same parameters, bitwise.
    t = nadyn.simulate(scheme="pre-ln", n=8, d=3, T=1.0, integrator="euler", dt=0.1, beta=1.25, seed=2)
    assert ds.mean_cos.sel(beta=1.25, seed=2).values.tobytes() == t.observables["mean_cos"].tobytes()
    assert ds.positions.sel(beta=1.25, seed=2).values.tobytes() == t.ys[-1].tobytes()


def test_sweep_writes_out_and_reads_a_toml_path_with_overrides(tmp_path):
    toml = tmp_path / "experiment.toml"
    toml.write_text(nadyn.bindings.experiment_toml(EXPERIMENT))
    out = tmp_path / "sweep.h5"
    ds = nadyn.sweep(toml, out=out, overrides={"sweep.seed.range": [3, 5], "run.n": 6})
    assert out.exists()
    assert ds.mean_cos.shape == (3, 3, 11)
    assert ds.positions.shape == (3, 3, 6, 3)
    with pytest.raises(ValueError, match="already exists"):
        nadyn.sweep(toml, out=out)
    with pytest.raises(ValueError, match="valid"):
        nadyn.sweep({"run": {"temperature": 2}})


def test_sweep_sigint_raises_keyboard_interrupt(tmp_path):
    big = {"run": {"n": 128, "d": 16, "T": 200.0, "positions": "none"}, "sweep": {"seed": {"range": [1, 8]}}}
    out = tmp_path / "sweep.h5"
    start = time.monotonic()
    timer = _interrupt_after(0.5)
    try:
        with pytest.raises(KeyboardInterrupt) as error:
            nadyn.sweep(big, out=out, jobs=1)
    finally:
        timer.cancel()
    assert time.monotonic() - start < 5.0
    ds = error.value.dataset
    assert ds.attrs["status"] == "interrupted"
    assert (ds.status.values != 1).any()


def test_resume_sweep_completes_an_interrupted_sweep_bitwise(tmp_path):
    # Eight runs, one at a time: the interrupt comes while some are still missing.
    longer = {"run": {"n": 64, "d": 8, "T": 40.0, "positions": "final"},
              "sweep": {"seed": {"range": [1, 8]}}}
    out = tmp_path / "cut.h5"
    timer = _interrupt_after(0.5)
    try:
        with pytest.raises(KeyboardInterrupt):
            nadyn.sweep(longer, out=out, jobs=1)
    finally:
        timer.cancel()
    ds = nadyn.resume_sweep(out)
    assert ds.attrs["status"] == "complete"
    assert (ds.status.values == 1).all()
    whole = nadyn.sweep(longer, out=tmp_path / "whole.h5")
    for name in ("mean_cos", "velocity", "positions", "magnitudes"):
        assert ds[name].values.tobytes() == whole[name].values.tobytes(), name
    with pytest.raises((ValueError, OSError), match="missing.h5"):
        nadyn.resume_sweep(tmp_path / "missing.h5")


def test_experiment_toml_writes_scalars_lists_and_inline_tables():
    text = nadyn.bindings.experiment_toml(
        {"run": {"scheme": "pre-ln", "beta": 0.1 + 0.2, "causal": True, "init": 'file:a "b".h5'},
         "sweep": {"beta": {"logspace": [-1, 1, 5]}, "scheme": ["pre-ln", "peri-ln"]}})
    assert text.splitlines() == [
        "[run]", 'scheme = "pre-ln"', "beta = 0.30000000000000004", "causal = true",
        'init = "file:a \\"b\\".h5"', "",
        "[sweep]", "beta = { logspace = [-1, 1, 5] }", 'scheme = ["pre-ln", "peri-ln"]']


SCHEMES = nadyn._core.scheme_names() if nadyn.has_core else []


def test_closed_forms_are_the_formulas_of_docs_model_section_3():
    from nadyn import closed_forms

    # The formulas written out here, apart from the library (docs/model.md §3.2), with
    # e^{-beta} so that beta = 700 stays finite.
    def expected(scheme, n, beta, r0, alpha, t_switch):
        eb = math.exp(-beta)
        linear = 2.0 * eb / (1.0 + (n - 1.0) * eb)
        root = 2.0 * eb / math.sqrt(1.0 + (n - 1.0) * eb * eb)
        if scheme in ("post-ln", "sqrt-scaling"):
            return linear
        if scheme == "mix-ln":
            return linear if t_switch > 0.0 else linear / r0
        if scheme == "pre-ln":
            return linear / r0
        if scheme == "peri-ln":
            return root / r0
        if scheme == "no-norm":
            e_tokens = math.exp(-beta * r0 * r0)
            return 2.0 * e_tokens / (1.0 + (n - 1.0) * e_tokens)
        return alpha * root

    for scheme in SCHEMES:
        for n in (2, 3, 16, 256, 10_000):
            for beta in (0.0, 0.3, 1.0, 5.0, 30.0, 700.0):
                for r0, alpha, t_switch in ((1.0, 1.0, 1.0), (2.5, 0.7, 0.0)):
                    value = closed_forms.initial_velocity(scheme, n, beta, r0=r0, alpha=alpha,
                                                          t_switch=t_switch)
                    assert value == nadyn._core.closed_forms.initial_velocity(
                        scheme, n, beta, r0=r0, alpha=alpha, t_switch=t_switch)
                    assert value == pytest.approx(expected(scheme, n, beta, r0, alpha, t_switch),
                                                  rel=1e-14, abs=0), (scheme, n, beta, r0)
    # The formulas at beta = 0: 2/n (post-ln), 2/(r0 n) (pre-ln), 2/(r0 sqrt n) (peri-ln).
    assert nadyn._core.closed_forms.initial_velocity("post-ln", 8, 0.0) == pytest.approx(0.25, rel=1e-15)
    assert nadyn._core.closed_forms.initial_velocity("pre-ln", 8, 0.0, r0=2.0) == pytest.approx(0.125, rel=1e-15)
    assert nadyn._core.closed_forms.initial_velocity("peri-ln", 4, 0.0, r0=2.0) == pytest.approx(0.5, rel=1e-15)
    with pytest.raises(ValueError, match="valid"):
        nadyn._core.closed_forms.initial_velocity("layer-norm", 8, 1.0)


def test_reduced_equals_the_clis_scalar_ode(cli):
    result = cli_run(cli, "reduced", "--scheme", "mix-ln", "--n", "64", "--beta", "3", "--T", "12",
                     "--samples", "40", "--spacing", "log", "--csv")
    rows = np.array([[float(v) for v in line.split(",")] for line in result.stdout.strip().splitlines()[1:]])
    ode = nadyn.reduced("mix-ln", 64, 3.0, T=12, samples=40, spacing="log")
    for column, name in enumerate(("t", "gamma", "gap", "velocity", "r")):
        assert ode[name].tobytes() == rows[:, column].tobytes(), name
    # gamma'(0) of the ODE is the closed form.
    assert ode["velocity"][0] == pytest.approx(
        nadyn._core.closed_forms.initial_velocity("mix-ln", 64, 3.0, t_switch=3.0), rel=1e-12)
    with pytest.raises(ValueError, match="n must be a finite number > 1"):
        nadyn.reduced(n=1)


def test_initial_table_rows(cli, tmp_path):
    rows = nadyn.table("initial", n=16, beta=2.0)
    assert [row["scheme"] for row in rows] == SCHEMES
    csv = cli_run(cli, "table", "initial", "--set", "run.n=16", "--set", "run.d=16", "--set", "sweep.beta=[2]",
                  "--out-dir", str(tmp_path), "--format", "csv").stdout.splitlines()
    assert csv[0] == ",".join(rows[0])  # the same columns, in the same order
    for row, line in zip(rows, csv[1:], strict=True):
        # The CLI's CSV prints 13 significant digits (4 for the errors).
        assert line == ",".join([row["scheme"]] + [f"{row[key]:.12e}" for key in ("closed_form", "reduced", "particles")]
                                + [f"{row[key]:.3e}" for key in ("rel_error_reduced", "rel_error_particles")])
        assert row["closed_form"] == pytest.approx(
            nadyn._core.closed_forms.initial_velocity(row["scheme"], 16, 2.0), rel=1e-15)
        assert row["rel_error_reduced"] < 1e-10 and row["rel_error_particles"] < 1e-10
    sweep = nadyn.table("initial-beta", n=8, betas=[0.0, 1.0])
    assert len(sweep) == 2 * len(SCHEMES)
    for point in sweep:
        closed = nadyn._core.closed_forms.initial_velocity(point["scheme"], 8, point["beta"])
        assert point["closed_form"] == pytest.approx(closed, rel=1e-15)
        assert point["particles"] == pytest.approx(closed, rel=1e-10)
    with pytest.raises(ValueError, match="valid tables"):
        nadyn.table("final")
    with pytest.raises(TypeError, match="valid keywords: alpha, beta, n, r0"):
        nadyn.table("initial", temperature=1)


def test_random_table_rows(cli, tmp_path):
    rows = nadyn.table("random", n=12, d=8, layers=20, seeds=[1, 2])
    assert [row["scheme"] for row in rows] == SCHEMES[:6]
    # The same study through the command line: beta = sqrt(d), 20 layers of h = 1.
    csv = cli_run(cli, "table", "random", "--set", "run.n=12", "--set", "run.d=8",
                  "--set", f"run.beta={math.sqrt(8)!r}", "--set", "run.T=20",
                  "--set", "sweep.seed=[1,2]", "--out-dir", str(tmp_path), "--format", "csv",
                  "--no-figures").stdout.splitlines()
    assert csv[0] == ",".join(rows[0])  # the same columns, in the same order
    for row, line in zip(rows, csv[1:], strict=True):
        fields = line.split(",")
        assert fields[0] == row["scheme"]
        assert float(fields[1]) == pytest.approx(row["gain_layer1"], rel=1e-5)
        assert fields[-1].strip('"') == row["verdict"]
    with pytest.raises(TypeError, match="unknown keyword 'quick'"):
        nadyn.table("random", quick=True)


def test_positions_none_and_threads():
    t = nadyn.simulate(n=6, T=0.5, positions="none", threads=1)
    assert t.ys is None and t.r.shape == (len(t), 6)
    assert t.parameters["threads"] == 1  # the run's own thread count, set where it runs
    assert "theta" not in t.to_xarray()
    full = nadyn.simulate(n=6, T=0.5)
    assert full.r.tobytes() == t.r.tobytes()  # results do not depend on the thread count


def test_import_works_without_the_compiled_module(tmp_path):
    code = ("import sys; sys.modules['nadyn._core'] = None\n"
            "import nadyn\n"
            "assert not nadyn.has_core and not hasattr(nadyn, 'simulate')\n"
            "try:\n"
            "    nadyn.closed_forms.initial_velocity('post-ln', 8, 0.0)\n"
            "except RuntimeError as e:\n"
            "    print(e)\n")
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    result = subprocess.run(["/usr/bin/python3", "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    # The formulas exist once, in the library: without it they say what is missing.
    assert "needs the compiled module nadyn._core" in result.stdout


def test_sweep_with_a_missing_input_file_raises_and_writes_nothing(tmp_path):
    out = tmp_path / "sweep.h5"
    experiment = {"run": {"n": 4, "d": 3, "T": 0.2},
                  "sweep": {"init": ["uniform", f"file:{tmp_path / 'absent.h5'}"]}}
    with pytest.raises(ValueError, match="absent.h5"):
        nadyn.sweep(experiment, out=out)
    assert not out.exists()


def test_sweep_refuses_a_negative_jobs(tmp_path):
    out = tmp_path / "sweep.h5"
    with pytest.raises(ValueError, match="jobs must be between 0"):
        nadyn.sweep(EXPERIMENT, out=out, jobs=-1)
    assert not out.exists()


def test_optional_observables_in_memory_and_from_a_file(tmp_path):
    # --observe's observables come back by name, in memory as from a file, bit for bit.
    keywords = dict(scheme="post-ln", n=12, d=3, beta=3.0, T=2, observe="angle,log_energy")
    memory = nadyn.simulate(**keywords)
    stored = nadyn.simulate(**keywords, out=tmp_path / "e.h5")
    for name in ("angle", "log_energy"):
        a, b = memory.observables[name], stored.observables[name]
        assert a.shape == (len(memory),)
        assert a.tobytes() == b.tobytes(), name
    # log_energy = (1/beta) log of the mean of exp(beta <theta_i, theta_j>) (identity weights).
    logits = np.einsum("fia,fja->fij", memory.ys, memory.ys).reshape(len(memory), -1)
    expected = np.log(np.exp(3.0 * logits).mean(axis=1)) / 3.0
    np.testing.assert_allclose(memory.observables["log_energy"], expected, rtol=1e-12)
    assert "log_energy" not in nadyn.simulate(n=4, d=3, T=0.1).observables
