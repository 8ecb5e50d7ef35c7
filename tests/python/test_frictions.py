"""Issue 39, "a researcher's day without a trip to the source": pictures of sweep files, one
meaning of --point, unrecorded observables that do not read as zero, and the small surprises
of the plots."""

from __future__ import annotations

import pathlib
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

import h5py
import matplotlib.pyplot as plt
import pytest
from matplotlib import animation

import nadyn
import nadyn.clusters
import nadyn.plot
from nadyn.io import sweep_run

from conftest import REPO

ENV = {"PYTHONPATH": str(REPO / "python"), "PATH": "/usr/bin:/bin", "MPLBACKEND": "Agg"}


@pytest.fixture
def sweep(cli, tmp_path):
    """sweep(name, text) runs `nadyn sweep` on the experiment `text` into tmp_path/name."""

    def run(name: str, text: str):
        (tmp_path / (name + ".toml")).write_text(text)
        out = tmp_path / name
        result = subprocess.run([cli, "sweep", str(tmp_path / (name + ".toml")), "--out", str(out),
                                 "--quiet"], capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
        return out

    return run


BETA_SEED = ('[run]\nscheme = "post-ln"\nn = 12\nd = 3\nT = 2\ndt = 0.05\n{extra}'
             '[sweep]\nbeta = [1, 4]\nseed = [1, 2]\n')


def test_sphere_of_a_sweep_point(sweep):
    path = sweep("s.h5", BETA_SEED.format(extra=""))
    fig = nadyn.plot.sphere(path, point="beta=4,seed=2")
    title = fig._suptitle.get_text()
    assert "post-ln, n = 12, d = 3, beta = 4" in title and "(beta=4 seed=2)" in title
    # The sweep kept the final positions: one snapshot, at the run's last time, with all 12.
    assert len(fig.axes) == 2 and fig.axes[0].get_title().startswith("t = 2")
    assert sum(len(ax.collections[0].get_offsets()) for ax in fig.axes) == 12
    assert any("colour: token index" in text.get_text() for text in fig.texts)
    plt.close(fig)
    # The same run by its index (row-major over beta, seed), and the final positions drawn are
    # the sweep's own.
    ds = nadyn.open(path)
    by_index = nadyn.plot.sphere(ds, point=3)
    assert "(beta=4 seed=2)" in by_index._suptitle.get_text()
    plt.close(by_index)
    with pytest.raises(ValueError, match=r"the sweep has 4 runs: pass --point axis=value,\.\.\. "
                       r"to pick one; beta in \{1, 4\}; seed in \{1, 2\}; or a run's index, 0 to 3"):
        nadyn.plot.sphere(path)
    with pytest.raises(ValueError, match="names no value of the axis seed"):
        nadyn.plot.sphere(path, point="beta=4")


def test_sphere_of_a_sweep_with_every_frame_and_of_a_one_run_sweep(sweep):
    path = sweep("all.h5", BETA_SEED.format(extra='positions = "all"\n'))
    fig = nadyn.plot.sphere(path, times=[0, 1, 2], point={"beta": 1, "seed": 1})
    assert [ax.get_title().split("\n")[0] for ax in fig.axes[:3]] == ["t = 0", "t = 1", "t = 2"]
    plt.close(fig)
    one = sweep("one.h5", '[run]\nn = 6\nd = 3\nT = 0.5\n[sweep]\nbeta = [3]\n')
    fig = nadyn.plot.sphere(one)  # no point needed: the sweep has one run
    assert "beta = 3" in fig._suptitle.get_text()
    plt.close(fig)


def test_sphere_of_a_sweep_without_positions_says_so(sweep):
    path = sweep("none.h5", BETA_SEED.format(extra='positions = "none"\n'))
    with pytest.raises(ValueError, match=r'has none \(written with positions = "none"\)'):
        nadyn.plot.sphere(path, point=0)


def test_plot_command_line_takes_point(sweep, tmp_path):
    path = sweep("s.h5", BETA_SEED.format(extra=""))
    ok = subprocess.run([sys.executable, "-m", "nadyn.plot", str(path), "--sphere", str(tmp_path / "a.png"),
                         "--observables", str(tmp_path / "b.png"), "--point", "beta=1,seed=2"],
                        capture_output=True, text=True, env=ENV, timeout=300)
    assert ok.returncode == 0, ok.stderr
    assert (tmp_path / "a.png").stat().st_size > 0 and (tmp_path / "b.png").stat().st_size > 0
    bad = subprocess.run([sys.executable, "-m", "nadyn.plot", str(path), "--sphere", str(tmp_path / "c.png")],
                         capture_output=True, text=True, env=ENV, timeout=300)
    assert bad.returncode == 2
    assert "pass --point axis=value,..." in bad.stderr and "written with" not in bad.stderr
    assert not (tmp_path / "c.png").exists()


def test_sweep_run_takes_point_as_the_command_line_does(sweep):
    ds = nadyn.open(sweep("s.h5", BETA_SEED.format(extra="")))
    for point in ("beta=4,seed=2", "seed=2,beta=4.0", "3", 3, {"beta": 4.0, "seed": 2}):
        run = sweep_run(ds, point)
        assert float(run.beta) == 4.0 and int(run.seed) == 2
    with pytest.raises(ValueError, match="--point 4: the sweep has 4 runs"):
        sweep_run(ds, 4)
    with pytest.raises(ValueError, match="beta = 2 is not a value of the axis"):
        sweep_run(ds, "beta=2,seed=1")


def test_titles_give_the_parameters(simulate):
    path = simulate("run.h5", "--n", "10", "--d", "3", "--beta", "2.5", "--scheme", "pre-ln", "--T", "0.5")
    fig = nadyn.plot.sphere(path)
    assert "pre-ln, n = 10, d = 3, beta = 2.5" in fig._suptitle.get_text()
    plt.close(fig)


def _overlap(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def test_movie_title_clears_the_panel_titles(simulate, tmp_path, monkeypatch):
    path = simulate("run.h5", "--n", "10", "--T", "0.2", "--every", "10")
    checked = []

    def save(self, out, writer=None, dpi=None, **kwargs):  # draws the first frame and looks
        self._func(0)
        fig = self._fig
        fig.set_dpi(100)
        assert tuple(fig.get_size_inches() * 100) == (640, 360)
        renderer = fig.canvas.get_renderer()
        title = fig._suptitle.get_window_extent(renderer)
        for ax in fig.axes:
            assert not _overlap(title, ax.title.get_window_extent(renderer)), ax.get_title()
        checked.append(fig._suptitle.get_text())

    monkeypatch.setattr(animation.FuncAnimation, "save", save)
    nadyn.plot.movie(path, out=tmp_path / "m.gif")
    assert checked and "\nt = 0" in checked[0] and "beta = 4" in checked[0]


def test_heatmap_label_inside_and_beta_from_zero(sweep):
    path = sweep("h.h5", '[run]\nn = 8\nd = 3\nT = 1\n[sweep]\nbeta = [0, 1, 2]\n'
                         'scheme = ["post-ln", "pre-ln"]\n')
    fig = nadyn.plot.heatmap(nadyn.open(path), "mean_cos")
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    box = fig.bbox
    for ax in fig.axes[:2]:
        label = ax.xaxis.label.get_window_extent(renderer)
        assert label.y0 >= box.y0 and label.x1 <= box.x1, ax.get_xlabel()
        assert ax.get_ylim()[0] == 0.0 and ax.get_xlim()[0] == 0.0
    assert "n = 8, d = 3" in fig._suptitle.get_text()
    plt.close(fig)


def test_unrecorded_cluster_history_is_not_zero(cli, sweep, simulate, tmp_path):
    """A run that did not ask for clusters has no merge events to count: nothing stored, and
    every reader says why instead of 0 events and t_k = nan ("never")."""
    path = sweep("nc.h5", '[run]\nn = 8\nd = 3\nT = 20\nbeta = 1\nobservables = "mean_cos"\n'
                          '[sweep]\nseed = [1, 2]\n')
    ds = nadyn.open(path)
    for name in ("merge_count", "merges", "clustering_time", "plateau_length"):
        assert name not in ds
    # Not stored either: the file itself holds no history or plateau (h5py, apart from
    # nadyn.open, which would hide them), while a sweep recording clusters holds them all.
    history = ("merges", "merge_count", "clustering_time", "plateau_length", "plateau_clusters")
    with h5py.File(path, "r") as f:
        assert [name for name in history if name in f] == []
    with_clusters = sweep("wc.h5", "[run]\nn = 8\nd = 3\nT = 2\nbeta = 1\n[sweep]\nseed = [1, 2]\n")
    with h5py.File(with_clusters, "r") as f:
        assert [name for name in history if name in f] == list(history)
    assert ds["mean_cos"].isel(time=-1).min() > 0.5  # every run collapsed all the same
    with pytest.raises(ValueError, match=r"merge events not recorded \(add clusters to observables\)"):
        nadyn.clusters.merge_events(ds, seed=1)
    with pytest.raises(ValueError, match=r"clusters not recorded \(add clusters to observables\)"):
        nadyn.plot.observables(path, names=("clusters",), point="seed=1")
    with pytest.raises(ValueError, match=r"gap not recorded \(add gap to observables\)"):
        nadyn.plot.heatmap(ds, "gap", y="seed")
    merges = subprocess.run([cli, "inspect", str(path), "--merges", "--point", "seed=1"],
                            capture_output=True, text=True)
    assert merges.returncode == 2
    assert "merge events not recorded (add clusters to observables)" in merges.stderr
    assert "merge events: 0" not in merges.stdout
    table = subprocess.run([cli, "inspect", str(path)], capture_output=True, text=True, check=True)
    assert "not recorded" in table.stdout and "nan ± 0" not in table.stdout
    single = simulate("nc1.h5", "--n", "8", "--d", "3", "--T", "2", "--observables", "mean_cos")
    merges = subprocess.run([cli, "inspect", str(single), "--merges"], capture_output=True, text=True)
    assert merges.returncode == 2
    assert "merge events not recorded (add clusters to observables)" in merges.stderr
    plateaus = subprocess.run([cli, "inspect", str(single), "--plateaus"], capture_output=True, text=True)
    assert plateaus.returncode == 2
    assert "plateaus not recorded (no clusters series: add clusters to observables)" in plateaus.stderr


def _write_study(folder):
    """A small study, files only (as tests/python/test_study.py's): final mean cosine against n."""
    folder.mkdir(parents=True)
    (folder / "experiment.toml").write_text('[run]\nd = 4\nT = 1\ndt = 0.1\npositions = "none"\n'
                                            "[sweep]\nn = [4, 8]\nseed = [1]\n")
    (folder / "reduce.py").write_text(
        "import pandas as pd\nTITLE = 'Final mean cosine against n'\n"
        "def reduce(data):\n"
        "    final = data.mean_cos.isel(time=-1, seed=0)\n"
        "    return pd.DataFrame({'n': data.n.values, 'final_mean_cos': final.values})\n")
    (folder / "README.md").write_text("# Final mean cosine against n\n")
    return folder


def test_a_study_folder_missing_a_file_says_which(cli, tmp_path):
    studies = tmp_path / "studies"
    _write_study(studies / "final_cos")
    (studies / "final_cos" / "README.md").unlink()
    result = subprocess.run([cli, "table", "final_cos", "--studies", str(studies),
                             "--out-dir", str(tmp_path / "out")], capture_output=True, text=True)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "is not a study: it lacks README.md" in result.stderr
    assert "a study folder holds experiment.toml, reduce.py, README.md" in result.stderr
    assert "unknown table or study" not in result.stderr
    assert not (tmp_path / "out").exists()


def test_nadyn_table_refuses_to_overwrite_without_force(cli, tmp_path):
    studies = tmp_path / "studies"
    _write_study(studies / "final_cos")
    out = tmp_path / "out"
    args = [cli, "table", "final_cos", "--studies", str(studies), "--out-dir", str(out), "--no-figures"]
    first = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    page = (out / "final_cos.md").read_text()
    # The page says where the study lives and how to run it again.
    assert f"Study `{(studies / 'final_cos').resolve()}/`" in page
    assert f"`nadyn table final_cos --studies {studies.resolve()}`" in page
    (out / "final_cos.md").write_text("kept\n")
    again = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert again.returncode == 2
    assert f"'{out / 'final_cos.md'}' already exists; pass --force to overwrite it" in again.stderr
    assert (out / "final_cos.md").read_text() == "kept\n"
    forced = subprocess.run(args + ["--force"], capture_output=True, text=True, timeout=300)
    assert forced.returncode == 0, forced.stderr
    assert (out / "final_cos.md").read_text() == page


def test_reproduce_script_passes_force():
    text = (REPO / "scripts" / "reproduce.sh").read_text()
    commands = [line for line in text.splitlines() if "nadyn table" in line and not line.lstrip().startswith("#")]
    assert commands and all("--force" in line for line in commands)


needs_core = pytest.mark.skipif(not nadyn.has_core, reason="needs the compiled module nadyn._core")


@needs_core
def test_progress_callback_runs_while_the_run_computes():
    seen = []
    answer = nadyn._core._simulate({"n": "64", "d": "8", "T": "200", "dt": "0.01", "every": "100"},
                                   None, False, "test", progress=seen.append)
    assert answer["status"] == "complete"
    assert seen, "no progress reported"
    assert all(0.0 <= f <= 1.0 for f in seen) and seen == sorted(seen)
    runs = []
    nadyn._core._sweep("[run]\nn = 32\nd = 4\nT = 40\n[sweep]\nseed = { range = [1, 6] }\n", "<text>",
                       [], str(pathlib.Path(tempfile.mkdtemp()) / "s.h5"), 1, False,
                       progress=lambda done, total: runs.append((done, total)))
    assert runs and all(total == 6 and 1 <= done <= 6 for done, total in runs)


@needs_core
def test_progress_bar_on_request_and_never_with_false(capsys, tmp_path):
    nadyn.simulate(n=8, d=3, T=1, progress=True)
    shown = capsys.readouterr().err
    assert "nadyn.simulate" in shown and "100%" in shown
    nadyn.simulate(n=8, d=3, T=1, progress=False)
    nadyn.simulate(n=8, d=3, T=1)  # not a terminal here: no bar by default
    assert capsys.readouterr().err == ""
    nadyn.sweep({"run": {"n": 8, "d": 3, "T": 1}, "sweep": {"seed": [1, 2, 3]}}, progress=True)
    shown = capsys.readouterr().err
    assert "nadyn.sweep" in shown and "3/3" in shown


@needs_core
def test_progress_keeps_ctrl_c(tmp_path):
    main = threading.main_thread().ident
    timer = threading.Timer(0.5, lambda: signal.pthread_kill(main, signal.SIGINT))
    timer.start()
    start = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt) as error:
            nadyn.simulate(n=256, d=16, T=1e4, dt=0.01, every=50, progress=True)
    finally:
        timer.cancel()
    assert time.monotonic() - start < 5.0
    assert error.value.trajectory.status == "interrupted"


@needs_core
def test_negative_beta_warns_once_in_python():
    with pytest.warns(RuntimeWarning, match="beta < 0: each token attends most") as caught:
        nadyn.simulate(n=6, d=3, T=0.2, beta=-1.0)
    assert sum("beta < 0" in str(w.message) for w in caught) == 1
    with pytest.warns(RuntimeWarning, match="beta < 0") as caught:
        nadyn.sweep({"run": {"n": 6, "d": 3, "T": 0.2}, "sweep": {"beta": [-2, -1]}})
    assert sum("beta < 0" in str(w.message) for w in caught) == 1


def test_python_md_usage_line_lists_every_flag_of_the_plot_command():
    help_text = subprocess.run([sys.executable, "-m", "nadyn.plot", "--help"], capture_output=True,
                               text=True, env=ENV, check=True).stdout
    flags = sorted(set(re.findall(r"(--[a-z][a-z-]*)", help_text)) - {"--help"})
    doc = (REPO / "docs" / "python.md").read_text()
    usage = doc[doc.index("/usr/bin/python3 -m nadyn.plot FILE..."):]
    usage = usage[:usage.index("\n\n")]
    assert flags and [flag for flag in flags if flag not in usage] == []
