#!/usr/bin/python3
"""Writes the seed corpus of the fuzz targets into fuzz/seeds/ (committed; rerun to refresh).

input_files: small HDF5 init and weights files, valid and near-valid, each prefixed with the
two bytes the target reads n and d from (n = 1 + b0 % 8, d = 2 + b1 % 8).
cli_parse: command lines, one argv token per line.
"""
import os
import tempfile

import h5py
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
seeds = os.path.join(here, "seeds")


def hdf5_seed(name, n, d, fill):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "seed.h5")
        with h5py.File(path, "w", libver="earliest") as f:
            fill(f)
        with open(path, "rb") as f:
            body = f.read()
    with open(os.path.join(seeds, "input_files", name), "wb") as out:
        out.write(bytes([n - 1, d - 2]) + body)


rng = np.random.default_rng(1)


def init_full(f):  # the documented init file: theta0 (n x d) and r0 (n)
    f["theta0"] = rng.normal(size=(3, 3))
    f["r0"] = np.array([1.0, 2.0, 0.5])


def init_float32(f):  # single precision, no r0
    f["theta0"] = rng.normal(size=(2, 4)).astype(np.float32)


def init_r0_row(f):  # r0 as a 1 x n matrix, integer directions
    f["theta0"] = np.eye(2, dtype=np.int32)
    f["r0"] = np.ones((1, 2))


def weights_full(f):  # Q, K, V (d x d)
    for name in "QKV":
        f[name] = rng.normal(size=(3, 3))


def weights_v_only(f):  # a missing matrix is the identity
    f["V"] = np.array([[1, 2], [3, 4]], dtype=np.int16)


def both_chunked(f):  # init and weights in one file, chunked, deflate + shuffle, in a group
    opts = dict(chunks=True, compression="gzip", shuffle=True)
    f.create_dataset("theta0", data=rng.normal(size=(2, 2)), **opts)
    f.create_dataset("Q", data=rng.normal(size=(2, 2)), **opts)
    f.create_dataset("K", data=rng.normal(size=(2, 2)), maxshape=(None, 2), chunks=(1, 2))
    f.create_group("extra").attrs["note"] = "unused"


def wrong_kinds(f):  # theta0 a group, Q a string, K 3-D, V with a NaN
    f.create_group("theta0")
    f["Q"] = np.array([b"ab", b"cd"])
    f["K"] = np.zeros((2, 2, 2))
    f["V"] = np.array([[1.0, np.nan], [0.0, 1.0]])


def links(f):  # a soft link, a dangling link and an empty dataset
    f["data"] = rng.normal(size=(2, 3))
    f["theta0"] = h5py.SoftLink("/data")
    f["Q"] = h5py.SoftLink("/missing")
    f.create_dataset("r0", shape=(0,), dtype="f8")


os.makedirs(os.path.join(seeds, "input_files"), exist_ok=True)
hdf5_seed("init_full", 3, 3, init_full)
hdf5_seed("init_float32", 2, 4, init_float32)
hdf5_seed("init_r0_row", 2, 2, init_r0_row)
hdf5_seed("weights_full", 1, 3, weights_full)
hdf5_seed("weights_v_only", 1, 2, weights_v_only)
hdf5_seed("both_chunked", 2, 2, both_chunked)
hdf5_seed("wrong_kinds", 2, 2, wrong_kinds)
hdf5_seed("links", 2, 3, links)

command_lines = {
    "simulate_small": ["simulate", "--n", "8", "--d", "3", "--T", "1", "--quiet"],
    "simulate_every_flag": ["simulate", "--scheme=mix-ln", "--t-switch", "0.5", "--integrator",
                            "dopri5", "--rtol", "1e-6", "--atol", "0", "--init", "cap:0.1",
                            "--weights", "random", "--seed", "7", "--r0", "2", "--alpha", "0.5",
                            "--causal", "--every", "3", "--positions", "none", "--threads", "1",
                            "--cluster-eps", "0.01", "--compress", "--out", "run.h5", "--force"],
    "simulate_files": ["simulate", "--init", "file:init.h5", "--weights", "file:w.h5",
                       "--integrator", "layers", "--dt", "1", "--beta=2.5"],
    "simulate_bad": ["simulate", "--n", "010", "--seed", "-1", "--every", "0x10", "--T", "nan"],
    "inspect": ["inspect", "run.h5", "--csv", "--rows", "5"],
    "reduced": ["reduced", "--scheme", "peri-ln", "--n", "256", "--spacing", "log", "--samples",
                "50", "--csv"],
    "table": ["table", "initial", "--format", "csv", "--seeds", "1", "2", "--n", "64"],
    "help": ["simulate", "--help"],
    "version": ["--version"],
}
os.makedirs(os.path.join(seeds, "cli_parse"), exist_ok=True)
for name, tokens in command_lines.items():
    with open(os.path.join(seeds, "cli_parse", name), "w") as out:
        out.write("\n".join(tokens))


# ---- whole_files: real nadyn files, written by the nadyn program -------------------------
# (NADYN_CLI, else build/bin/nadyn; skipped with a message when neither exists)

def whole_file_seeds():
    import shutil
    import signal
    import subprocess
    import time

    cli = os.environ.get("NADYN_CLI") or os.path.join(here, "..", "build", "bin", "nadyn")
    if not os.path.exists(cli):
        print("whole_files seeds skipped: no nadyn program at %s (set NADYN_CLI)" % cli)
        return
    out_dir = os.path.join(seeds, "whole_files")
    os.makedirs(out_dir, exist_ok=True)
    small = ["--n", "4", "--d", "3", "--T", "0.5", "--dt", "0.05", "--quiet"]
    with tempfile.TemporaryDirectory() as tmp:
        def run(*args):
            subprocess.run([cli, *args], cwd=tmp, check=True, capture_output=True)

        run("simulate", *small, "--out", "complete.h5")
        run("simulate", *small, "--no-swmr", "--weights", "random", "--out", "no_swmr.h5")
        with open(os.path.join(tmp, "e.toml"), "w") as f:
            f.write("[run]\nn = 3\nd = 2\nT = 0.2\ndt = 0.1\n[sweep]\nseed = [1, 2]\n")
        run("sweep", "e.toml", "--out", "sweep.h5", "--quiet")
        # Killed in SWMR mode: the file stays marked as being written.
        proc = subprocess.Popen([cli, "simulate", "--n", "4", "--d", "3", "--T", "1e6",
                                 "--every", "1", "--out", "killed.h5", "--quiet"], cwd=tmp)
        path = os.path.join(tmp, "killed.h5")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (not os.path.exists(path) or
                                               os.path.getsize(path) < 60000):
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        for name in ("complete.h5", "no_swmr.h5", "sweep.h5", "killed.h5"):
            shutil.copy(os.path.join(tmp, name), os.path.join(out_dir, name))


whole_file_seeds()
