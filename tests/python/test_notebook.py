"""examples/quickstart.ipynb executes with nbclient on Debian's ipykernel and draws its
figures (display_data outputs with PNG images)."""

from __future__ import annotations

import os

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient

from conftest import REPO


@pytest.fixture
def kernel_name(tmp_path, monkeypatch):
    if "python3" not in KernelSpecManager().find_kernel_specs():
        # No registered kernel spec: install ipykernel's into a private Jupyter path.
        from ipykernel.kernelspec import install

        install(prefix=str(tmp_path / "jupyter"))
        monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter" / "share" / "jupyter"))
    return "python3"


def test_quickstart_notebook_runs_and_draws(cli, kernel_name, monkeypatch):
    monkeypatch.setenv("NADYN_CLI", cli)
    # The kernel imports the source tree's package, as the rest of the suite does.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO / "python"), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    path = REPO / "examples" / "quickstart.ipynb"
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, kernel_name=kernel_name, timeout=300,
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
    images = [
        cell_index
        for cell_index, cell in enumerate(nb.cells)
        if cell.cell_type == "code"
        for output in cell.outputs
        if output.output_type in ("display_data", "execute_result") and "image/png" in output.get("data", {})
    ]
    # One figure each from nadyn.plot.sphere and nadyn.plot.observables.
    assert len(images) == 2
    sphere_cell = next(i for i, c in enumerate(nb.cells) if "nadyn.plot.sphere" in c.source)
    observables_cell = next(i for i, c in enumerate(nb.cells) if "nadyn.plot.observables" in c.source)
    assert images == [sphere_cell, observables_cell]
    # The movie cell shows the video (or the GIF fallback).
    movie_cell = next(c for c in nb.cells if "nadyn.plot.movie" in c.source)
    shown = [key for o in movie_cell.outputs for key in o.get("data", {})]
    assert "image/gif" in shown or any("<video" in o.get("data", {}).get("text/html", "")
                                       for o in movie_cell.outputs)
    # The Dataset's repr names its dimensions.
    dataset_cell = next(c for c in nb.cells if c.source.endswith("ds"))
    text = "".join(o.get("data", {}).get("text/plain", "") for o in dataset_cell.outputs)
    assert "Dimensions:" in text and "token: 64" in text and "dim: 3" in text
