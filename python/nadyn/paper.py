"""The paper's results: ``nadyn table all`` from the manifest ``studies/paper.toml``.

The manifest orders the studies whose tables make results/README.md and gives the README's
text around them (title, introduction, each study's heading, the figures' captions) and the
data behind the figures the script ``scripts/figures.py`` draws. ``run_all`` runs every study
of it, writes the figure data, results/README.md (:func:`results_readme`, from the manifest,
each study's README and the table it wrote) and runs the figure script. Nothing here knows a
study by name: adding a study to the README is an entry in the manifest.

    nadyn table all --out-dir results          # execs python3 -m nadyn.study table all ...
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import re
import subprocess
import sys
import time
import tomllib
from typing import Any

from . import study as studies
from .study import StudyError

MANIFEST = "paper.toml"


@dataclasses.dataclass
class Entry:
    """One study of the manifest: its folder's name, the name `nadyn table` also runs it by,
    its section's heading and the name of its table's files (<table>.md)."""

    name: str
    command: str
    heading: str
    table: str


@dataclasses.dataclass
class Manifest:
    path: pathlib.Path
    title: str
    introduction: str
    studies: list[Entry]
    figures_script: pathlib.Path | None
    figures_introduction: str
    captions: list[str]
    figure_data: dict[str, Any]


def _text(table: dict, key: str, where: str, default: str | None = None) -> str:
    value = table.get(key, default)
    if not isinstance(value, str):
        raise StudyError(f"{where}: '{key}' must be a string")
    return value


def load_manifest(directory: str | os.PathLike | None = None) -> Manifest:
    """The manifest of a folder of studies (default: :func:`nadyn.study.default_studies_directory`);
    StudyError names what is missing or malformed."""
    root = pathlib.Path(directory) if directory is not None else studies.default_studies_directory()
    path = root / MANIFEST
    if not path.is_file():
        raise StudyError(f"no manifest '{path}': `nadyn table all` runs the studies it lists "
                         "(docs/studies.md)")
    try:
        data = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise StudyError(f"{path}: {error}") from None
    entries = []
    for i, row in enumerate(data.get("study", [])):
        where = f"{path}: [[study]] {i + 1}"
        if not isinstance(row, dict):
            raise StudyError(f"{where}: not a table")
        name = _text(row, "name", where)
        entries.append(Entry(name=name, command=_text(row, "command", where, name),
                             heading=_text(row, "heading", where),
                             table=_text(row, "table", where, name)))
    if not entries:
        raise StudyError(f"{path}: no [[study]] entries")
    figures = data.get("figures", {})
    script = figures.get("script")
    captions = figures.get("captions", [])
    if not isinstance(captions, list) or not all(isinstance(c, str) for c in captions):
        raise StudyError(f"{path}: [figures] captions must be a list of strings")
    if script is not None and not (isinstance(script, str) and (path.parent / script).is_file()):
        raise StudyError(f"{path}: [figures] script {script!r} is not a file (a path relative "
                         "to the manifest)")
    return Manifest(path=path, title=_text(data, "title", str(path)),
                    introduction=_text(data, "introduction", str(path)), studies=entries,
                    figures_script=(path.parent / script) if script else None,
                    figures_introduction=_text(figures, "introduction", f"{path}: [figures]", ""),
                    captions=captions, figure_data=figures.get("data", {}))


def commands(directory: str | os.PathLike | None = None) -> dict[str, str]:
    """The names `nadyn table` runs a study by other than its folder's (``command`` in the
    manifest), to the folder's name; empty when the folder has no manifest."""
    root = pathlib.Path(directory) if directory is not None else studies.default_studies_directory()
    if not (root / MANIFEST).is_file():
        return {}
    return {e.command: e.name for e in load_manifest(root).studies if e.command != e.name}


def _without_heading(text: str) -> str:
    """The text after its first line when that is a Markdown heading, leading blank lines
    dropped."""
    if not text.startswith("#"):
        return text
    newline = text.find("\n")
    if newline < 0:
        return ""
    return text[newline:].lstrip("\n")


def study_section(manifest: Manifest, entry: Entry, out_dir: pathlib.Path) -> str:
    """A study's part of results/README.md: where it comes from, its README (the claim, the
    method, what we see) and its table as written into ``out_dir``, both without heading."""
    readme = (manifest.path.parent / entry.name / "README.md").read_text()
    table = (out_dir / f"{entry.table}.md").read_text()
    return (f"From the study `studies/{entry.name}/`, run by `nadyn table {entry.command}`.\n\n"
            + _without_heading(readme) + "\n" + _without_heading(table))


def results_readme(manifest: Manifest, out_dir: str | os.PathLike, invocation: str,
                   seconds: float) -> str:
    """results/README.md from the manifest and the tables in ``out_dir``: ``invocation`` is
    the command line that made them, ``seconds`` its wall time."""
    out = pathlib.Path(out_dir)
    introduction = (manifest.introduction.replace("{invocation}", invocation)
                    .replace("{seconds}", str(int(seconds))))
    parts = [f"# {manifest.title}\n\n", introduction, "\n\n"]
    for entry in manifest.studies:
        parts += [f"## {entry.heading}\n\n", study_section(manifest, entry, out), "\n"]
    parts += ["## Figures\n\n", manifest.figures_introduction, "\n\n"]
    parts += [f"{i}. {caption}\n" for i, caption in enumerate(manifest.captions, 1)]
    return "".join(parts)


# ---- the data behind the figures the script draws ------------------------------------------

def _core():
    import nadyn

    core = nadyn._core if nadyn.has_core else None
    if studies.compiled_sweeps() is None or core is None:
        return None
    return core if all(hasattr(core, f) for f in ("_reduced", "_simulate", "scheme_names")) \
        else None


