"""Studies as files (python/nadyn/study.py, studies/, `nadyn table NAME`).

The study's table is checked against an independent computation: each run of the sweep
repeated by `nadyn simulate` on its own, and the crossing time found there with numpy.
A study written in the test's own folder runs through `nadyn table` with no C++ change.
"""
from __future__ import annotations

import importlib.util
import pathlib
import subprocess
import textwrap

import h5py
import numpy as np
import pandas as pd
import pytest

from conftest import REPO

import nadyn
import nadyn.study as study

CLUSTERING = REPO / "studies" / "clustering_time"
SMALL = ["sweep.beta=[0.5,2]", "sweep.seed.range=[1,2]", "run.T=60"]


def crossing(times, values, threshold):
    """First time values >= threshold, linear between frames (written apart from reduce.py)."""
    for i in range(len(values)):
        if values[i] >= threshold:
            if i == 0:
                return times[0]
            return np.interp(threshold, [values[i - 1], values[i]], [times[i - 1], times[i]])
    return np.nan


def test_clustering_time_matches_single_runs(cli, tmp_path):
    result = study.run(CLUSTERING, tmp_path / "out", SMALL, figures=True, nadyn=cli)
    table = result.table
    assert list(table["beta"]) == [0.5, 2.0]
    assert result.markdown.read_text().startswith("# Clustering time against beta")
    assert result.figure is not None and result.figure.stat().st_size > 0
    for _, row in table.iterrows():
        for scheme in ("post-ln", "pre-ln"):
            times = []
            for seed in (1, 2):
                out = tmp_path / f"{scheme}-{row['beta']}-{seed}.h5"
                subprocess.run([cli, "simulate", "--scheme", scheme, "--n", "32", "--d", "8",
                                "--T", "60", "--dt", "0.1", "--every", "2",
                                "--beta", str(row["beta"]), "--seed", str(seed),
                                "--positions", "none", "--out", str(out), "--quiet"],
                               check=True, capture_output=True)
                with h5py.File(out, "r") as f:
                    t = f["observables/mean_cos/time"][()]
                    v = f["observables/mean_cos/value"][()]
                times.append(crossing(t, v, 0.99))
            assert np.all(np.isfinite(times)), (scheme, row["beta"])
            # The Kaplan-Meier median of two observed times: S = 1/2 between them, so the
            # median is their midpoint.
            assert row[f"t_cluster {scheme}"] == pytest.approx(np.mean(times), rel=1e-12)
            assert row[f"reached {scheme}"] == "2/2"
    # The model's claim the study checks: pre-ln is slower at every beta.
    assert (table["ratio"] > 1).all()
    csv = pd.read_csv(result.csv)
    assert csv["t_cluster pre-ln"].tolist() == pytest.approx(table["t_cluster pre-ln"].tolist())