def _scheme_names_of(nadyn: str) -> list[str]:
    """The schemes, from `nadyn reduced --help` ("Normalisation scheme: a, b, ...")."""
    help_text = studies.run_child([nadyn, "reduced", "--help"], stdout=subprocess.PIPE).stdout
    found = re.search(r"Normalisation scheme: ([\w, -]+)", help_text or "")
    if not found:
        raise StudyError(f"cannot read the schemes from '{nadyn} reduced --help'")
    return [name.strip() for name in found.group(1).split(",") if name.strip()]


def _symmetric_start(spec: dict, path: pathlib.Path, nadyn: str | None) -> None:
    """gamma(t) of the scalar ODE for every scheme at t = T i / samples, i = 0..samples."""
    samples, T = int(spec["samples"]), float(spec["T"])
    times = [T * i / samples for i in range(samples + 1)]
    lines = ["scheme,t,gamma,gap,velocity,r\n"]
    core = _core()
    program = None if core is not None else studies.nadyn_program(nadyn)
    for scheme in core.scheme_names() if core is not None else _scheme_names_of(program):
        if core is not None:
            s = core._reduced(scheme, float(spec["n"]), float(spec["beta"]), 1.0, 1.0,
                              float(spec["t_switch"]), times, 1e-13)
            rows = zip(s["t"], s["gamma"], s["gap"], s["velocity"], s["r"])
        else:  # `nadyn reduced` samples at (i / samples) T: the same times to round-off
            text = studies.run_child(
                [program, "reduced", "--scheme", scheme, "--n", repr(float(spec["n"])),
                 "--beta", repr(float(spec["beta"])), "--t-switch", repr(float(spec["t_switch"])),
                 "--T", repr(T), "--samples", str(samples), "--csv"], stdout=subprocess.PIPE)
            if text.returncode != 0:
                raise subprocess.CalledProcessError(text.returncode, text.args)
            rows = [tuple(float(v) for v in line.split(","))
                    for line in text.stdout.splitlines()[1:] if line]
        lines += ["%s,%.10g,%.17g,%.17g,%.17g,%.17g\n" % (scheme, *row) for row in rows]
    studies.write_whole(path, "".join(lines))


def _sphere(spec: dict, data_dir: pathlib.Path, nadyn: str | None) -> None:
    """Trajectory files with positions, one per scheme: sphere_<scheme>.h5."""
    settings = {k: v for k, v in spec.items() if k != "schemes"}
    core = _core()
    for scheme in spec["schemes"]:
        path = data_dir / f"sphere_{scheme}.h5"
        if core is not None:
            import nadyn

            try:
                nadyn.simulate(scheme=scheme, **settings, out=path, force=True)
            except ValueError as error:
                raise StudyError(str(error)) from error
            continue
        command = [studies.nadyn_program(nadyn), "simulate", "--scheme", scheme]
        for key, value in settings.items():
            command += [f"--{key}", str(value)]
        done = studies.run_child(command + ["--out", str(path), "--force", "--quiet"],
                                 stdout=subprocess.DEVNULL)
        if done.returncode != 0:
            raise subprocess.CalledProcessError(done.returncode, command)


def write_figure_data(manifest: Manifest, data_dir: pathlib.Path, nadyn: str | None = None) -> None:
    """The data of [figures.data]: symmetric_start.csv and the sphere_<scheme>.h5 files."""
    studies.make_directory(data_dir)
    data = manifest.figure_data
    if "symmetric_start" in data:
        _symmetric_start(data["symmetric_start"], data_dir / "symmetric_start.csv", nadyn)
    if "sphere" in data:
        _sphere(data["sphere"], data_dir, nadyn)


# ---- nadyn table all -----------------------------------------------------------------------

def _note(message: str) -> None:
    print(f"nadyn table: {message}", file=sys.stderr, flush=True)


def run_all(directory: pathlib.Path, out: pathlib.Path, *, figures: bool = True,
            nadyn: str | None = None, invocation: str = "nadyn table all",
            force: bool = False) -> pathlib.Path:
    """Every study of the manifest into ``out`` (in full, no figure when ``figures`` is
    False), the figure data, results/README.md (``out``/README.md) and the figures; returns
    the README's path. ``force``: replace the files of an earlier run (without it, an
    existing README.md or study table is refused before anything runs)."""
    start = time.monotonic()
    manifest = load_manifest(directory)
    for entry in manifest.studies:  # every study loads before the first runs
        studies.load(directory / entry.name)
    studies.make_directory(out)
    readme = out / "README.md"
    studies.refuse_non_regular(readme)
    studies.refuse_overwrite(force, readme, *(out / f"{entry.table}.md" for entry in manifest.studies))
    for entry in manifest.studies:
        _note(f"study {entry.name} ({int(time.monotonic() - start)} s)")
        result = studies.run(studies.load(directory / entry.name), out, figures=figures,
                             nadyn=nadyn, force=force)
        if result.markdown.name != f"{entry.table}.md":
            raise StudyError(f"{manifest.path}: the study {entry.name} wrote "
                             f"{result.markdown.name}, not {entry.table}.md (its 'table')")
    _note(f"figure data ({int(time.monotonic() - start)} s)")
    write_figure_data(manifest, out / "data", nadyn)
    studies.write_whole(readme, results_readme(manifest, out, invocation,
                                               time.monotonic() - start))
    if figures and manifest.figures_script is not None:
        command = [sys.executable, str(manifest.figures_script), str(out)]
        _note("figures: " + " ".join(command))
        done = studies.run_child(command, stdout=sys.stderr)
        if done.returncode != 0:
            raise studies.StudyFailure("the figure script failed: " + " ".join(command))
    _note(f"done in {int(time.monotonic() - start)} s; see {readme}")
    return readme