def _clustering_reduce():
    spec = importlib.util.spec_from_file_location("clustering_reduce", CLUSTERING / "reduce.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_clustering_time_counts_censored_seeds_and_never_averages_them():
    # Four seeds of pre-ln: mean_cos jumps from 0.5 to 1 at t = 3 and t = 5 for two (crossing
    # 0.99 at 2.99 and 4.99, between frames 0.5 apart), never by T = 10 for two. The mean over
    # the two that reach it (3.99) is biased low; the Kaplan-Meier estimate is S = 3/4 after
    # 2.99 and 1/2 after 4.99, so the median is 4.99, its interval reaching beyond T.
    import xarray as xr

    times = np.arange(0.0, 10.5, 0.5)
    series = np.full((1, 2, 4, times.size), 0.5)
    series[0, 0, :, times >= 1.0] = 1.0              # post-ln: every seed at t = 1
    series[0, 1, 0, times >= 3.0] = 1.0
    series[0, 1, 1, times >= 5.0] = 1.0
    data = xr.Dataset({"mean_cos": (("beta", "scheme", "seed", "time"), series)},
                      coords={"beta": [3.0], "scheme": ["post-ln", "pre-ln"],
                              "seed": [1, 2, 3, 4], "time": times})
    tables = _clustering_reduce().reduce(data)
    row = tables["clustering_time"].iloc[0]
    assert row["reached pre-ln"] == "2/4" and row["reached post-ln"] == "4/4"
    assert row["t_cluster pre-ln"] == pytest.approx(4.99)
    assert row["95% interval pre-ln"] == "[2.99, > 10]"
    assert row["t_cluster post-ln"] == pytest.approx(0.99)
    assert row["ratio"] == pytest.approx(4.99 / 0.99)
    # The threshold halved and doubled: three rows per beta.
    assert tables["clustering_time_sensitivity"]["threshold"].tolist() == \
        pytest.approx([0.995, 0.99, 0.98])


def test_markdown_table_formats_numbers_and_gaps():
    frame = pd.DataFrame({"beta": [0.5, 2.0], "t": [4.30420282, np.nan], "n": ["4/4", "0/4"]})
    assert study.markdown_table(frame) == ("| beta | t | n |\n|---|---|---|\n"
                                           "| 0.5 | 4.304 | 4/4 |\n| 2 | - | 0/4 |\n")


def write_study(folder: pathlib.Path) -> pathlib.Path:
    """A new study, files only: final mean cosine against n for one scheme."""
    folder.mkdir(parents=True)
    (folder / "experiment.toml").write_text(textwrap.dedent("""\
        [run]
        d = 4
        T = 2
        dt = 0.1
        positions = "none"
        [sweep]
        n = [4, 8]
        seed = [1]
        """))
    (folder / "reduce.py").write_text(textwrap.dedent('''\
        import pandas as pd
        TITLE = "Final mean cosine against n"
        def reduce(data):
            final = data.mean_cos.isel(time=-1, seed=0)
            return pd.DataFrame({"n": data.n.values, "final_mean_cos": final.values})
        '''))
    (folder / "README.md").write_text("# Final mean cosine against n\n")
    return folder


def test_a_new_study_runs_through_nadyn_table(cli, tmp_path):
    studies = tmp_path / "studies"
    write_study(studies / "final_cos")
    out = tmp_path / "out"
    run = subprocess.run([cli, "table", "final_cos", "--studies", str(studies),
                          "--out-dir", str(out), "--format", "csv"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    table = pd.read_csv(out / "final_cos.csv")
    assert table["n"].tolist() == [4, 8]
    # Independently: the final frame of the sweep file itself.
    with h5py.File(out / "data" / "final_cos.h5", "r") as f:
        expected = f["mean_cos"][:, 0, -1]
    assert table["final_mean_cos"].to_numpy() == pytest.approx(expected, rel=1e-15)
    assert run.stdout == (out / "final_cos.csv").read_text()
    assert (out / "final_cos.md").read_text().startswith("# Final mean cosine against n\n")


def test_quick_form_applies_its_settings_before_set(cli, tmp_path):
    studies = tmp_path / "studies"
    folder = write_study(studies / "final_cos")
    with (folder / "reduce.py").open("a") as f:
        f.write('QUICK = ["sweep.n=[4]", "run.T=1"]\n')
    out = tmp_path / "out"
    quick = subprocess.run([cli, "table", "final_cos", "--studies", str(studies), "--quick",
                            "--out-dir", str(out), "--format", "csv", "--set", "run.T=0.5"],
                           capture_output=True, text=True, timeout=300)
    assert quick.returncode == 0, quick.stderr
    assert pd.read_csv(out / "final_cos.csv")["n"].tolist() == [4]
    with h5py.File(out / "data" / "final_cos.h5", "r") as f:
        assert f["time"][-1] == pytest.approx(0.5)  # --set comes after QUICK and wins

    without = studies / "plain"
    write_study(without)
    refused = subprocess.run([cli, "table", "plain", "--studies", str(studies), "--quick",
                              "--out-dir", str(tmp_path / "none")], capture_output=True, text=True)
    assert refused.returncode == 2
    assert "plain has no quick form for --quick" in refused.stderr
    assert not (tmp_path / "none").exists()


def test_a_setting_can_name_its_experiment(cli, tmp_path):
    """LABEL:KEY=VALUE applies to experiments/LABEL.toml only: a density sweep has no run.n."""
    folder = tmp_path / "studies" / "two_models"
    (folder / "experiments").mkdir(parents=True)
    (folder / "experiments" / "particles.toml").write_text(textwrap.dedent("""\
        [run]
        n = 16
        d = 2
        T = 1
        dt = 0.1
        positions = "none"
        [sweep]
        seed = [1, 2]
        """))
    (folder / "experiments" / "density.toml").write_text(textwrap.dedent("""\
        [run]
        model = "meanfield"
        points = 64
        init = "noise:1e-3,4"
        T = 1
        dt = 0.1
        density = "none"
        [sweep]
        seed = [1, 2]
        """))
    (folder / "reduce.py").write_text(textwrap.dedent('''\
        import pandas as pd
        QUICK = ["particles:run.n=8", "sweep.seed=[3]"]
        def reduce(data):
            return pd.DataFrame({"label": list(data),
                                 "seeds": [data[l].seed.values.tolist() for l in data]})
        '''))
    (folder / "README.md").write_text("# Two models\n")
    result = study.run(folder, tmp_path / "out", quick=True, figures=False, nadyn=cli)
    assert result.table.seeds.tolist() == [[3], [3]]  # an unlabelled setting: every experiment
    particles = nadyn.open(result.sweep_files["particles"])
    assert study.run_parameters(particles, seed=3)["n"] == "8"
    with pytest.raises(study.StudyError, match="no experiment 'gas'"):
        study.run(folder, tmp_path / "none", ["gas:run.n=4"], figures=False, nadyn=cli)
    assert not (tmp_path / "none").exists()
    # Unlabelled, the particles' key reaches the density sweep, which refuses it (exit 2).
    with pytest.raises(subprocess.CalledProcessError):
        study.run(folder, tmp_path / "none", ["run.n=4"], figures=False, nadyn=cli)


def test_page_tables_put_extra_tables_on_the_page(cli, tmp_path):
    folder = write_study(tmp_path / "studies" / "final_cos")
    with (folder / "reduce.py").open("a") as f:
        f.write(textwrap.dedent('''\
            def reduce(data):
                final = data.mean_cos.isel(time=-1, seed=0)
                main = pd.DataFrame({"n": data.n.values, "final_mean_cos": final.values})
                return {"final_cos": main, "by_n": main.assign(twice=2 * main.n),
                        "hidden": main}
            PAGE_TABLES = {"by_n": "Per n"}
            '''))
    result = study.run(folder, tmp_path / "out", figures=False, nadyn=cli)
    page = (tmp_path / "out" / "final_cos.md").read_text()
    by_n = pd.read_csv(tmp_path / "out" / "by_n.csv")
    # The extra table on the page, after the main one, as markdown_table renders it.
    assert page.endswith("## Per n\n\nAlso in `by_n.csv`.\n\n" + study.markdown_table(by_n))
    assert page.count("| n | final_mean_cos |") == 2  # the main table and by_n's; not hidden's
    assert (tmp_path / "out" / "hidden.csv").exists()
    assert result.table["n"].tolist() == [4, 8]

    with (folder / "reduce.py").open("a") as f:
        f.write('PAGE_TABLES = {"by_m": "Per m"}\n')
    with pytest.raises(study.StudyError, match="PAGE_TABLES names by_m, which reduce"):
        study.run(folder, tmp_path / "bad", figures=False, nadyn=cli)
    assert not (tmp_path / "bad" / "final_cos.md").exists()


def test_bad_input_exits_2_and_writes_nothing(cli, tmp_path):
    studies = tmp_path / "studies"
    write_study(studies / "final_cos")
    out = tmp_path / "out"
    bad_set = subprocess.run([cli, "table", "final_cos", "--studies", str(studies),
                              "--out-dir", str(out), "--set", "run.d=abc"],
                             capture_output=True, text=True)
    assert bad_set.returncode == 2
    assert "run.d" in bad_set.stderr
    assert not out.exists()

    unknown = subprocess.run([cli, "table", "no_such", "--studies", str(studies)],
                             capture_output=True, text=True)
    assert unknown.returncode == 2
    assert "unknown table or study 'no_such'" in unknown.stderr
    # The valid names: all, the names of the folder's manifest (none here) and its studies.
    assert "(valid: all, final_cos)" in unknown.stderr

    (studies / "final_cos" / "reduce.py").unlink()
    missing = subprocess.run(["/usr/bin/python3", "-m", "nadyn.study", "run",
                              str(studies / "final_cos"), "--nadyn", cli],
                             capture_output=True, text=True,
                             env={"PYTHONPATH": str(REPO / "python")})
    assert missing.returncode == 2
    assert "lacks reduce.py" in missing.stderr

    every = subprocess.run([cli, "table", "all", "--set", "run.n=4",
                            "--out-dir", str(tmp_path / "all")],
                           capture_output=True, text=True)
    assert every.returncode == 2
    assert "'all' runs every study with its own settings" in every.stderr
    assert not (tmp_path / "all").exists()


def test_studies_are_listed():
    assert "clustering_time" in study.available()


# The quick form (QUICK: seeds 1 and 2, sigma = 0 and 0.1) on a smaller model.
NOISE_SMALL = ["run.n=12", "run.d=6", "run.T=1", "sweep.beta=[0,2]"]


def test_noise_study_rows_are_what_the_model_fixes(cli, tmp_path):
    out = tmp_path / "out"
    run = subprocess.run([cli, "table", "noise", "--quick", "--out-dir", str(out), "--no-figures",
                          "--format", "csv", *sum((["--set", s] for s in NOISE_SMALL), [])],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout == (out / "noise.csv").read_text()
    table = pd.read_csv(out / "noise.csv")
    assert list(table.columns) == ["norm", "beta", "sigma", "seeds", "flips", "flips_mean",
                                   "flips_sem", "flips_low", "flips_high", "entropy",
                                   "entropy_mean", "entropy_sem"]
    assert len(table) == 2 * 2 * 2 and set(table.norm) == {"pre-ln", "qkv-norm"}
    assert (table.seeds == 2).all() and set(table.sigma) == {0, 0.1}
    # No noise, no flips. beta = 0 ties every key (ties go to the lowest index), so noise
    # cannot move the top key, and the attention is uniform: entropy exactly 1.
    assert (table[(table.sigma == 0) | (table.beta == 0)].flips_mean == 0).all()
    assert (table[table.beta == 0].entropy_mean == 1).all()
    assert table.flips_mean.between(0, 1).all() and table.entropy_mean.between(0, 1).all()
    noisy = table[(table.norm == "pre-ln") & (table.beta == 2) & (table.sigma == 0.1)]
    assert float(noisy.flips_mean.iloc[0]) > 0
    # Independently: the same runs by nadyn simulate, averaged here, with and without
    # QKV-Norm (a seed draws the same start, weights and noise for both).
    flips = {}
    for qkv in (False, True):
        for seed in (1, 2):
            path = tmp_path / f"noise-{qkv}-{seed}.h5"
            subprocess.run([cli, "simulate", "--scheme", "pre-ln", "--n", "12", "--d", "6",
                            "--T", "1", "--dt", "0.05", "--every", "1", "--integrator", "rk4",
                            "--weights", "gaussian", "--layer-time", "0.5", "--threads", "1",
                            "--beta", "2", "--norm-noise", "0.1", "--seed", str(seed),
                            *(["--qkv-norm"] if qkv else []),
                            "--positions", "none", "--out", str(path), "--quiet"],
                           check=True, capture_output=True)
            with h5py.File(path, "r") as f:
                flips[qkv, seed] = f["observables/argmax_flips/value"][()].mean()
    plain = [flips[False, 1], flips[False, 2]]
    assert float(noisy.flips_mean.iloc[0]) == pytest.approx(np.mean(plain), abs=5e-7)
    # The standard error of the mean, sd / sqrt(2), and Student's t with one degree of
    # freedom: the 95 % interval is the mean +- 12.706 standard errors.
    sem = np.std(plain, ddof=1) / np.sqrt(2)
    assert float(noisy.flips_sem.iloc[0]) == pytest.approx(sem, abs=5e-7)
    assert float(noisy.flips_high.iloc[0]) == pytest.approx(np.mean(plain) + 12.7062 * sem,
                                                            abs=1e-5)
    # The comparisons pair the seeds: the difference per seed, then its mean and error.
    comparisons = pd.read_csv(out / "noise_comparisons.csv")
    assert list(comparisons.comparison) == ["qkv-norm - pre-ln"] * 2 + ["beta 2 - beta 0"] * 2
    qkv_row = comparisons[comparisons["at"] == "beta = 2"].iloc[0]
    differences = [flips[True, s] - flips[False, s] for s in (1, 2)]
    assert qkv_row.difference == pytest.approx(np.mean(differences), abs=5e-7)
    assert qkv_row.difference_sem == pytest.approx(np.std(differences, ddof=1) / np.sqrt(2),
                                                   abs=5e-7)
    # At beta = 0 no noise moves the top key: both norms' flips are 0 in every seed, the
    # difference is 0 with no spread, and no verdict is drawn from it.
    tied = comparisons[comparisons["at"] == "beta = 0"].iloc[0]
    assert (tied.difference, tied.difference_sem, tied.verdict) == (0, 0, "not resolved")
    assert (out / "noise.md").read_text().startswith("# Noise on the norms")


def test_noise_study_refuses_a_negative_sigma(cli, tmp_path):
    out = tmp_path / "out"
    run = subprocess.run([cli, "table", "noise", "--out-dir", str(out), "--no-figures",
                          "--set", "sweep.norm_noise=[-0.1]"], capture_output=True, text=True)
    assert run.returncode == 2
    assert "norm" in run.stderr and len(run.stderr.strip().splitlines()) == 1
    assert not out.exists()


def expected_initial_velocity(scheme, n, beta):
    """gamma'(0) from the symmetric start at r0 = alpha = 1, written out here (docs/model.md
    §3): each token attends to itself with weight e^beta / (e^beta + n - 1)."""
    linear = 2.0 / (np.exp(beta) + n - 1.0)
    root = 2.0 / np.sqrt(np.exp(2.0 * beta) + n - 1.0)
    return root if scheme in ("peri-ln", "ngpt") else linear


def test_initial_study_matches_the_closed_forms(cli, tmp_path):
    out = tmp_path / "out"
    run = subprocess.run([cli, "table", "initial", "--out-dir", str(out), "--format", "csv",
                          "--set", "sweep.beta=[5]"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    table = pd.read_csv(out / "initial_velocity.csv")
    assert table.scheme.tolist() == ["post-ln", "pre-ln", "mix-ln", "peri-ln", "ngpt",
                                     "sqrt-scaling", "no-norm"]
    for _, row in table.iterrows():
        expected = expected_initial_velocity(row.scheme, 256, 5.0)
        assert row.closed_form == pytest.approx(expected, rel=1e-12)
        assert abs(row.reduced / expected - 1) < 1e-10
        assert abs(row.particles / expected - 1) < 1e-10
        assert row.rel_error_reduced < 1e-10 and row.rel_error_particles < 1e-10
    # The two distinct values, as decimal reference numbers (docs/model.md §3.6).
    assert expected_initial_velocity("post-ln", 256, 5.0) == pytest.approx(4.957696482805e-03, rel=1e-12)
    assert expected_initial_velocity("peri-ln", 256, 5.0) == pytest.approx(1.339855973539e-02, rel=1e-12)
    beta = pd.read_csv(out / "initial_velocity_beta.csv")
    assert len(beta) == 7 and (beta.beta == 5).all()
    assert (out / "initial_velocity.md").read_text().startswith("# Initial velocity gamma'(0)")


def test_initial_study_needs_beta_5_or_a_single_beta(cli, tmp_path):
    run = subprocess.run([cli, "table", "initial", "--out-dir", str(tmp_path / "out"),
                          "--set", "sweep.beta=[1,2]", "--set", "run.n=4", "--set", "run.d=4"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode != 0
    assert "beta = 5" in run.stderr


# The terminal laws (docs/model.md §3.5), written out here: exponential with rate 2 (post-ln,
# ngpt), power 3 (pre-ln, mix-ln, peri-ln), stretched exponential exp(-4 sqrt t) (sqrt-scaling).
TERMINAL = {"post-ln": ("exponential", 2.0), "ngpt": ("exponential", 2.0),
            "pre-ln": ("polynomial", 3.0), "mix-ln": ("polynomial", 3.0),
            "peri-ln": ("polynomial", 3.0), "sqrt-scaling": ("stretched", 4.0)}


def test_terminal_study_fits_the_predicted_laws(cli, tmp_path):
    out = tmp_path / "out"
    # The quick form (one seed) with a second seed, so that the particles have an interval.
    run = subprocess.run([cli, "table", "terminal", "--quick", "--set", "sweep.seed.range=[1,2]",
                          "--out-dir", str(out), "--format", "csv"],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    table = pd.read_csv(out / "terminal_velocity.csv")
    assert table.scheme.tolist() == list(TERMINAL)[:1] + ["pre-ln", "mix-ln", "peri-ln", "ngpt",
                                                          "sqrt-scaling"]
    fits = pd.read_csv(out / "data" / "terminal_fits.csv")
    for _, row in table.iterrows():
        law, parameter = TERMINAL[row.scheme]
        assert (row.law, row.theory) == (law, parameter)
        assert abs(row.fit_reduced / parameter - 1) < 0.02
        assert abs(row.fit_particles / parameter - 1) < 0.05
        assert row.best_reduced == law and row.best_particles == f"{law} (2/2)"
        assert (row.seeds, row.windows, row.verdict) == (2, "2/2", "agrees")
        # The windows are where the velocity is well above round-off: several decades.
        assert row.window_end > 5 * row.window_start
        # The particles' column: the mean of the two seeds' fits, its standard error and
        # Student's t interval with one degree of freedom (12.706 standard errors).
        seeds = fits[(fits.scheme == row.scheme) & (fits.source == "particles")]
        assert sorted(seeds.seed) == [1, 2]
        assert row.fit_particles == pytest.approx(seeds.parameter.mean(), abs=5e-7)
        sem = seeds.parameter.std(ddof=1) / np.sqrt(2)
        assert row.particles_sem == pytest.approx(sem, rel=1e-2)
        assert row.particles_high - row.particles_low == pytest.approx(2 * 12.7062 * sem, abs=2e-6)
    # Each threshold halved and doubled: the tolerance moves the verdict only, never a fit;
    # the verdict at each tolerance is whether both ends of the interval lie within it.
    moved = pd.read_csv(out / "terminal_sensitivity.csv")
    assert len(moved) == 6 * 3 * 3
    assert sorted(set(moved.threshold)) == ["gap_floor_particles", "near_cluster", "tolerance"]
    for _, m in moved.iterrows():
        row = table[table.scheme == m.scheme].iloc[0]
        if m.threshold == "tolerance" or m.factor == 1:
            assert m.fit_particles == row.fit_particles and m.fit_reduced == row.fit_reduced
        if m.threshold == "tolerance":
            parameter = TERMINAL[m.scheme][1]
            within = max(abs(m.particles_low / parameter - 1),
                         abs(m.particles_high / parameter - 1)) <= m.value
            assert (m.verdict == "agrees") == within
    # The fits again, here, from the series the study wrote (the ODE's and seed 1's; numpy
    # least squares in the law's own variables): the same parameters to round-off.
    series = pd.read_csv(out / "data" / "terminal_series.csv")
    for _, fit in fits[(fits.source == "reduced") | (fits.seed == 1)].iterrows():
        s = series[(series.scheme == fit.scheme) & (series.source == fit.source)]
        s = s[(s.t >= fit.window_start * (1 - 1e-9)) & (s.t <= fit.window_end * (1 + 1e-9))
              & (s.velocity > 0)]
        t, v = s.t.to_numpy(), s.velocity.to_numpy()
        if fit.law == "exponential":
            x, y = t, np.log(v)
        elif fit.law == "polynomial":
            x, y = np.log(t), np.log(v)
        else:
            x = np.sqrt(t + 1)
            y = np.log(v) + np.log(x)
        slope = np.polyfit(x, y, 1)[0]
        assert -slope == pytest.approx(fit.parameter, rel=1e-6), (fit.scheme, fit.source)
    assert (out / "terminal_velocity.md").read_text().startswith("# Terminal velocity")


def test_unselectable_fraction_counts_the_points_inside_the_hull():
    keys = nadyn._core.unselectable
    # The corners of a square are vertices; its centre, and a point on an edge, are not.
    square = [[1.0, 1.0], [1.0, -1.0], [-1.0, 1.0], [-1.0, -1.0]]
    assert keys.fraction(square) == 0.0
    assert keys.fraction(square + [[0.0, 0.0]]) == pytest.approx(1 / 5, abs=0)
    assert keys.fraction(square + [[0.0, 0.0], [1.0, 0.0]]) == pytest.approx(2 / 6, abs=0)
    # Points on a circle: all vertices.
    angles = np.linspace(0.0, 2.0 * np.pi, 17)[:-1]
    assert keys.fraction(np.stack([np.cos(angles), np.sin(angles)], axis=1)) == 0.0
    drawn = keys.gaussian_keys(3, 5, 4)
    assert drawn.shape == (5, 4)
    assert np.array_equal(drawn, keys.gaussian_keys(3, 5, 4))
    assert not np.array_equal(drawn, keys.gaussian_keys(4, 5, 4))
    with pytest.raises(ValueError, match="n x d array"):
        keys.fraction(np.zeros(3))


def test_unselectable_study_gives_the_numbers_geometry_fixes(cli, tmp_path):
    run = subprocess.run([cli, "table", "unselectable", "--out-dir", str(tmp_path),
                          "--set", "n=[8, 16]", "--set", "d=[2, 16]", "--set", "seeds=[1, 2]",
                          "--format", "csv"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    table = pd.read_csv(tmp_path / "unselectable.csv")
    assert list(table.columns) == ["n", "d", "seeds", "raw", "raw_mean", "raw_sem", "raw_low",
                                   "raw_high", "closed_form", "in_interval", "sphere"]
    assert len(table) == 4 and (table.seeds == 2).all()
    # LayerNorm's scaling puts the keys on a sphere, a strictly convex surface: none of the
    # n keys of either seed is unselectable.
    assert table.sphere.tolist() == ["0 of 16", "0 of 16", "0 of 32", "0 of 32"]
    # n <= d + 1 Gaussian points are affinely independent: every one is a vertex.
    independent = table[table.n <= table.d + 1]
    assert (independent.raw_mean == 0).all() and (independent.closed_form == 0).all()
    # In the plane most of 8 or 16 Gaussian points are inside their hull.
    assert (table[table.d == 2].raw_mean > 0.2).all()
    assert (tmp_path / "fig_unselectable.png").is_file()

    bad = subprocess.run([cli, "table", "unselectable", "--out-dir", str(tmp_path / "bad"),
                          "--set", "seeds=[0]"], capture_output=True, text=True)
    assert bad.returncode == 2 and "seeds must be a list of positive integers" in bad.stderr
    unknown = subprocess.run([cli, "table", "unselectable", "--out-dir", str(tmp_path / "bad"),
                              "--set", "k=3"], capture_output=True, text=True)
    assert unknown.returncode == 2 and "KEY one of n, d, seeds" in unknown.stderr
    assert not (tmp_path / "bad").exists()


def test_unselectable_quick_form_is_a_small_check(cli, tmp_path):
    run = subprocess.run([cli, "table", "unselectable", "--quick", "--out-dir", str(tmp_path),
                          "--no-figures", "--format", "csv"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    table = pd.read_csv(tmp_path / "unselectable.csv")
    assert list(zip(table.n, table.d)) == [(n, d) for n in (16, 64) for d in (2, 3, 8)]
    assert (table.seeds == 2).all()
    assert table.sphere.tolist() == ["0 of 32"] * 3 + ["0 of 128"] * 3
    # The closed form exists in the plane and in R^3 only (here n > d + 1 everywhere).
    assert table.closed_form.notna().tolist() == [True, True, False] * 2


def test_unselectable_intervals_hold_the_closed_forms(cli, tmp_path):
    """400 seeds (at these n, 16 seeds' intervals are too coarse for a tenth of a key): each
    raw fraction's 95 % interval holds the expected fraction, whose closed
    forms at n = d + 2 are written out here from orthant probabilities: 4 Gaussian points in
    the plane, P(one given point inside the others' triangle) = 1 - 3 P(Z1 < h, Z2 < h) with
    h ~ N(0, 1/2), an orthant of correlation 1/3; 5 in R^3 have 2 + C(5, 3) P(Z1 < h, Z2 < h)
    vertices on average with h ~ N(0, 1/3), correlation 1/4."""
    run = subprocess.run([cli, "table", "unselectable", "--out-dir", str(tmp_path),
                          "--set", "n=[4, 5, 16]", "--set", "d=[2, 3]",
                          "--set", "seeds=" + str(list(range(1, 401))), "--no-figures",
                          "--format", "csv"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    table = pd.read_csv(tmp_path / "unselectable.csv").set_index(["n", "d"])
    orthant = lambda rho: 0.25 + np.arcsin(rho) / (2 * np.pi)  # noqa: E731
    expected = {(4, 2): 1 - 3 * orthant(1 / 3), (5, 3): 1 - (2 + 10 * orthant(1 / 4)) / 5,
                (4, 3): 0.0}
    for key, value in expected.items():
        assert table.loc[key, "closed_form"] == pytest.approx(value, abs=5e-7)  # 6 decimals
    assert expected[(4, 2)] == pytest.approx(0.0877398, abs=1e-7)
    assert (table.seeds == 400).all() and (table.in_interval == "yes").all()
    for _, row in table.iterrows():
        assert row.raw_low <= row.closed_form <= row.raw_high
        # Student's t with 399 degrees of freedom: the half-width is 1.966 standard errors.
        assert row.raw_high - row.raw_mean == pytest.approx(1.9659 * row.raw_sem, abs=5e-6)
    assert table.sphere.tolist() == ["0 of 1600", "0 of 1600", "0 of 2000", "0 of 2000",
                                     "0 of 6400", "0 of 6400"]


# ---- the motion observables and the random-weights study ---------------------------------

def motion(positions):
    """pair_change and angle of every frame from the stored directions (frames, n, d), with
    numpy apart from the library: frame 0 has no previous frame (NaN)."""
    frames, n, _ = positions.shape
    pair_change, angle = [np.nan], [np.nan]
    lower = np.tril_indices(n, -1)
    for i in range(1, frames):
        now, before = positions[i], positions[i - 1]
        pair_change.append(np.mean(np.abs((now @ now.T)[lower] - (before @ before.T)[lower])))
        cosines = np.clip(np.sum(now * before, axis=1), -1.0, 1.0)
        angle.append(np.mean(np.arccos(cosines)))
    return np.array(pair_change), np.array(angle)


def read_run(path):
    with h5py.File(path, "r") as f:
        return ({name: f[f"observables/{name}/value"][()] for name in f["observables"]},
                f["particles/tokens/position/value"][()])


@pytest.mark.parametrize("integrator", [["--integrator", "layers", "--dt", "1", "--T", "12"],
                                        ["--integrator", "rk4", "--dt", "0.1", "--T", "3"]])
def test_motion_observables_match_numpy_from_the_positions(cli, simulate, integrator):
    for every in ("1", "3"):
        path = simulate(f"motion-{integrator[1]}-{every}.h5", "--scheme", "pre-ln", "--n", "20",
                        "--d", "6", "--beta", "3", "--weights", "random-per-layer",
                        "--every", every, "--observe", "pair_change,angle", "--positions",
                        "all", *integrator)
        observables, positions = read_run(path)
        expected_change, expected_angle = motion(positions)
        # Relative to the previous recorded frame, whatever the frame interval.
        assert np.isnan(observables["pair_change"][0]) and np.isnan(observables["angle"][0])
        np.testing.assert_allclose(observables["pair_change"][1:], expected_change[1:],
                                   rtol=1e-11)
        np.testing.assert_allclose(observables["angle"][1:], expected_angle[1:], rtol=1e-9)
        assert (observables["pair_change"][1:] > 0).all()


def test_motion_observables_continue_bitwise_through_resume(cli, simulate):
    flags = ["--scheme", "peri-ln", "--n", "16", "--d", "5", "--integrator", "layers",
             "--dt", "1", "--every", "2", "--weights", "random-per-layer", "--observe",
             "angle,pair_change", "--positions", "all"]
    whole = simulate("whole.h5", *flags, "--T", "12")
    part = simulate("part.h5", *flags, "--T", "6")
    subprocess.run([cli, "simulate", "--resume", str(part), "--T", "12", "--quiet"], check=True,
                   capture_output=True)
    for name in ("pair_change", "angle", "mean_cos"):
        a, b = read_run(whole)[0][name], read_run(part)[0][name]
        assert a.tobytes() == b.tobytes(), name


def test_sweep_stores_only_the_motion_observables_asked_for(cli, tmp_path):
    for observe in ("none", "angle"):
        experiment = tmp_path / f"{observe}.toml"
        experiment.write_text('[run]\nn = 8\nd = 3\nT = 2\nintegrator = "layers"\ndt = 1\n'
                              f'positions = "none"\nobserve = "{observe}"\n'
                              '[sweep]\nseed = [1, 2]\n')
        subprocess.run([cli, "sweep", str(experiment), "--out", str(tmp_path / f"{observe}.h5"),
                        "--quiet"], check=True, capture_output=True)
    assert "angle" not in nadyn.open(tmp_path / "none.h5")
    data = nadyn.open(tmp_path / "angle.h5")
    assert "pair_change" not in data
    # NaN at every run's first frame, which has no previous frame.
    angle = data.angle.transpose("seed", "time").values
    assert np.isnan(angle[:, 0]).all() and (angle[:, 1:] > 0).all()


RANDOM = REPO / "studies" / "random_weights"
RANDOM_SMALL = ["run.n=12", "run.d=8", "run.beta=2.8284271247461903", "run.T=20",
                "sweep.seed=[1,2]"]


def test_random_weights_study_matches_single_runs(cli, tmp_path):
    result = study.run(RANDOM, tmp_path / "out", RANDOM_SMALL, figures=True, nadyn=cli)
    table = result.table.set_index("scheme")
    assert list(table.index) == ["post-ln", "pre-ln", "mix-ln", "peri-ln", "ngpt",
                                 "sqrt-scaling"]
    assert result.figure.name == "fig5_random_mean_cos.png" and result.figure.stat().st_size
    sensitivity = result.extra_tables["random_weights_sensitivity"]
    assert sensitivity["ratio"].tolist() == [1.25] * 6 + [2.0] * 6
    assert "The ratio 1.5 moved to 1.25 and 2" in result.markdown.read_text()
    curves = result.extra_tables["data/random_mean_cos"]
    # Windows of 20 layers: layer 1, layers 1-5, the first 10% = layers 1-2.
    windows = {"layer1": 1, "layers1_5": 5, "first10pct": 2}
    for scheme in table.index:
        runs = []
        for seed in (1, 2):
            path = tmp_path / f"{scheme}-{seed}.h5"
            subprocess.run([cli, "simulate", "--scheme", scheme, "--n", "12", "--d", "8",
                            "--beta", "2.8284271247461903", "--integrator", "layers",
                            "--dt", "1", "--T", "20", "--weights", "random-per-layer",
                            "--seed", str(seed), "--positions", "all", "--out", str(path),
                            "--quiet"], check=True, capture_output=True)
            observables, positions = read_run(path)
            change, angle = motion(positions)
            mean_cos = observables["mean_cos"]
            np.testing.assert_array_equal(
                curves[(curves.scheme == scheme) & (curves.seed == seed)].mean_cos, mean_cos)
            runs.append({f"gain_{key}": (mean_cos[last] - mean_cos[0]) / last
                         for key, last in windows.items()}
                        | {f"pair_change_{key}": change[1:last + 1].mean()
                           for key, last in windows.items()}
                        | {"angle_first10pct": angle[1:3].mean(), "final_mean_cos": mean_cos[-1]})
        for column in runs[0]:
            values = [run[column] for run in runs]
            assert table.loc[scheme, column] == pytest.approx(np.mean(values), rel=1e-9,
                                                              abs=1e-15), (scheme, column)
            assert table.loc[scheme, column + "_sem"] == pytest.approx(
                np.std(values, ddof=1) / np.sqrt(2), rel=1e-6, abs=1e-14), (scheme, column)
        assert table.loc[scheme, "collapse_votes"].endswith("/2")
    # The identities of the model at r0 = 1: pre-ln's first layer, y = r theta + h A, is
    # post-ln's, y = theta + h A; mix-ln is post-ln before its switch (T/4 = 5 layers).
    assert table.loc["pre-ln", "gain_layer1"] == table.loc["post-ln", "gain_layer1"]
    for key in windows:
        assert table.loc["mix-ln", f"gain_{key}"] == table.loc["post-ln", f"gain_{key}"]
    # The gain is a signed mean change of the pairwise cosines: never above the absolute one.
    for key in windows:
        assert (table[f"pair_change_{key}"] >= table[f"gain_{key}"].abs() - 1e-15).all()


def test_random_weights_verdicts_are_relative_to_the_median():
    module = study.load(RANDOM).module
    # Median 1: above 1.5 fast, below 1/1.5 slow, between moderate.
    assert [module.speed_word(v, 1.0) for v in (1.6, 1.5, 0.67, 0.66)] == [
        "fast", "moderate", "moderate", "slow"]
    assert module.verdict(["fast", "fast", "moderate"], "slow", ("fast", "slow")) == (
        "early agrees over layer 1 and layers 1-5 only; collapse agrees")
    assert module.verdict(["slow"] * 3, "fast", ("moderate", "slow")) == (
        "early disagrees in every window; collapse disagrees")
    assert module.verdict(["slow"] * 3, "none", None) == "n/a (not in the paper's table)"


def test_random_weights_verdicts_with_the_ratio_moved():
    # Issue 37: the threshold 1.5 with its margin halved and doubled. Three schemes at 1, 1.4
    # and 3 times a median of 1 (the others at it): moderate, moderate, fast at 1.5; at 1.25
    # the 1.4 is fast; at 2 still moderate, and 3 still fast.
    module = study.load(RANDOM).module
    rows = [{"scheme": name, "gain_layer1": g, "gain_layers1_5": g, "gain_first10pct": g,
             "angle_first10pct": 1.0, "collapse_parameter": 1.0, "collapse_law": "exponential"}
            for name, g in (("post-ln", 1.0), ("pre-ln", 1.4), ("ngpt", 3.0),
                            ("mix-ln", 1.0), ("peri-ln", 1.0), ("sqrt-scaling", 1.0))]
    words = {r["scheme"]: r["ours_gain_layer1"] for r in module.judge(rows, 1.5)}
    assert (words["post-ln"], words["pre-ln"], words["ngpt"]) == ("moderate", "moderate", "fast")
    words = {r["scheme"]: r["ours_gain_layer1"] for r in module.judge(rows, 1.25)}
    assert (words["pre-ln"], words["ngpt"]) == ("fast", "fast")
    assert module.RATIO == 1.5 and module.MARGIN_FACTORS == (0.5, 2.0)
