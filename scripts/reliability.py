#!/usr/bin/python3
"""Reliability report: /usr/bin/python3 scripts/reliability.py [--nadyn PATH] [--out FILE]

Tries, in a fresh temporary directory, every way a nadyn run can go wrong (bad inputs,
SIGINT/SIGTERM, SIGKILL in SWMR mode, resume and rerun, a numerical blow-up, a full disk,
an impossible memory request, thread counts), observes what nadyn did (exit status, stderr,
the frames in the file before and after, bitwise comparisons with uninterrupted runs) and
writes a Markdown table to results/reliability.md. Exits 1 if any scenario misses its
expectation. Needs only the standard library and Debian's h5py and numpy; about a minute
on 2 cores.
"""
import argparse
import datetime
import hashlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REGENERATE = "/usr/bin/python3 scripts/reliability.py"
TIMEOUT = 120.0  # seconds any single nadyn invocation may take before it counts as hung

SIGNAL_NAMES = {signal.SIGINT: "SIGINT", signal.SIGTERM: "SIGTERM", signal.SIGKILL: "SIGKILL"}


# ----------------------------------------------------------------------------------------
# Running nadyn


class Result:
    """One finished process: exit status (negative: killed by that signal), output."""

    def __init__(self, args, status, out, err, seconds):
        self.args, self.status, self.out, self.err, self.seconds = args, status, out, err, seconds


def _child_setup():
    # A run started from a terminal has SIGINT and SIGTERM at their defaults; make sure the
    # child does too even when this script itself was started with them ignored (nohup, &).
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


class Runner:
    def __init__(self, nadyn, root):
        self.nadyn, self.root = nadyn, root

    def start(self, args, cwd, env=None):
        return subprocess.Popen([self.nadyn] + args, cwd=cwd, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, preexec_fn=_child_setup,
                                env=env)

    @staticmethod
    def finish(proc, args, started, timeout=TIMEOUT):
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()  # our own child, by its pid
            out, err = proc.communicate()
            err = "(timed out after %.0f s and was killed) " % timeout + err
        return Result(args, proc.returncode, out, err, time.monotonic() - started)

    def run(self, args, cwd, timeout=TIMEOUT, env=None):
        started = time.monotonic()
        return self.finish(self.start(args, cwd, env), args, started, timeout)

    def run_shell(self, command, cwd, timeout=TIMEOUT):
        started = time.monotonic()
        proc = subprocess.Popen(["/bin/sh", "-c", command], cwd=cwd, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, preexec_fn=_child_setup)
        return self.finish(proc, command, started, timeout)

    def show(self, args):
        """A command as the table shows it: `nadyn ...` with the temporary root as $TMP."""
        text = args if isinstance(args, str) else " ".join(
            ["nadyn"] + [shlex.quote(a) for a in args])
        return self.clean(text.replace(self.nadyn, "nadyn"))

    def clean(self, text):
        return text.replace(self.root, "$TMP")


def status_text(status):
    if status is None:
        return "—"
    if status < 0:
        return SIGNAL_NAMES.get(-status, "signal %d" % -status)
    return str(status)


def first_line(text):
    for line in text.splitlines():
        if line.strip():
            return line
    return "(empty)"


# ----------------------------------------------------------------------------------------
# Reading trajectory files


class Trajectory:
    """Every series of a nadyn file, cut to the frames all `step` datasets agree on."""

    def __init__(self, path, swmr=False):
        try:
            f = h5py.File(path, "r", swmr=swmr)
        except OSError:
            if swmr:
                raise
            f = h5py.File(path, "r", swmr=True)  # a file still marked as SWMR-written
        with f:
            status = f.attrs.get("status", b"")
            self.status = status.decode() if isinstance(status, bytes) else str(status)
            names = []

            def visit(name, obj):
                if isinstance(obj, h5py.Dataset) and (name.startswith("observables/") or
                                                      name.startswith("particles/")):
                    names.append(name)

            f.visititems(visit)
            self.lengths = {name: f[name].shape[0] for name in names}
            steps = [name for name in names if name.endswith("/step")]
            self.frames = min(self.lengths[name] for name in steps) if steps else 0
            self.series = {name: f[name][: self.frames] for name in names}
            self.parameters = {k: v for k, v in f["parameters"].attrs.items()}
            self.steps = self.series["observables/mean_cos/step"]
            self.times = self.series["observables/mean_cos/time"]

    def positions(self):
        return self.series.get("particles/tokens/position/value")

    def parameter(self, name):
        value = self.parameters.get(name)
        if isinstance(value, bytes):
            return value.decode()
        if isinstance(value, np.ndarray) and value.shape == ():
            return value.item()
        return value


def in_swmr_write_mode(path):
    """Whether the superblock (version 3, at offset 0) says a SWMR writer has the file.

    Read as plain bytes, without HDF5's file lock: while nadyn creates the file, writes its
    header or reopens it at the end it holds the file without SWMR, and a reader's lock in
    those moments makes the run itself fail (see the report's notes). The live reads of this
    script therefore only open the file while the writer is in SWMR mode."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(12)
    except OSError:
        return False
    return (len(head) == 12 and head[:8] == b"\x89HDF\r\n\x1a\n" and head[8] >= 3
            and head[11] & 0x04 != 0)


def live_frames(path):
    """Frames a SWMR reader sees right now, or None when the file cannot be opened yet."""
    if not in_swmr_write_mode(path):
        return None
    try:
        with h5py.File(path, "r", swmr=True) as f:
            lengths = []

            # The frame series' steps; /cluster_history/merges/step counts merge events, not
            # frames (a run without a merger keeps it at 0).
            def visit(name, obj):
                if (isinstance(obj, h5py.Dataset) and name.endswith("/step")
                        and not name.startswith("cluster_history/")):
                    lengths.append(obj.shape[0])

            f.visititems(visit)
            return min(lengths) if lengths else 0
    except Exception:  # not created yet, not yet in SWMR mode, or mid-creation
        return None


def wait_for_frames(proc, path, want, timeout=60.0):
    """Polls the growing file until it holds `want` frames; None if the run ended first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return None
        count = live_frames(path)
        if count is not None and count >= want:
            return count
        time.sleep(0.01)
    return None


def compare(reference, other):
    """(frames lost, frames differing): every series of every frame, bit for bit."""
    lost = max(0, reference.frames - other.frames)
    differing = 0
    names = set(reference.series) | set(other.series)
    for f in range(min(reference.frames, other.frames)):
        for name in names:
            a, b = reference.series.get(name), other.series.get(name)
            if a is None or b is None or a[f].tobytes() != b[f].tobytes():
                differing += 1
                break
    return lost, differing


def unit_norm_problems(traj):
    """Frames whose positions are not finite unit vectors."""
    pos = traj.positions()
    if pos is None:
        return []
    bad = []
    for f in range(traj.frames):
        frame = pos[f]
        if not np.all(np.isfinite(frame)) or np.max(np.abs(
                np.linalg.norm(frame, axis=1) - 1.0)) > 1e-12:
            bad.append(f)
    return bad


def cadence_lost(steps, every, up_to_step):
    """Steps on the cadence 0, every, 2 every, ... <= up_to_step that are missing."""
    present = set(int(s) for s in steps)
    return sum(1 for s in range(0, int(up_to_step) + 1, every) if s not in present)


def snapshot(path):
    st = os.stat(path)
    with open(path, "rb") as fh:
        digest = hashlib.sha256(fh.read()).hexdigest()
    return digest, st.st_size, st.st_mtime_ns


def make_old(path):
    old = time.time() - 48 * 3600  # an old mtime, so even a same-bytes rewrite would show
    os.utime(path, (old, old))


def frames_of(path):
    try:
        return Trajectory(path, swmr=True).frames
    except Exception:
        return None


# ----------------------------------------------------------------------------------------
# The report


class Row:
    def __init__(self, scenario, command, expected, got, stderr, frames="—", lost="—",
                 problems=None):
        self.scenario, self.command, self.expected, self.got = scenario, command, expected, got
        self.stderr, self.frames, self.lost = stderr, frames, lost
        self.problems = problems or []

    @property
    def ok(self):
        return not self.problems


class Check:
    """Collects the expectations a scenario misses."""

    def __init__(self):
        self.problems = []

    def __call__(self, condition, problem):
        if not condition:
            self.problems.append(problem)
        return condition


def one_line_refusal(check, result, substrings, status=2):
    check(result.status == status,
          "exit status %s, expected %d" % (status_text(result.status), status))
    check(result.err.endswith("\n") and result.err.count("\n") == 1,
          "stderr has %d lines, expected exactly one" % result.err.count("\n"))
    check(result.err.startswith("nadyn: "), "stderr does not start with 'nadyn: '")
    for part in substrings:
        check(part in result.err, "stderr does not mention %r" % part)


class Report:
    def __init__(self, runner, root):
        self.runner, self.root, self.rows = runner, root, []
        self.counter = 0
        self.inputs = os.path.join(root, "inputs")
        os.makedirs(self.inputs)

    def case_dir(self, name):
        self.counter += 1
        path = os.path.join(self.root, "%02d_%s" % (self.counter, re.sub(r"\W+", "_", name)))
        os.makedirs(path)
        return path

    def add(self, row):
        self.rows.append(row)
        print("%-4s %s%s" % ("OK" if row.ok else "FAIL", row.scenario,
                             "" if row.ok else ": " + "; ".join(row.problems)), flush=True)

    # ---- inputs shared by the bad-input cases --------------------------------------------

    def prepare_inputs(self):
        r = self.runner
        ramp = np.arange(1, 19, dtype=float).reshape(6, 3) / 10.0
        with open(os.path.join(self.inputs, "text.h5"), "w") as fh:
            fh.write("theta0 = [[1, 0, 0]]\n")
        with h5py.File(os.path.join(self.inputs, "no_theta0.h5"), "w") as f:
            f["theta"] = ramp
        with h5py.File(os.path.join(self.inputs, "wrong_shape.h5"), "w") as f:
            f["theta0"] = np.arange(1, 25, dtype=float).reshape(6, 4) / 10.0
        with h5py.File(os.path.join(self.inputs, "zero_row.h5"), "w") as f:
            z = ramp.copy()
            z[2] = 0.0
            f["theta0"] = z
        with h5py.File(os.path.join(self.inputs, "nan_theta0.h5"), "w") as f:
            z = ramp.copy()
            z[1, 0] = np.nan
            f["theta0"] = z
        with h5py.File(os.path.join(self.inputs, "wrong_q.h5"), "w") as f:
            f["Q"] = np.arange(1, 13, dtype=float).reshape(3, 4) / 10.0
            f["K"] = np.eye(3)
        # A small complete trajectory: the "existing file" every refusal must leave alone.
        self.complete = os.path.join(self.inputs, "complete.h5")
        res = r.run(["simulate", "--n", "6", "--d", "3", "--T", "0.5", "--dt", "0.05",
                     "--out", self.complete, "--quiet"], self.inputs)
        if res.status != 0:
            raise SystemExit("cannot write a small trajectory: " + res.err)
        # A stopped run without positions (it cannot be resumed).
        self.nopos = os.path.join(self.inputs, "nopos.h5")
        started = time.monotonic()
        proc = r.start(["simulate", "--n", "256", "--d", "16", "--T", "1000", "--dt", "0.01",
                        "--every", "5", "--positions", "none", "--out", self.nopos, "--quiet"],
                       self.inputs)
        if wait_for_frames(proc, self.nopos, 2) is not None:
            proc.send_signal(signal.SIGINT)
        res = r.finish(proc, [], started)
        if res.status != 130:
            raise SystemExit("cannot write a stopped --positions none file: exit %s, %s"
                             % (status_text(res.status), res.err))

    # ---- 1. bad inputs ----------------------------------------------------------------------

    def bad_simulate(self, label, args, expect, horizon=True, scenario="1 bad input"):
        """A refused `simulate`: once into an empty directory (nothing may appear), once
        with --force onto an existing trajectory (it must stay byte for byte)."""
        check = Check()
        base = ["simulate"] + (["--T", "0.1"] if horizon else []) + args
        fresh_dir = self.case_dir(label + "_fresh")
        fresh_args = base + ["--out", "x.h5", "--quiet"]
        fresh = self.runner.run(fresh_args, fresh_dir)
        one_line_refusal(check, fresh, expect)
        check(fresh.out == "", "stdout not empty")
        check(os.listdir(fresh_dir) == [], "created %s" % os.listdir(fresh_dir))

        force_dir = self.case_dir(label + "_force")
        target = os.path.join(force_dir, "x.h5")
        shutil.copyfile(self.complete, target)
        make_old(target)
        before, frames_before = snapshot(target), frames_of(target)
        forced = self.runner.run(base + ["--out", "x.h5", "--quiet", "--force"], force_dir)
        one_line_refusal(check, forced, expect)
        check(snapshot(target) == before, "--force: the existing file was modified")
        check(os.listdir(force_dir) == ["x.h5"], "--force: directory now holds %s"
              % os.listdir(force_dir))
        self.add(Row("%s: %s" % (scenario, label), self.runner.show(fresh_args),
                     "2", "%s, %s" % (status_text(fresh.status), status_text(forced.status)),
                     self.runner.clean(first_line(fresh.err)),
                     "%s → %s (--force onto it)" % (frames_before, frames_of(target)), "—",
                     check.problems))

    def bad_in_place(self, label, args, expect, target_source=None, scenario="1 bad input"):
        """A refused command that names its own file (inspect, resume, --out without
        --force, an unwritable path): nothing appears, the named file stays as it was."""
        check = Check()
        cwd = self.case_dir(label)
        target = None
        if target_source:
            target = os.path.join(cwd, os.path.basename(target_source))
            shutil.copyfile(target_source, target)
            make_old(target)
            before, frames_before = snapshot(target), frames_of(target)
        listing = sorted(os.listdir(cwd))
        res = self.runner.run(args, cwd)
        one_line_refusal(check, res, expect)
        check(res.out == "", "stdout not empty")
        check(sorted(os.listdir(cwd)) == listing, "directory changed: %s" % os.listdir(cwd))
        frames = "—"
        if target:
            check(snapshot(target) == before, "the file was modified")
            frames = "%s → %s" % (frames_before, frames_of(target))
        for arg in args:  # an output path outside cwd must not appear either
            if arg.startswith("/nonexistent"):
                check(not os.path.exists(os.path.dirname(arg)), "%s was created" % arg)
        self.add(Row("%s: %s" % (scenario, label), self.runner.show(args), "2",
                     status_text(res.status), self.runner.clean(first_line(res.err)), frames,
                     "—", check.problems))

    def bad_inputs(self):
        i = self.inputs
        six = ["--n", "6", "--d", "3"]
        sim = [
            ("unknown scheme", ["--scheme", "layer-norm"],
             ["'layer-norm'", "post-ln, pre-ln, mix-ln, peri-ln, ngpt, sqrt-scaling"]),
            ("unknown integrator", ["--integrator", "rk45"],
             ["'rk45'", "rk4, dopri5, euler, layers"]),
            ("n = 0", ["--n", "0"], ["n must be at least 1"]),
            ("d = 1", ["--d", "1"], ["d must be at least 2"]),
            ("beta nan", ["--beta", "nan"], ["beta must be a finite number"]),
            ("T inf", ["--T", "inf"], ["T must be a finite number >= 0"], False),
            ("T -1", ["--T", "-1"], ["T must be a finite number >= 0", "-1"], False),
            ("dt 0", ["--dt", "0"], ["dt must be a finite number > 0"]),
            ("r0 -1", ["--r0", "-1"], ["r0 must be a finite number > 0"]),
            ("alpha 0", ["--alpha", "0"], ["alpha must be a finite number > 0"]),
            ("orthogonal with n > d", ["--init", "orthogonal", "--n", "5", "--d", "3"],
             ["needs n <= d"]),
            ("init file missing", ["--init", "file:" + i + "/missing.h5"] + six,
             [i + "/missing.h5", "no such file"]),
            ("init file not HDF5", ["--init", "file:" + i + "/text.h5"] + six,
             [i + "/text.h5", "not an HDF5 file"]),
            ("init file without theta0", ["--init", "file:" + i + "/no_theta0.h5"] + six,
             ["no dataset 'theta0'"]),
            ("theta0 wrong shape", ["--init", "file:" + i + "/wrong_shape.h5"] + six,
             ["'theta0'", "must be 6 x 3", "found 6 x 4"]),
            ("theta0 with a zero row", ["--init", "file:" + i + "/zero_row.h5"] + six,
             ["row 2", "is zero"]),
            ("theta0 with NaN", ["--init", "file:" + i + "/nan_theta0.h5"] + six,
             ["'theta0'", "non-finite"]),
            ("weights Q wrong shape", ["--weights", "file:" + i + "/wrong_q.h5"],
             ["dataset 'Q'", "must be 3 x 3", "found 3 x 4"]),
            ("per-layer weights held for no time",
             ["--weights", "random-per-layer", "--integrator", "rk4", "--layer-time", "0"],
             ["layer-time", "> 0"]),
            ("unknown precision", ["--precision", "half"],
             ["unknown precision 'half'", "double, float"]),
            ("CLI parse error --bogus", ["--bogus"], ["--bogus"]),
            ("--n 010x", ["--n", "010x"], ["--n", "010x"]),
        ]
        for case in sim:
            self.bad_simulate(*case)
        if os.path.exists("/nonexistent"):
            self.add(Row("1 bad input: unwritable output path", "—", "2", "—", "—",
                         problems=["/nonexistent exists on this machine; case not tried"]))
        else:
            self.bad_in_place("unwritable output path",
                              ["simulate", "--T", "0.1", "--out", "/nonexistent/x.h5",
                               "--quiet"], ["/nonexistent/x.h5"])
        self.bad_in_place("existing output without --force",
                          ["simulate", "--T", "0.1", "--out", "complete.h5", "--quiet"],
                          ["complete.h5", "already exists", "--force"], self.complete)
        self.bad_in_place("inspect a missing file", ["inspect", i + "/missing.h5"],
                          [i + "/missing.h5", "no such file"])
        self.bad_in_place("inspect a text file", ["inspect", i + "/text.h5"],
                          [i + "/text.h5", "not an HDF5 file"])
        self.bad_in_place("resume a complete file, no larger --T",
                          ["simulate", "--resume", "complete.h5", "--quiet"],
                          ["complete.h5", "complete", "--T"], self.complete)
        self.bad_in_place("resume with a disagreeing --beta",
                          ["simulate", "--resume", "complete.h5", "--T", "1", "--beta", "5",
                           "--quiet"], ["beta = 5", "disagrees"], self.complete)
        self.bad_in_place("resume a --positions none file",
                          ["simulate", "--resume", "nopos.h5", "--quiet"],
                          ["nopos.h5", "positions"], self.nopos)

    # ---- 2. SIGINT and SIGTERM ----------------------------------------------------------

    def signal_stop(self, sig):
        name = SIGNAL_NAMES[sig]
        check = Check()
        cwd = self.case_dir(name)
        every = 20
        args = ["simulate", "--n", "256", "--d", "16", "--T", "1000", "--dt", "0.01",
                "--every", str(every), "--out", "run.h5", "--quiet"]
        path = os.path.join(cwd, "run.h5")
        started = time.monotonic()
        proc = self.runner.start(args, cwd)
        live = wait_for_frames(proc, path, 3)
        check(live is not None, "the run ended (or stalled) before 3 frames were readable")
        if live is not None:
            proc.send_signal(sig)
        res = self.runner.finish(proc, args, started)
        want = 128 + sig  # 130 for SIGINT, 143 for SIGTERM
        check(res.status == want, "exit status %s, expected %d" % (status_text(res.status), want))
        frames, lost = "—", "—"
        try:
            t = Trajectory(path)
            check(t.status == "interrupted", "status %r, expected 'interrupted'" % t.status)
            steps = [int(s) for s in t.steps]
            check(all(b > a for a, b in zip(steps, steps[1:])), "steps not strictly increasing")
            check(steps[:-1] == list(range(0, every * (len(steps) - 1), every)),
                  "frames before the stop are not the cadence 0, 20, 40, ...")
            check(live is None or t.frames >= live,
                  "%d frames after the stop, %s were readable before" % (t.frames, live))
            check(len(set(t.lengths.values())) == 1, "series of unequal length")
            check(t.parameter("frames") == t.frames, "/parameters frames disagrees")
            check(not unit_norm_problems(t), "positions not finite unit vectors")
            n_lost = cadence_lost(steps, every, steps[-1])
            check(n_lost == 0, "%d cadence frames missing" % n_lost)
            frames, lost = "%s (live) → %d" % (live, t.frames), str(n_lost)
        except Exception as e:  # noqa: BLE001 - any unreadable file is the finding
            check(False, "file unreadable: %s" % e)
        self.add(Row("2 signal: %s during a run" % name, self.runner.show(args) + "; " + name
                     + " after ≥3 frames", str(128 + sig), status_text(res.status),
                     first_line(res.err), frames, lost, check.problems))

    # ---- 3. SIGKILL (SWMR) ------------------------------------------------------------------

    def sigkill_readable(self):
        check = Check()
        cwd = self.case_dir("sigkill")
        every = 20
        args = ["simulate", "--n", "256", "--d", "16", "--T", "1000", "--dt", "0.01",
                "--every", str(every), "--out", "killed.h5", "--quiet"]
        path = os.path.join(cwd, "killed.h5")
        started = time.monotonic()
        proc = self.runner.start(args, cwd)
        live = wait_for_frames(proc, path, 3)
        check(live is not None, "the run ended (or stalled) before 3 frames were readable")
        live_inspect = self.runner.run(["inspect", "killed.h5"], cwd)
        check(live_inspect.status == 0 and "running" in live_inspect.out,
              "nadyn inspect of the live file: exit %s" % status_text(live_inspect.status))
        live = live_frames(path)  # the count just before the kill
        proc.send_signal(signal.SIGKILL)
        res = self.runner.finish(proc, args, started)
        check(res.status == -signal.SIGKILL, "not killed: exit %s" % status_text(res.status))
        frames, lost = "—", "—"
        after = None
        try:
            t = Trajectory(path, swmr=True)
            after = t.frames
            check(t.status == "running", "status %r, expected 'running'" % t.status)
            check(live is not None and t.frames >= live,
                  "%d frames after the kill, %s read live just before" % (t.frames, live))
            check([int(s) for s in t.steps] == list(range(0, every * t.frames, every)),
                  "steps are not the cadence 0, 20, 40, ...")
            bad = unit_norm_problems(t)
            check(not bad, "frames %s torn (not finite unit vectors)" % bad[:5])
            n_lost = max(0, (live or 0) - t.frames)
            frames, lost = "%s (live) → %d" % (live, t.frames), str(n_lost)
        except Exception as e:  # noqa: BLE001
            check(False, "h5py (swmr=True) cannot read the killed file: %s" % e)
        inspect = self.runner.run(["inspect", "killed.h5"], cwd)
        check(inspect.status == 0, "nadyn inspect: exit %s: %s"
              % (status_text(inspect.status), first_line(inspect.err)))
        m = re.search(r"^frames\s+(\d+)", inspect.out, re.M)
        check(m is not None and after is not None and int(m.group(1)) == after,
              "nadyn inspect reports %s frames, h5py %s" % (m and m.group(1), after))
        tools = []
        if shutil.which("h5clear") and shutil.which("h5dump"):
            clear = subprocess.run(["h5clear", "-s", path], capture_output=True, text=True)
            dump = subprocess.run(["h5dump", "-H", path], capture_output=True, text=True)
            check(clear.returncode == 0, "h5clear -s: exit %d" % clear.returncode)
            check(dump.returncode == 0, "h5dump -H after h5clear -s: exit %d" % dump.returncode)
            tools = ["h5clear -s, h5dump -H: %d, %d" % (clear.returncode, dump.returncode)]
        else:
            check(False, "h5clear/h5dump not installed")
        self.add(Row("3 SIGKILL during a run (SWMR): readable", self.runner.show(args)
                     + "; SIGKILL after ≥3 frames; inspect; " + "; ".join(tools),
                     "SIGKILL, inspect 0", "%s, inspect %s" % (status_text(res.status),
                                                               status_text(inspect.status)),
                     first_line(res.err), frames, lost, check.problems))

    # ---- 3, 4. stop, resume, compare with the uninterrupted run ----------------------------

    def stop_and_resume(self, scenario, sig, run_args, clear_first=False):
        check = Check()
        cwd = self.case_dir(scenario)
        reference = self.runner.run(["simulate"] + run_args + ["--out", "full.h5", "--quiet"],
                                    cwd)
        check(reference.status == 0, "uninterrupted run: exit %s: %s"
              % (status_text(reference.status), first_line(reference.err)))
        args = ["simulate"] + run_args + ["--out", "part.h5", "--quiet"]
        path = os.path.join(cwd, "part.h5")
        started = time.monotonic()
        proc = self.runner.start(args, cwd)
        live = wait_for_frames(proc, path, 3)
        check(live is not None, "the run ended before 3 frames were readable (too fast to "
              "stop: make the run longer)")
        if live is not None:
            live = live_frames(path)
            proc.send_signal(sig)
        stopped = self.runner.finish(proc, args, started)
        want = -signal.SIGKILL if sig == signal.SIGKILL else 128 + sig
        check(stopped.status == want, "stopped run: exit %s, expected %s"
              % (status_text(stopped.status), status_text(want)))
        part_frames = frames_of(path)
        check(part_frames is not None and live is not None and part_frames >= live,
              "%s frames after the stop, %s read live before it" % (part_frames, live))
        resume_args = ["simulate", "--resume", "part.h5", "--quiet"]
        shown_resume = self.runner.show(resume_args)
        if clear_first:
            clear = subprocess.run(["h5clear", "-s", path], capture_output=True, text=True)
            check(clear.returncode == 0, "h5clear -s: exit %d" % clear.returncode)
            shown_resume = "h5clear -s part.h5; " + shown_resume
        resumed = self.runner.run(resume_args, cwd)
        check(resumed.status == 0, "resume: exit %s: %s"
              % (status_text(resumed.status), first_line(resumed.err)))
        frames, lost = "—", "—"
        try:
            full, part = Trajectory(os.path.join(cwd, "full.h5")), Trajectory(path)
            check(part.status == "complete", "status after resume %r" % part.status)
            n_lost, differing = compare(full, part)
            extra = max(0, part.frames - full.frames)
            check(n_lost == 0 and differing == 0 and extra == 0,
                  "%d frames lost, %d differ, %d extra" % (n_lost, differing, extra))
            frames = "%s (live) → %s stopped → %d resumed (uninterrupted: %d)" % (
                live, part_frames, part.frames, full.frames)
            lost = "%d (%d differ)" % (n_lost, differing)
        except Exception as e:  # noqa: BLE001
            check(False, "cannot compare: %s" % e)
        err = next((first_line(r.err) for r in (stopped, resumed, reference)
                    if r.err.strip()), "(empty)")
        self.add(Row(scenario, self.runner.show(args) + "; %s after ≥3 frames; "
                     % SIGNAL_NAMES[sig] + shown_resume,
                     "%s, 0" % status_text(want), "%s, %s" % (status_text(stopped.status),
                                                              status_text(resumed.status)),
                     self.runner.clean(err), frames, lost, check.problems))

    # ---- 5. rerun -------------------------------------------------------------------------

    def rerun(self, label, run_args):
        check = Check()
        cwd = self.case_dir("rerun_" + label)
        original = self.runner.run(["simulate"] + run_args + ["--out", "orig.h5", "--quiet"],
                                   cwd)
        check(original.status == 0, "original run: exit %s" % status_text(original.status))
        args = ["rerun", "orig.h5", "--out", "again.h5"]
        res = self.runner.run(args, cwd)
        check(res.status == 0, "rerun: exit %s" % status_text(res.status))
        frames, lost = "—", "—"
        try:
            a, b = Trajectory(os.path.join(cwd, "orig.h5")), Trajectory(
                os.path.join(cwd, "again.h5"))
            n_lost, differing = compare(a, b)
            check(n_lost == 0 and differing == 0 and a.frames == b.frames,
                  "%d frames lost, %d differ" % (n_lost, differing))
            check(b.status == "complete", "rerun status %r" % b.status)
            frames, lost = "%d → %d" % (a.frames, b.frames), "%d (%d differ)" % (n_lost,
                                                                                differing)
        except Exception as e:  # noqa: BLE001
            check(False, "cannot compare: %s" % e)
        self.add(Row("5 rerun (%s)" % label, self.runner.show(
            ["simulate"] + run_args + ["--out", "orig.h5"]) + "; " + self.runner.show(args),
            "0", status_text(res.status), first_line(res.err), frames, lost, check.problems))

    # ---- 6. numerical fault -------------------------------------------------------------

    def numerical_fault(self):
        check = Check()
        cwd = self.case_dir("nan")
        args = ["simulate", "--scheme", "pre-ln", "--r0", "1e-300", "--n", "8", "--d", "3",
                "--T", "1", "--dt", "0.1", "--out", "nan.h5", "--quiet"]
        res = self.runner.run(args, cwd)
        one_line_refusal(check, res, ["t = ", "token"], status=1)
        frames, lost = "—", "—"
        try:
            t = Trajectory(os.path.join(cwd, "nan.h5"))
            check(t.status == "failed", "status %r, expected 'failed'" % t.status)
            check(t.frames >= 1, "no frame kept")
            pos = t.positions()
            check(t.frames >= 1 and np.all(np.isfinite(pos[-1])), "last frame not finite")
            m = re.search(r"t = ([0-9.eE+-]+)", res.err)
            every, dt = int(t.parameter("every")), float(t.parameter("dt"))
            fail_t = float(m.group(1)) if m else float("inf")
            # Every cadence frame strictly before the failure time must be in the file.
            due = [s for s in range(0, 10 ** 6, every) if s * dt < fail_t and s * dt <= 1.0]
            n_lost = sum(1 for s in due if s not in set(int(x) for x in t.steps))
            check(n_lost == 0, "%d frames before t = %g missing" % (n_lost, fail_t))
            frames, lost = "— → %d" % t.frames, str(n_lost)
        except Exception as e:  # noqa: BLE001
            check(False, "file unreadable: %s" % e)
        self.add(Row("6 numerical fault (pre-ln, r0 = 1e-300)", self.runner.show(args), "1",
                     status_text(res.status), first_line(res.err), frames, lost,
                     check.problems))

    # ---- 7. disk full -------------------------------------------------------------------

    def disk_full(self):
        check = Check()
        cwd = self.case_dir("full")
        every = 10
        command = ("trap '' XFSZ; ulimit -f 2048; exec %s simulate --n 128 --d 16 --T 10 "
                   "--dt 0.01 --every %d --out full.h5 --quiet" % (self.runner.nadyn, every))
        res = self.runner.run_shell(command, cwd)
        one_line_refusal(check, res, ["no space", "full.h5"], status=1)
        frames, lost = "—", "—"
        try:
            t = Trajectory(os.path.join(cwd, "full.h5"))
            check(t.status == "failed", "status %r, expected 'failed'" % t.status)
            check(len(set(t.lengths.values())) == 1, "series of unequal length: %s"
                  % sorted(set(t.lengths.values())))
            check([int(s) for s in t.steps] == list(range(0, every * t.frames, every)),
                  "steps are not the cadence 0, 10, 20, ...")
            check(t.frames >= 2, "only %d frames" % t.frames)
            bad = unit_norm_problems(t)
            check(not bad, "frames %s unreadable or torn" % bad[:5])
            mags = t.series["particles/tokens/magnitude/value"]
            check(bool(np.all(np.isfinite(mags))), "magnitudes not finite")
            m = re.search(r"frames written so far \((\d+)\)", res.err)
            reported = int(m.group(1)) if m else None
            check(reported is None or reported == t.frames,
                  "stderr says %s frames, the file holds %d" % (reported, t.frames))
            n_lost = max(0, (reported or 0) - t.frames)
            frames = "%s (reported) → %d readable" % (reported, t.frames)
            lost = str(n_lost)
        except Exception as e:  # noqa: BLE001
            check(False, "file unreadable: %s" % e)
        self.add(Row("7 disk full (ulimit -f 2048 = 1 MiB)", self.runner.show(
            command.replace(self.runner.nadyn, "nadyn")), "1", status_text(res.status),
            first_line(res.err), frames, lost, check.problems))

    # ---- 9. threads ---------------------------------------------------------------------

    def threads(self):
        check = Check()
        cwd = self.case_dir("threads")
        base = ["simulate", "--n", "128", "--d", "8", "--T", "10", "--dt", "0.01", "--every",
                "20", "--weights", "random", "--causal", "--quiet"]
        statuses, trajs = [], []
        for k in (1, 2, 3):
            res = self.runner.run(base + ["--threads", str(k), "--out", "t%d.h5" % k], cwd)
            statuses.append(status_text(res.status))
            check(res.status == 0, "--threads %d: exit %s" % (k, status_text(res.status)))
            try:
                trajs.append(Trajectory(os.path.join(cwd, "t%d.h5" % k)))
            except Exception as e:  # noqa: BLE001
                check(False, "--threads %d: unreadable: %s" % (k, e))
        frames, lost = "—", "—"
        if len(trajs) == 3:
            used = [t.parameter("threads") for t in trajs]
            check(used == [1, 2, 3], "threads recorded %s" % used)
            results = [compare(trajs[0], t) for t in trajs[1:]]
            for k, (n_lost, differing) in zip((2, 3), results):
                check(n_lost == 0 and differing == 0 and trajs[0].frames == trajs[k - 1].frames,
                      "--threads %d vs 1: %d lost, %d differ" % (k, n_lost, differing))
            frames = " = ".join(str(t.frames) for t in trajs)
            lost = "%d (%d differ)" % (sum(r[0] for r in results), sum(r[1] for r in results))
        self.add(Row("9 threads 1, 2, 3: bitwise equal", self.runner.show(
            base + ["--threads", "K"]) + " for K = 1, 2, 3", "0, 0, 0", ", ".join(statuses),
            "(empty)", frames, lost, check.problems))

    # ---- 10-15. faults of the output file -----------------------------------------------

    SWEEP = ("[run]\nn = 64\nd = 16\nT = 4\ndt = 0.02\nevery = 10\nweights = \"gaussian\"\n"
             "positions = \"all\"\n[sweep]\nseed = { range = [1, 4] }\n"
             "scheme = [\"pre-ln\", \"peri-ln\", \"post-ln\"]\n")

    @staticmethod
    def sweep_arrays(path):
        with h5py.File(path, "r") as f:
            return {k: f[k][()] for k in f if k not in ("wall_time",) and
                    isinstance(f[k], h5py.Dataset) and f[k].dtype.kind in "fiu"}

    def sweep_disk_full(self):
        check = Check()
        cwd = self.case_dir("sweep_full")
        with open(os.path.join(cwd, "e.toml"), "w") as f:
            f.write(self.SWEEP)
        ref = self.runner.run(["sweep", "e.toml", "--out", "ref.h5", "--quiet"], cwd)
        check(ref.status == 0, "reference sweep: exit %s" % status_text(ref.status))
        command = ("trap '' XFSZ; ulimit -f 2048; exec %s sweep e.toml --out s.h5 --quiet"
                   % self.runner.nadyn)
        res = self.runner.run_shell(command, cwd)
        one_line_refusal(check, res, ["no space", "s.h5", "--resume"], status=1)
        frames, lost = "—", "—"
        try:
            with h5py.File(os.path.join(cwd, "s.h5"), "r") as f:
                status, written = f["status"][()].ravel(), f["frames"][()].ravel()
                mean_cos = f["mean_cos"][()].reshape(len(status), -1)
            complete = [i for i in range(len(status)) if status[i] == 1]
            bad = [i for i in complete if written[i] != 21 or
                   not np.all(np.isfinite(mean_cos[i]))]
            check(not bad, "runs %s marked complete without their data" % bad)
            resumed = self.runner.run(["sweep", "--resume", "s.h5", "--quiet"], cwd)
            check(resumed.status == 0, "--resume: exit %s" % status_text(resumed.status))
            a, b = self.sweep_arrays(os.path.join(cwd, "ref.h5")), \
                self.sweep_arrays(os.path.join(cwd, "s.h5"))
            differing = [k for k in a if not np.array_equal(a[k], b.get(k), equal_nan=True)]
            check(not differing, "resumed sweep differs from the uninterrupted one in %s"
                  % differing)
            frames = "%d of 12 runs kept; resumed: 12, bitwise the uninterrupted sweep" \
                % len(complete)
            lost = str(len(bad))
        except Exception as e:  # noqa: BLE001
            check(False, "file unreadable: %s" % e)
        self.add(Row("10 sweep runs out of space (ulimit -f 2048 = 2 MiB), then --resume",
                     self.runner.show(command.replace(self.runner.nadyn, "nadyn")), "1",
                     status_text(res.status), first_line(res.err), frames, lost,
                     check.problems))

    def force_not_regular(self):
        check = Check()
        cwd = self.case_dir("force_special")
        fifo = os.path.join(cwd, "fifo")
        os.mkfifo(fifo)
        targets = [fifo]
        device = os.path.join(cwd, "null")
        try:
            os.mknod(device, 0o666 | 0o020000, os.makedev(1, 3))  # a copy of /dev/null
            targets.append(device)
        except OSError:
            pass
        got = []
        for target in targets:
            before = os.lstat(target)
            res = self.runner.run(["simulate", "--T", "1", "--out", target, "--force"], cwd)
            got.append(status_text(res.status))
            one_line_refusal(check, res, ["not a regular file"])
            after = os.lstat(target) if os.path.lexists(target) else None
            check(after is not None and after.st_ino == before.st_ino and
                  after.st_mode == before.st_mode, "%s was removed or replaced" % target)
        self.add(Row("11 --force on a device or FIFO (a copy of /dev/null)",
                     "nadyn simulate --out null --force (and --out fifo)", "2",
                     ", ".join(got), self.runner.clean(first_line(res.err)), "—", "0 (left alone)",
                     check.problems))

    def two_writers(self):
        check = Check()
        cwd = self.case_dir("two_writers")
        args = ["simulate", "--n", "128", "--d", "8", "--T", "2", "--quiet", "--out", "x.h5"]
        outcomes = []
        for force in (False, True):
            for _ in range(3):
                if not force and os.path.exists(os.path.join(cwd, "x.h5")):
                    os.remove(os.path.join(cwd, "x.h5"))
                started = time.monotonic()
                a = self.runner.start(args + (["--force"] if force else []), cwd)
                b = self.runner.start(args + (["--force"] if force else []), cwd)
                ra = self.runner.finish(a, args, started)
                rb = self.runner.finish(b, args, started)
                outcomes.append("%s/%s" % (status_text(ra.status), status_text(rb.status)))
                for r in (ra, rb):
                    check(r.status in (0, 2), "exit %s" % status_text(r.status))
                    if r.status == 2:
                        one_line_refusal(check, r, [])
                check(0 in (ra.status, rb.status), "neither run wrote the file")
                try:
                    t = Trajectory(os.path.join(cwd, "x.h5"))
                    check(t.status == "complete" and t.frames == 101,
                          "file %s with %d frames" % (t.status, t.frames))
                except Exception as e:  # noqa: BLE001
                    check(False, "file unreadable: %s" % e)
        self.add(Row("12 two runs, same --out (3 times without --force, 3 with)",
                     "nadyn simulate ... --out x.h5 & nadyn simulate ... --out x.h5",
                     "0 and 2 (or 0 and 0 one after the other)", ", ".join(outcomes),
                     "being written by another process", "101 each time", "0",
                     check.problems))

    def resume_live(self):
        check = Check()
        cwd = self.case_dir("resume_live")
        args = ["simulate", "--n", "1024", "--d", "16", "--T", "400", "--every", "1",
                "--out", "live.h5", "--quiet"]
        started = time.monotonic()
        writer = self.runner.start(args, cwd)
        path = os.path.join(cwd, "live.h5")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (os.path.exists(path) and
                                                   os.path.getsize(path) > 300000):
            time.sleep(0.05)
        res = self.runner.run(["simulate", "--resume", "live.h5", "--T", "500"], cwd)
        one_line_refusal(check, res, ["being written by another process"])
        writer.send_signal(signal.SIGINT)
        w = self.runner.finish(writer, args, started)
        check(w.status == 130, "the writer: exit %s" % status_text(w.status))
        frames = "—"
        try:
            t = Trajectory(path)
            check(t.status == "interrupted", "status %r" % t.status)
            bad = unit_norm_problems(t)
            check(not bad, "frames %s torn" % bad[:5])
            frames = "%d, all whole" % t.frames
        except Exception as e:  # noqa: BLE001
            check(False, "file unreadable: %s" % e)
        self.add(Row("13 --resume of a file a run is still writing (SWMR)",
                     "nadyn simulate --resume live.h5 --T 500", "2", status_text(res.status),
                     first_line(res.err), frames, "0", check.problems))

    def header_limits(self):
        check = Check()
        cwd = self.case_dir("header_limits")
        statuses = set()
        for kib in range(16, 641, 16):
            out = "l%d.h5" % kib
            res = self.runner.run_shell(
                "trap '' XFSZ; ulimit -f %d; exec %s simulate --n 64 --d 16 --weights gaussian "
                "--T 2 --out %s --quiet" % (kib, self.runner.nadyn, out), cwd)
            statuses.add(status_text(res.status))
            check(res.status in (1, 2), "%d KiB: exit %s" % (kib, status_text(res.status)))
            check(res.err.count("\n") == 1, "%d KiB: %d lines on stderr"
                  % (kib, res.err.count("\n")))
            if os.path.exists(os.path.join(cwd, out)):
                try:
                    t = Trajectory(os.path.join(cwd, out))
                    check(t.status == "failed" and t.frames >= 1,
                          "%d KiB: file %s with %d frames" % (kib, t.status, t.frames))
                except Exception as e:  # noqa: BLE001
                    check(False, "%d KiB: file unreadable: %s" % (kib, e))
        self.add(Row("14 file size limit 16, 32, ..., 640 KiB: header and first frames",
                     "ulimit -f K; nadyn simulate --n 64 --d 16 --weights gaussian --T 2",
                     "1 or 2", ", ".join(sorted(statuses)), "no space ... (one line)",
                     "no file, or whole frames", "0", check.problems))

    def early_kill(self):
        check = Check()
        cwd = self.case_dir("early_kill")
        outcomes = {}
        for delay in (0.002, 0.005, 0.01, 0.02, 0.03, 0.04, 0.06, 0.08, 0.1, 0.15):
            path = os.path.join(cwd, "k.h5")
            if os.path.exists(path):
                os.remove(path)
            # d = 512 with gaussian weights: a header of 6 MB, so that some kills land in it.
            proc = self.runner.start(["simulate", "--n", "64", "--d", "512", "--weights",
                                      "gaussian", "--out", "k.h5", "--quiet"], cwd)
            time.sleep(delay)
            proc.kill()
            proc.communicate()
            if not os.path.exists(path):
                outcomes["no file"] = outcomes.get("no file", 0) + 1
                continue
            res = self.runner.run(["simulate", "--T", "1", "--out", "k.h5", "--quiet"], cwd)
            key = "new run: exit %s" % status_text(res.status)
            outcomes[key] = outcomes.get(key, 0) + 1
            if res.status != 0:
                # Refused only when the killed run had written a frame.
                check("already exists" in res.err, "refused: %s" % first_line(res.err))
                check(Trajectory(path).frames >= 1, "refused a file without a frame")
        self.add(Row("15 SIGKILL in the first 2-150 ms, then a new run with the same --out",
                     "nadyn simulate --out k.h5 (killed); nadyn simulate --out k.h5",
                     "0 unless a frame was written", ", ".join(
                         "%s × %d" % kv for kv in sorted(outcomes.items())),
                     "(empty)", "—", "0", check.problems))

    # ---- 16-19. experiments, memory, ranks, observables -------------------------------

    def experiment_refusals(self):
        i = self.inputs
        files = {
            "missing.toml": "[run]\nn = 4\ninit = \"file:/nonexistent/x.h5\"\n"
                            "[sweep]\nseed = [1, 2]\n",
            "empty.toml": "",
            "string.toml": "[run]\nbeta = \"4\"\n[sweep]\nseed = [1, 2]\n",
            "twice.toml": "[run]\nt_switch = 1\nt-switch = 2\n[sweep]\nseed = [1, 2]\n",
        }
        for name, text in files.items():
            with open(os.path.join(i, name), "w") as f:
                f.write(text)
        cases = [
            ("a sweep whose init file is missing", ["missing.toml"], ["/nonexistent/x.h5"]),
            ("a directory as the experiment", [i], ["not a regular file"]),
            ("/dev/zero as the experiment", ["/dev/zero"], ["not a regular file"]),
            ("an empty experiment", ["empty.toml"], ["neither a [run] nor a [sweep]"]),
            ("a number given as a string", ["string.toml"], ["\"4\"", "not a number"]),
            ("a key given twice under two spellings", ["twice.toml"], ["t_switch"]),
        ]
        for label, args, expect in cases:
            paths = [os.path.join(i, a) if a.endswith(".toml") else a for a in args]
            self.bad_in_place(label, ["sweep"] + paths + ["--out", "s.h5"], expect,
                              scenario="16 bad experiment")

    def memory_of_weights(self):
        self.bad_simulate("d = 40000 with gaussian weights (n = 2)",
                          ["--n", "2", "--d", "40000", "--weights", "gaussian"],
                          ["GiB", "weights"], scenario="17 memory estimate")

    def inconsistent_ranks(self):
        mpirun = shutil.which("mpirun")
        if not mpirun:
            return
        check = Check()
        cwd = self.case_dir("ranks")
        nadyn = self.runner.nadyn
        command = ("%s --allow-run-as-root --oversubscribe -np 1 %s simulate --beta 4 --T 1 "
                   "--out m.h5 --quiet : -np 1 %s simulate --beta 5 --T 1 --out m.h5 --quiet"
                   % (mpirun, nadyn, nadyn))
        res = self.runner.run_shell(command, cwd)
        check(res.status == 2, "exit %s, expected 2" % status_text(res.status))
        lines = [line for line in res.err.splitlines() if line.startswith("nadyn:")]
        check(len(lines) == 1, "%d lines from nadyn on stderr" % len(lines))
        check(not os.path.exists(os.path.join(cwd, "m.h5")), "m.h5 was written")
        self.add(Row("18 MPI ranks started with different arguments (beta 4 and 5)",
                     "mpirun -np 1 nadyn simulate --beta 4 : -np 1 nadyn simulate --beta 5",
                     "2", status_text(res.status), lines[0] if lines else "(none)", "no file",
                     "—", check.problems))

    def sweep_observables(self):
        check = Check()
        cwd = self.case_dir("sweep_observables")
        with open(os.path.join(cwd, "e.toml"), "w") as f:
            f.write("[run]\nn = 8\nd = 2\nT = 1\nobserve = \"unselectable\"\n"
                    "[sweep]\nseed = [1, 2]\n")
        res = self.runner.run(["sweep", "e.toml", "--out", "s.h5", "--quiet"], cwd)
        check(res.status == 0, "exit %s" % status_text(res.status))
        got = "—"
        try:
            with h5py.File(os.path.join(cwd, "s.h5"), "r") as f:
                check("unselectable" in f, "no unselectable dataset")
                check(f["clusters"].dtype == np.int64, "clusters is %s" % f["clusters"].dtype)
                got = "unselectable %s, clusters %s" % (
                    "present" if "unselectable" in f else "absent", f["clusters"].dtype)
        except Exception as e:  # noqa: BLE001
            check(False, "file unreadable: %s" % e)
        self.add(Row("19 sweep with observe = \"unselectable\": its dataset, and clusters' type",
                     "nadyn sweep e.toml --out s.h5", "0", status_text(res.status), got, "—",
                     "—", check.problems))

    # ---- everything ---------------------------------------------------------------------

    # ---- 20-22. silent wrong data: step counts, changed inputs, a resume killed early ----

    def step_counts(self):
        for label, args in (("T / dt past 2^63 (dt 1e-20)", ["--T", "0.5", "--dt", "1e-20"]),
                            ("T 1e300", ["--T", "1e300"]),
                            ("dt 5e-324", ["--T", "0.5", "--dt", "5e-324"])):
            self.bad_simulate(label, ["--n", "8"] + args, ["T / dt is too large"],
                              horizon=False, scenario="20 step count")
        check = Check()
        cwd = self.case_dir("sweep_tiny_dt")
        with open(os.path.join(cwd, "e.toml"), "w") as f:
            f.write("[run]\nn = 8\nT = 0.5\n[sweep]\ndt = [0.01, 1e-300]\n")
        args = ["sweep", "e.toml", "--out", "s.h5", "--quiet"]
        res = self.runner.run(args, cwd)
        one_line_refusal(check, res, ["T / dt is too large"])
        check(sorted(os.listdir(cwd)) == ["e.toml"], "created %s" % os.listdir(cwd))
        self.add(Row("20 step count: sweep with dt = 1e-300", self.runner.show(args), "2",
                     status_text(res.status), self.runner.clean(first_line(res.err)), "—", "—",
                     check.problems))

    def changed_inputs(self):
        check = Check()
        cwd = self.case_dir("changed_init")
        init = os.path.join(cwd, "init64.h5")

        def write_init(shift):
            with h5py.File(init, "w") as f:
                f["theta0"] = np.arange(1.0, 19.0).reshape(6, 3) + shift

        write_init(0.0)
        with open(os.path.join(cwd, "e.toml"), "w") as f:
            f.write('[run]\nn = 6\nd = 3\nT = 0.2\ninit = "file:init64.h5"\n'
                    '[sweep]\nbeta = [1, 2, 3]\n')
        made = self.runner.run(["sweep", "e.toml", "--out", "s.h5", "--quiet"], cwd)
        check(made.status == 0, "the sweep failed: %s" % first_line(made.err))
        write_init(0.5)
        before = snapshot(os.path.join(cwd, "s.h5"))
        args = ["sweep", "--resume", "s.h5", "--quiet"]
        res = self.runner.run(args, cwd)
        one_line_refusal(check, res, ["init64.h5", "changed since"])
        check(snapshot(os.path.join(cwd, "s.h5")) == before, "the sweep file was modified")
        self.add(Row("21 sweep --resume after its init file changed", self.runner.show(args),
                     "2", status_text(res.status), self.runner.clean(first_line(res.err)),
                     "—", "—", check.problems))

    def resume_killed_early(self):
        check = Check()
        cwd = self.case_dir("resume_killed_early")
        source = os.path.join(REPO, "tests", "regression", "data", "resume_killed_early.h5")
        path = os.path.join(cwd, "k.h5")
        shutil.copyfile(source, path)
        inspected = self.runner.run(["inspect", "k.h5"], cwd)
        check(inspected.status == 0, "inspect: %s" % first_line(inspected.err))
        frames_before = frames_of(path)
        args = ["simulate", "--resume", "k.h5", "--quiet"]
        res = self.runner.run(args, cwd)
        check(res.status == 0, "resume: %s" % first_line(res.err))
        self.add(Row("22 a resume killed in its first ms (file marked open), then inspect "
                     "and --resume", "nadyn inspect k.h5; " + self.runner.show(args),
                     "0, 0", "%s, %s" % (status_text(inspected.status), status_text(res.status)),
                     self.runner.clean(first_line(res.err)) or "(empty)",
                     "%s → %s" % (frames_before, frames_of(path)), "0", check.problems))

    # ---- 23-24. a stub left at creation; a FIFO as an input ----
    def creation_stub(self):
        check = Check()
        cwd = self.case_dir("creation_stub")
        source = os.path.join(REPO, "tests", "regression", "data", "sweep_killed_8ms.h5")
        with open(os.path.join(cwd, "e.toml"), "w") as f:
            f.write("[run]\nn = 8\nT = 0.5\n[sweep]\nseed = [1, 2]\n")
        shutil.copyfile(source, os.path.join(cwd, "i.h5"))
        inspected = self.runner.run(["inspect", "i.h5"], cwd)
        check(inspected.status == 2 and "holds no" in inspected.err,
              "inspect: exit %s: %s" % (status_text(inspected.status), first_line(inspected.err)))
        shutil.copyfile(source, os.path.join(cwd, "s.h5"))
        args = ["sweep", "e.toml", "--out", "s.h5", "--quiet"]
        res = self.runner.run(args, cwd)
        check(res.status == 0, "sweep over the stub: %s" % first_line(res.err))
        self.add(Row("23 a 48-byte stub of a sweep killed at 8 ms: inspect, then a new sweep",
                     "nadyn inspect i.h5; " + self.runner.show(args), "2, 0",
                     "%s, %s" % (status_text(inspected.status), status_text(res.status)),
                     self.runner.clean(first_line(inspected.err)), "—", "—", check.problems))

    def fifo_inputs(self):
        check = Check()
        cwd = self.case_dir("fifo_inputs")
        fifo = os.path.join(cwd, "pipe.h5")
        os.mkfifo(fifo)
        statuses, line = [], ""
        commands = [["inspect", "pipe.h5"], ["simulate", "--resume", "pipe.h5"],
                    ["simulate", "--n", "8", "--T", "0.1", "--init", "file:pipe.h5", "--out",
                     "x.h5"]]
        for args in commands:
            res = self.runner.run(args, cwd)
            statuses.append(status_text(res.status))
            check(res.status == 2 and "not a regular file" in res.err,
                  "%s: exit %s: %s" % (args[0], status_text(res.status), first_line(res.err)))
            line = line or self.runner.clean(first_line(res.err))
        self.add(Row("24 a FIFO as inspect's file, --resume's, and --init file:",
                     "; ".join(self.runner.show(a) for a in commands), "2, 2, 2",
                     ", ".join(statuses), line, "—", "—", check.problems))

    # ---- 25. nadyn table: signals, its children, refused outputs and studies ----

    def table_study(self, root, name, runs="n = [4, 8]", T=2.0, reduce_code=None):
        """A study of files only under root/studies: the final mean cosine against n."""
        folder = os.path.join(root, "studies", name)
        os.makedirs(folder)
        with open(os.path.join(folder, "experiment.toml"), "w") as f:
            f.write("[run]\nd = 4\nT = %r\ndt = 0.01\npositions = \"none\"\n"
                    "[sweep]\n%s\nseed = [1]\n" % (T, runs))
        with open(os.path.join(folder, "reduce.py"), "w") as f:
            f.write(reduce_code or (
                "import pandas as pd\n"
                "def reduce(data):\n"
                "    final = data.mean_cos.isel(time=-1, seed=0)\n"
                "    return pd.DataFrame({'n': data.n.values, 'final_mean_cos': final.values})\n"))
        with open(os.path.join(folder, "README.md"), "w") as f:
            f.write("# Final mean cosine\n")
        return os.path.join(root, "studies")

    @staticmethod
    def processes_naming(text):
        found = []
        for entry in os.listdir("/proc"):
            if entry.isdigit() and int(entry) != os.getpid():
                try:
                    with open("/proc/%s/cmdline" % entry, "rb") as fh:
                        if text.encode() in fh.read():
                            found.append(int(entry))
                except OSError:
                    continue
        return found

    def table_signal(self, sig, mode):
        check = Check()
        cwd = self.case_dir("table_%s_%s" % (SIGNAL_NAMES[sig], mode))
        studies = self.table_study(cwd, "slow", runs="n = [64, 64, 64, 64, 64, 64, 64, 64]",
                                   T=4000.0)
        env = dict(os.environ, NADYN_STUDY_SWEEPS=mode)
        args = ["table", "slow", "--studies", studies, "--out-dir", "out", "--no-figures"]
        started = time.monotonic()
        proc = self.runner.start(args, cwd, env)
        sweep = os.path.join(cwd, "out", "data", "slow.h5")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None and not os.path.exists(sweep):
            time.sleep(0.02)
        time.sleep(0.5)
        check(proc.poll() is None, "the study ended before the signal")
        proc.send_signal(sig)
        res = self.runner.finish(proc, args, started)
        if sig == signal.SIGKILL:
            expected = "SIGKILL"
            check(res.status == -signal.SIGKILL, "exit %s" % status_text(res.status))
        else:
            expected = str(128 + sig)
            check(res.status == 128 + sig, "exit %s, expected %d" % (status_text(res.status),
                                                                    128 + sig))
            check(res.err.count("\n") == 1 and "Traceback" not in res.err,
                  "stderr has %d lines" % res.err.count("\n"))
            check(res.err.startswith("nadyn: interrupted by %s" % SIGNAL_NAMES[sig]),
                  "stderr: %s" % first_line(res.err))
        left = []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            left = self.processes_naming(os.path.join(cwd, "studies"))
            if not left:
                break
            time.sleep(0.05)
        check(not left, "%d processes still running" % len(left))
        again = self.runner.run(args + ["--set", "sweep.n=[4]", "--set", "run.T=1"], cwd,
                                env=env)
        check(again.status == 0, "the same command again: exit %s: %s"
              % (status_text(again.status), first_line(again.err)))
        self.add(Row("25 nadyn table: %s during a study's sweep (%s), then the same command"
                     % (SIGNAL_NAMES[sig], "nadyn sweep children" if mode == "cli"
                        else "in process when the module is built"),
                     self.runner.show(args) + " (NADYN_STUDY_SWEEPS=%s)" % mode,
                     "%s, 0" % expected, "%s, %s" % (status_text(res.status),
                                                    status_text(again.status)),
                     self.runner.clean(first_line(res.err)) if res.err else "(empty)",
                     "—", "—", check.problems))

    def table_refusal(self, label, prepare, expect, reduce_code=None, args_extra=()):
        check = Check()
        cwd = self.case_dir("table_" + label)
        studies = self.table_study(cwd, "final_cos", reduce_code=reduce_code)
        kept = prepare(cwd)
        args = ["table", "final_cos", "--studies", studies, "--out-dir", "out"] + list(args_extra)
        res = self.runner.run(args, cwd, timeout=60)
        one_line_refusal(check, res, expect)
        check("Traceback" not in res.err, "a traceback on stderr")
        for path in kept or []:
            check(os.path.exists(path) and not os.path.isfile(path), "%s was replaced" % path)
        check(not os.path.isfile(os.path.join(cwd, "out", "final_cos.md")), "final_cos.md written")
        self.add(Row("25 nadyn table: " + label, self.runner.show(args), "2",
                     status_text(res.status), self.runner.clean(first_line(res.err)), "—", "—",
                     check.problems))

    def table_read_only(self):
        prefix = None
        for candidate in (["unshare", "-m"], ["unshare", "-rm"]):
            if shutil.which("unshare") and subprocess.run(
                    candidate + ["sh", "-c", "mount -t tmpfs -o ro tmpfs /mnt"],
                    capture_output=True).returncode == 0:
                prefix = candidate
                break
        label = "--out-dir on a read-only file system"
        if prefix is None:
            self.add(Row("25 nadyn table: " + label, "—", "2", "not tried (no mount namespace)",
                         "—"))
            return
        check = Check()
        cwd = self.case_dir("table_read_only")
        studies = self.table_study(cwd, "final_cos")
        mount = os.path.join(cwd, "ro")
        os.makedirs(mount)
        command = ("mount -t tmpfs -o ro tmpfs %s && exec %s table final_cos --studies %s "
                   "--out-dir %s/out" % (mount, self.runner.nadyn, studies, mount))
        res = self.runner.run_shell(" ".join(shlex.quote(p) for p in prefix) + " sh -c "
                                    + shlex.quote(command), cwd)
        one_line_refusal(check, res, ["cannot create output directory", mount + "/out",
                                      "Read-only file system"])
        self.add(Row("25 nadyn table: " + label, "nadyn table final_cos --out-dir ro/out "
                     "(ro: a read-only tmpfs)", "2", status_text(res.status),
                     self.runner.clean(first_line(res.err)), "—", "—", check.problems))

    def table_cases(self):
        for mode in ("cli", "auto"):
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.table_signal(sig, mode)
        self.table_signal(signal.SIGKILL, "cli")

        def fifo(name):
            def prepare(cwd):
                os.makedirs(os.path.join(cwd, "out"))
                path = os.path.join(cwd, "out", name)
                os.mkfifo(path)
                return [path]
            return prepare

        self.table_refusal("a FIFO at <name>.md.partial", fifo("final_cos.md.partial"),
                           ["final_cos.md.partial", "not a regular file"])
        self.table_refusal("a FIFO at <name>.md", fifo("final_cos.md"),
                           ["final_cos.md'", "not a regular file"])
        self.table_refusal("a reduce.py with a syntax error", lambda cwd: None,
                           ["reduce.py:2: SyntaxError"],
                           reduce_code="import pandas\ndef reduce(data)\n    pass\n")
        self.table_refusal("a reduce.py whose import fails", lambda cwd: None,
                           ["reduce.py:1: ModuleNotFoundError", "no_such_module"],
                           reduce_code="import no_such_module\ndef reduce(data):\n    pass\n")
        self.table_read_only()

    # ---- 26-33. unclear errors (issue 35): the message names the real problem ----

    def dangling_link(self):
        check = Check()
        cwd = self.case_dir("dangling_link")
        os.symlink("gone/target.h5", os.path.join(cwd, "out.h5"))
        args = ["simulate", "--n", "8", "--T", "0.1", "--out", "out.h5", "--force", "--quiet"]
        res = self.runner.run(args, cwd)
        one_line_refusal(check, res, ["dangling symbolic link", "'gone/target.h5'"])
        check(os.listdir(cwd) == ["out.h5"] and os.path.islink(os.path.join(cwd, "out.h5")),
              "directory now holds %s" % os.listdir(cwd))
        self.add(Row("26 a dangling symlink as --out (with --force)", self.runner.show(args),
                     "2", status_text(res.status), self.runner.clean(first_line(res.err)),
                     "no file", "—", check.problems))

    def zero_attention(self):
        v0 = os.path.join(self.inputs, "v_zero.h5")
        with h5py.File(v0, "w") as f:
            f["V"] = np.zeros((3, 3))
        g0 = os.path.join(self.inputs, "gain_zero.h5")
        with h5py.File(g0, "w") as f:
            f["gain"] = np.zeros(3)
        six = ["--n", "6", "--d", "3"]
        self.bad_simulate("peri-ln with V = 0", six + ["--scheme", "peri-ln", "--weights",
                                                        "file:" + v0],
                          ["peri-ln with V = 0", "divides by ‖A_k‖"],
                          scenario="28 degenerate attention")
        self.bad_simulate("ngpt with a zero LayerNorm gain",
                          six + ["--scheme", "ngpt", "--norm", "layernorm", "--ln-params",
                                 "file:" + g0],
                          ["ngpt with a zero LayerNorm gain", "divides by ‖A_k‖"],
                          scenario="28 degenerate attention")

    def set_newline(self):
        check = Check()
        cwd = self.case_dir("set_newline")
        with open(os.path.join(cwd, "e.toml"), "w") as f:
            f.write("[run]\nn = 8\nT = 0.2\n[sweep]\nseed = [1, 2]\n")
        args = ["sweep", "e.toml", "--set", "run.n=16\nrun.beta=9", "--out", "s.h5", "--quiet"]
        res = self.runner.run(args, cwd)
        one_line_refusal(check, res, ["a newline (U+000A) at position 9"])
        check(sorted(os.listdir(cwd)) == ["e.toml"], "created %s" % os.listdir(cwd))
        self.add(Row("29 a newline in --set", self.runner.show(args), "2",
                     status_text(res.status), self.runner.clean(first_line(res.err)), "no file",
                     "—", check.problems))

    def sweep_input_missing_on_worker(self):
        mpirun = shutil.which("mpirun")
        if not mpirun:
            return
        check = Check()
        root = self.case_dir("worker_missing_input")
        dirs = [os.path.join(root, "A"), os.path.join(root, "B")]
        for d in dirs:
            os.makedirs(d)
            with open(os.path.join(d, "e.toml"), "w") as f:
                f.write('[run]\nn = 6\nd = 3\nT = 0.2\ninit = "file:i.h5"\n'
                        "[sweep]\nbeta = [1, 2, 3]\nseed = [1, 2]\n")
        with h5py.File(os.path.join(dirs[0], "i.h5"), "w") as f:
            f["theta0"] = np.arange(1.0, 19.0).reshape(6, 3)
        nadyn = self.runner.nadyn
        sweep = "sweep e.toml --out s.h5 --quiet"
        command = ("%s --allow-run-as-root --oversubscribe -np 1 -wdir %s %s %s : "
                   "-np 2 -wdir %s %s %s" % (mpirun, dirs[0], nadyn, sweep, dirs[1], nadyn,
                                             sweep))
        res = self.runner.run_shell(command, root, timeout=60)
        check(res.status == 2, "exit %s, expected 2" % status_text(res.status))
        lines = [line for line in res.err.splitlines() if line.startswith("nadyn:")]
        check(len(lines) == 1, "%d lines from nadyn on stderr" % len(lines))
        check(bool(lines) and "rank 1: " in lines[0] and "i.h5" in lines[0],
              "the line does not name rank 1 and i.h5")
        check(sorted(os.listdir(dirs[0])) == ["e.toml", "i.h5"], "A holds %s"
              % os.listdir(dirs[0]))
        self.add(Row("30 MPI sweep (6 runs, 3 ranks) whose input file is missing on the workers",
                     "mpirun -np 1 -wdir A nadyn %s : -np 2 -wdir B nadyn %s" % (sweep, sweep),
                     "2", status_text(res.status),
                     self.runner.clean(lines[0]) if lines else "(none)", "no file", "—",
                     check.problems))

    def dry_run_missing_input(self):
        check = Check()
        cwd = self.case_dir("dry_run_missing_input")
        with open(os.path.join(cwd, "e.toml"), "w") as f:
            f.write('[run]\nn = 8\nT = 0.2\ninit = "file:missing.h5"\n[sweep]\nbeta = [1, 2]\n')
        args = ["sweep", "e.toml", "--out", "s.h5", "--dry-run"]
        dry = self.runner.run(args, cwd)
        real = self.runner.run(["sweep", "e.toml", "--out", "s.h5", "--quiet"], cwd)
        one_line_refusal(check, dry, ["missing.h5"])
        check(dry.out == "", "the plan was printed")
        check(dry.err == real.err, "the real run says %r" % first_line(real.err))
        check(sorted(os.listdir(cwd)) == ["e.toml"], "created %s" % os.listdir(cwd))
        self.add(Row("31 sweep --dry-run with a missing input file", self.runner.show(args),
                     "2", status_text(dry.status), self.runner.clean(first_line(dry.err)),
                     "no file", "—", check.problems))

    def out_of_memory(self):
        check = Check()
        cwd = self.case_dir("out_of_memory")
        command = ("ulimit -v 1000000; exec %s simulate --n 2048 --d 8000 --T 0.01 --dt 0.01 "
                   "--out big.h5 --quiet" % self.runner.nadyn)
        res = self.runner.run_shell(command, cwd)
        one_line_refusal(check, res, ["out of memory", "d = 8000", "ulimit -v"], status=1)
        status = "no file"
        path = os.path.join(cwd, "big.h5")
        try:
            with h5py.File(path, "r", swmr=True) as f:
                status = f.attrs.get("status", b"")
                status = "status " + (status.decode() if isinstance(status, bytes) else str(status))
        except Exception as e:  # noqa: BLE001
            status = "unreadable: %s" % e
        check(status == "status failed", "the file's %s" % status)
        self.add(Row("32 n = 2048, d = 8000 under ulimit -v 1 GB", self.runner.show(command), "1",
                     status_text(res.status), self.runner.clean(first_line(res.err)), status,
                     "—", check.problems))

    def sweep_failed_status(self):
        check = Check()
        cwd = self.case_dir("sweep_failed_status")
        with open(os.path.join(cwd, "e.toml"), "w") as f:
            f.write('[run]\nn = 64\nd = 16\nT = 4\ndt = 0.02\nevery = 10\npositions = "all"\n'
                    "[sweep]\nseed = { range = [1, 8] }\n")
        command = ("trap '' XFSZ; ulimit -f 2048; exec %s sweep e.toml --out s.h5 --quiet"
                   % self.runner.nadyn)
        res = self.runner.run_shell(command, cwd)
        one_line_refusal(check, res, ["ulimit -f", "--resume continues"], status=1)
        got = "no file"
        try:
            with h5py.File(os.path.join(cwd, "s.h5"), "r") as f:
                status = f.attrs.get("status", b"")
                status = status.decode() if isinstance(status, bytes) else str(status)
                failure = f.attrs.get("failure", b"")
                failure = failure.decode() if isinstance(failure, bytes) else str(failure)
                done = int((f["status"][()] == 1).sum())
            got = "status %s, %d runs complete" % (status, done)
            check(status == "failed", "root status %s" % status)
            check("no space left" in failure, "failure attribute %r" % failure)
        except Exception as e:  # noqa: BLE001
            check(False, "file unreadable: %s" % e)
        self.add(Row("33 sweep over ulimit -f 2 MiB: the root status", self.runner.show(command),
                     "1", status_text(res.status), self.runner.clean(first_line(res.err)), got,
                     "—", check.problems))
    # ---- 34-38. damaged metadata that crashes or holds HDF5; stops that poll nothing -----

    def data_copy(self, cwd, name, as_name):
        path = os.path.join(cwd, as_name)
        shutil.copyfile(os.path.join(REPO, "tests", "regression", "data", name), path)
        os.chmod(path, 0o644)
        return path

    def crashing_metadata(self):
        check = Check()
        cwd = self.case_dir("crashing_metadata")
        path = self.data_copy(cwd, "inspect_crashes.h5", "c.h5")
        before = snapshot(path)
        commands = [["inspect", "c.h5"], ["simulate", "--resume", "c.h5", "--quiet"],
                    ["rerun", "c.h5", "--out", "again.h5"]]
        statuses, line = [], ""
        for args in commands:
            res = self.runner.run(args, cwd)
            statuses.append(status_text(res.status))
            one_line_refusal(check, res, ["'c.h5': damaged HDF5 metadata (the reader crashed: "
                                          "SIG"], status=1)
            line = line or self.runner.clean(first_line(res.err))
        check(snapshot(path) == before, "the file was modified")
        check(sorted(os.listdir(cwd)) == ["c.h5"], "directory now holds %s" % os.listdir(cwd))
        self.add(Row("34 a file whose damaged link metadata crashes libhdf5: inspect, --resume, "
                     "rerun", "; ".join(self.runner.show(a) for a in commands), "1, 1, 1",
                     ", ".join(statuses), line, "—", "—", check.problems))

    def crashing_metadata_python(self):
        check = Check()
        cwd = self.case_dir("crashing_metadata_python")
        path = self.data_copy(cwd, "inspect_crashes.h5", "c.h5")
        script = ("import sys, nadyn\n"
                  "for call in (nadyn.frame_count, nadyn.open):\n"
                  "    try:\n"
                  "        call(sys.argv[1])\n"
                  "    except OSError as error:\n"
                  "        print(error)\n")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.path.join(REPO, "python") + os.pathsep + env.get("PYTHONPATH", "")
        started = time.monotonic()
        proc = subprocess.run(["/usr/bin/python3", "-c", script, path], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=TIMEOUT)
        lines = proc.stdout.splitlines()
        check(proc.returncode == 0, "the interpreter ended with %s" % status_text(proc.returncode))
        # The walk in the child crashes, or meets the damage as HDF5's checksum error first
        # (it depends on the order the objects are visited in): one OSError naming the file.
        check(len(lines) == 2 and all("c.h5': damaged HDF5 metadata (" in line and (
            "the reader crashed: SIG" in line or "checksum" in line) for line in lines),
            "raised %r" % lines)
        self.add(Row("35 the same file in Python: nadyn.frame_count, nadyn.open",
                     "python3 -c 'nadyn.frame_count(\"c.h5\"); nadyn.open(\"c.h5\")'",
                     "0 (OSError ×2)", "%s (%d OSError, %.1f s)" % (
                         status_text(proc.returncode), len(lines), time.monotonic() - started),
                     self.runner.clean(lines[0]) if lines else "(none)", "—", "—",
                     check.problems))

    def retried_metadata(self):
        check = Check()
        cwd = self.case_dir("retried_metadata")
        path = self.data_copy(cwd, "resume_hangs.h5", "h.h5")
        # frames_of would hang here: h5py's SWMR reader retries the damaged read for minutes.
        before = snapshot(path)
        args = ["simulate", "--resume", "h.h5", "--T", "1", "--quiet"]
        res = self.runner.run(args, cwd, timeout=30)
        one_line_refusal(check, res, ["observables/step_error/step",
                                      "incorrect metadata checksum"], status=1)
        check(res.seconds < 10, "took %.1f s" % res.seconds)
        check(snapshot(path) == before, "the file was modified")
        self.add(Row("36 --resume of a file whose damaged metadata HDF5's SWMR writer retried "
                     "for ever", self.runner.show(args), "1", "%s (%.1f s)" % (
                         status_text(res.status), res.seconds),
                     self.runner.clean(first_line(res.err)), "unchanged (bytes)"
                     if snapshot(path) == before else "changed", "0", check.problems))

    def stuck_stop(self, sig):
        name = SIGNAL_NAMES[sig]
        check = Check()
        cwd = self.case_dir("stuck_" + name)
        path = os.path.join(cwd, "big.h5")
        # One frame of 200000 tokens: its pairwise observables take minutes without a poll of
        # the stop request; only the 8 s grace period ends the run.
        args = ["simulate", "--n", "200000", "--d", "16", "--threads", "1", "--positions",
                "none", "--out", "big.h5", "--quiet"]
        started = time.monotonic()
        proc = self.runner.start(args, cwd)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (os.path.exists(path) and
                                                   os.path.getsize(path) > 0):
            time.sleep(0.05)
        signalled = time.monotonic()
        proc.send_signal(sig)
        res = self.runner.finish(proc, args, started, timeout=60)
        seconds = time.monotonic() - signalled
        want = 128 + sig
        check(res.status == want, "exit %s, expected %d" % (status_text(res.status), want))
        check(seconds < 10, "ended %.1f s after the signal" % seconds)
        check(len(res.err.splitlines()) == 1 and "did not end within 8 s" in res.err,
              "stderr: %r" % res.err)
        check(os.path.exists(path), "the file is gone")
        self.add(Row("37 %s to a run inside one long computation (n = 200000, frame 0)" % name,
                     self.runner.show(args) + "; " + name, str(want), "%s (%.1f s after)" % (
                         status_text(res.status), seconds),
                     self.runner.clean(first_line(res.err)), "—", "—", check.problems))

    def layer_time_stop(self):
        self.bad_simulate("--layer-time 1e-12 with per-layer weights (T = 20)",
                          ["--weights", "random-per-layer", "--layer-time", "1e-12"],
                          ["T / layer-time is too large (2e+13 layers"], horizon=False,
                          scenario="38 layer time")
        check = Check()
        cwd = self.case_dir("layer_time_stop")
        path = os.path.join(cwd, "x.h5")
        args = ["simulate", "--n", "4", "--d", "2", "--weights", "random-per-layer",
                "--layer-time", "1e-9", "--T", "1", "--out", "x.h5", "--quiet"]
        started = time.monotonic()
        proc = self.runner.start(args, cwd)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (os.path.exists(path) and
                                                   os.path.getsize(path) > 0):
            time.sleep(0.05)
        time.sleep(1.5)  # inside the first step's 1e7 redraws
        signalled = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        res = self.runner.finish(proc, args, started, timeout=60)
        seconds = time.monotonic() - signalled
        check(res.status == 143, "exit %s, expected 143" % status_text(res.status))
        check(seconds < 5, "ended %.1f s after SIGTERM (the grace period, not the stop)"
              % seconds)
        frames = "—"
        try:
            t = Trajectory(path)
            check(t.status == "interrupted", "status %r, expected 'interrupted'" % t.status)
            frames = str(t.frames)
        except Exception as e:  # noqa: BLE001
            check(False, "file unreadable: %s" % e)
        self.add(Row("38 layer time: SIGTERM inside a step of 1e7 per-layer redraws "
                     "(--layer-time 1e-9)", self.runner.show(args) + "; SIGTERM after 1.5 s",
                     "143", "%s (%.1f s after)" % (status_text(res.status), seconds),
                     first_line(res.out), frames, "—", check.problems))

    # ---- 39. the sweep file read through the files layer (issue 36) -------------------------

    def damaged_sweep_copy(self, cwd, name, remove):
        """A finished two-run sweep, then `remove` (an attribute "@name" or a dataset) gone."""
        with open(os.path.join(cwd, "e.toml"), "w") as f:
            f.write("[run]\nn = 8\nd = 2\nT = 0.5\n[sweep]\nseed = [1, 2]\n")
        made = self.runner.run(["sweep", "e.toml", "--out", name, "--quiet"], cwd)
        path = os.path.join(cwd, name)
        with h5py.File(path, "a") as f:
            if remove.startswith("@"):
                del f.attrs[remove[1:]]
            else:
                del f[remove]
        return made, path

    def sweep_file_damage(self):
        check = Check()
        cwd = self.case_dir("sweep_without_experiment")
        made, path = self.damaged_sweep_copy(cwd, "s.h5", "@experiment")
        check(made.status == 0, "the sweep failed: %s" % first_line(made.err))
        before = snapshot(path)
        commands = [["inspect", "s.h5"], ["sweep", "--resume", "s.h5", "--quiet"]]
        statuses, line = [], ""
        for args in commands:
            res = self.runner.run(args, cwd)
            statuses.append(status_text(res.status))
            one_line_refusal(check, res, ["'s.h5' lacks the attribute experiment"])
            line = line or self.runner.clean(first_line(res.err))
        check(snapshot(path) == before, "the file was modified")
        self.add(Row("39 a sweep file whose recorded experiment was deleted: inspect, --resume",
                     "; ".join(self.runner.show(a) for a in commands), "2, 2",
                     ", ".join(statuses), line, "—", "—", check.problems))
        mpirun = shutil.which("mpirun")
        if not mpirun:
            return
        # Over MPI ranks: rank 0 meets the damage, every rank leaves with its status.
        cases = [("39 MPI sweep --resume of a file whose recorded experiment was deleted",
                  "@experiment", "2", ["lacks the attribute experiment"]),
                 ("39 MPI sweep --resume of a file that lost its status dataset", "status", "1",
                  ["cannot open dataset '/status'"])]
        for number, (scenario, remove, expected, words) in enumerate(cases):
            check = Check()
            cwd = self.case_dir("mpi_sweep_damage_%d" % number)
            made, path = self.damaged_sweep_copy(cwd, "s.h5", remove)
            check(made.status == 0, "the sweep failed: %s" % first_line(made.err))
            with h5py.File(path, "r") as f:
                before = f["mean_cos"][()].tobytes()
            command = ("%s --allow-run-as-root --oversubscribe -np 2 %s sweep --resume s.h5 "
                       "--quiet" % (mpirun, self.runner.nadyn))
            res = self.runner.run_shell(command, cwd)
            check(status_text(res.status) == expected,
                  "exit %s, expected %s" % (status_text(res.status), expected))
            lines = [line for line in res.err.splitlines() if line.startswith("nadyn:")]
            check(len(lines) == 1, "%d lines from nadyn on stderr" % len(lines))
            for word in words:
                check(any(word in line for line in lines), "stderr does not mention %r" % word)
            # Opened for writing (the status case) its superblock changes, not its runs.
            try:
                with h5py.File(path, "r") as f:
                    check(f["mean_cos"][()].tobytes() == before, "the runs' results changed")
            except Exception as e:  # noqa: BLE001
                check(False, "file unreadable: %s" % e)
            self.add(Row(scenario, "mpirun -np 2 nadyn sweep --resume s.h5", expected,
                         status_text(res.status),
                         self.runner.clean(lines[0]) if lines else "(none)", "—", "—",
                         check.problems))

    # ---- 40. observables: one table, and log_energy renamed ---------------------------------

    def observables_table_cases(self):
        # An unknown name: one line listing the table's optional observables (the library's,
        # the experiment layer's unselectable and the renamed log_energy among them).
        self.bad_simulate("--observe an unknown name", ["--observe", "entropy"],
                          ["unknown observable 'entropy'", "unselectable", "log_energy",
                           "modes"], scenario="40 observables")
        # A file of an older nadyn, whose log_energy is called energy (series and observe
        # parameter), resumed: it keeps its own name and continues bit for bit.
        check = Check()
        cwd = self.case_dir("renamed_energy")
        flags = ["--n", "16", "--d", "3", "--beta", "2", "--dt", "0.05", "--every", "4",
                 "--observe", "log_energy,angle"]
        whole = self.runner.run(["simulate"] + flags + ["--T", "2", "--out", "whole.h5",
                                                        "--quiet"], cwd)
        part = self.runner.run(["simulate"] + flags + ["--T", "1", "--out", "old.h5",
                                                       "--quiet"], cwd)
        check(whole.status == 0 and part.status == 0, "the runs to compare with failed")
        old = os.path.join(cwd, "old.h5")
        try:
            with h5py.File(old, "r+") as f:
                f.move("observables/log_energy", "observables/energy")
                f["parameters"].attrs["observe"] = "energy,angle"
        except Exception as e:  # noqa: BLE001
            check(False, "cannot make the older file: %s" % e)
        args = ["simulate", "--resume", "old.h5", "--T", "2", "--quiet"]
        res = self.runner.run(args, cwd)
        check(res.status == 0, "resume: exit %s" % status_text(res.status))
        frames = "—"
        try:
            with h5py.File(old, "r") as f, h5py.File(os.path.join(cwd, "whole.h5"), "r") as g:
                names = list(f["observables"])
                check("energy" in names and "log_energy" not in names,
                      "series after the resume: %s" % names)
                resumed = f["observables/energy/value"][()]
                uninterrupted = g["observables/log_energy/value"][()]
                check(resumed.tobytes() == uninterrupted.tobytes(),
                      "the resumed energy differs from an uninterrupted run's log_energy")
                frames = "%d (uninterrupted: %d)" % (len(resumed), len(uninterrupted))
        except Exception as e:  # noqa: BLE001
            check(False, "cannot compare: %s" % e)
        table = self.runner.run(["inspect", "old.h5", "--csv"], cwd)
        header = table.out.splitlines()[0].split(",") if table.out else []
        check(header[-3:] == ["angle", "log_energy", "energy"],
              "inspect --csv columns end with %s" % header[-3:])
        self.add(Row("40 observables: an older file's energy (log_energy's old name), resumed",
                     self.runner.show(args), "0; its energy series continued bit for bit, "
                     "inspect shows log_energy and E", status_text(res.status),
                     first_line(res.err), frames, "—", check.problems))

    # ---- 41: a researcher's frictions (issue 39) ---------------------------------------

    def frictions_sweep(self, cwd, name, text):
        with open(os.path.join(cwd, name + ".toml"), "w") as f:
            f.write(text)
        res = self.runner.run(["sweep", name + ".toml", "--out", name + ".h5", "--quiet"], cwd)
        return res.status == 0

    def frictions_refusal(self, label, args, cwd, expect, absent=()):
        check = Check()
        res = self.runner.run(args, cwd)
        one_line_refusal(check, res, expect)
        for path in absent:
            check(not os.path.exists(os.path.join(cwd, path)), "%s was written" % path)
        self.add(Row("41 " + label, self.runner.show(args), "2", status_text(res.status),
                     self.runner.clean(first_line(res.err)), "—", "—", check.problems))

    def frictions(self):
        cwd = self.case_dir("frictions")
        two = ("[run]\nn = 8\nd = 3\nT = 1\ndt = 0.05\n[sweep]\nbeta = [1, 4]\n")
        ok = self.frictions_sweep(cwd, "two", two)
        ok = self.frictions_sweep(cwd, "nc", "[run]\nn = 8\nd = 3\nT = 5\nbeta = 1\n"
                                  "observables = \"mean_cos\"\n[sweep]\nseed = [1, 2]\n") and ok
        self.frictions_refusal("--point: rerun of a sweep of 2 runs without one",
                               ["rerun", "two.h5", "--out", "p.h5"], cwd,
                               ["pass --point axis=value,...", "beta in {1, 4}",
                                "or a run's index, 0 to 1"], absent=["p.h5"])
        check = Check()
        args = ["rerun", "two.h5", "--point", "beta=4", "--out", "p4.h5"]
        res = self.runner.run(args, cwd)
        check(ok, "the sweeps it reruns were not made")
        check(res.status == 0, "exit %s" % status_text(res.status))
        check("(beta=4)" in res.out, "the run is not named: %s" % first_line(res.out))
        self.add(Row("41 --point: rerun takes axis=value as inspect does", self.runner.show(args),
                     "0", status_text(res.status), first_line(res.out), "—", "—",
                     check.problems))
        self.frictions_refusal("unrecorded: inspect --merges of runs without clusters",
                               ["inspect", "nc.h5", "--merges", "--point", "seed=1"], cwd,
                               ["merge events not recorded (add clusters to observables)"])
        with open(os.path.join(cwd, "typo.toml"), "w") as f:
            f.write("[run]\nn = 8\nbeat = 2\n")
        self.frictions_refusal("did you mean: a misspelt key of an experiment file",
                               ["sweep", "typo.toml", "--dry-run"], cwd,
                               ["typo.toml:3: unknown key 'run.beat'; did you mean 'run.beta'?"])
        check = Check()
        args = ["simulate", "--n", "6", "--d", "3", "--beta", "-1", "--T", "0.2", "--out",
                "neg.h5", "--quiet"]
        res = self.runner.run(args, cwd)
        check(res.status == 0, "exit %s" % status_text(res.status))
        check(res.err.count("beta < 0") == 1, "the warning %d times" % res.err.count("beta < 0"))
        self.add(Row("41 negative beta: runs, one warning saying what it means",
                     self.runner.show(args), "0, one warning", status_text(res.status),
                     self.runner.clean(first_line(res.err)), "—", "—", check.problems))
        # Studies: a folder that lacks a file, and a second run into the same --out-dir.
        studies = self.table_study(cwd, "final_cos")
        os.makedirs(os.path.join(studies, "no_readme"))
        for name in ("experiment.toml", "reduce.py"):
            shutil.copy(os.path.join(studies, "final_cos", name),
                        os.path.join(studies, "no_readme", name))
        self.frictions_refusal("studies: a study folder without README.md",
                               ["table", "no_readme", "--studies", studies, "--out-dir", "out1"],
                               cwd, ["lacks README.md", "a study folder holds"],
                               absent=["out1"])
        check = Check()
        args = ["table", "final_cos", "--studies", studies, "--out-dir", "out", "--no-figures"]
        first = self.runner.run(args, cwd)
        page = os.path.join(cwd, "out", "final_cos.md")
        before = open(page).read() if os.path.isfile(page) else None
        again = self.runner.run(args, cwd)
        forced = self.runner.run(args + ["--force"], cwd)
        check(first.status == 0, "the first run: exit %s" % status_text(first.status))
        one_line_refusal(check, again, ["already exists; pass --force to overwrite it"])
        check(forced.status == 0, "with --force: exit %s" % status_text(forced.status))
        check(before is not None and "--studies" in before, "the page does not name --studies")
        self.add(Row("41 studies: nadyn table twice into one --out-dir, then with --force",
                     self.runner.show(args), "0, 2, 0",
                     "%s, %s, %s" % (status_text(first.status), status_text(again.status),
                                     status_text(forced.status)),
                     self.runner.clean(first_line(again.err)), "—", "—", check.problems))
        check = Check()
        command = ("PYTHONPATH=%s /usr/bin/python3 -m nadyn.plot two.h5 --sphere s.png"
                   % shlex.quote(os.path.join(REPO, "python")))
        res = self.runner.run_shell(command, cwd)
        check(res.status == 2, "exit %s, expected 2" % status_text(res.status))
        check(res.err.count("\n") == 1 and "pass --point axis=value,..." in res.err,
              "stderr: %s" % first_line(res.err))
        check("written with" not in res.err, "blames the positions")
        check(not os.path.exists(os.path.join(cwd, "s.png")), "s.png written")
        self.add(Row("41 plots: the sphere of a sweep of 2 runs without --point",
                     "python3 -m nadyn.plot two.h5 --sphere s.png", "2",
                     status_text(res.status), self.runner.clean(first_line(res.err)), "—", "—",
                     check.problems))

    # ---- 42. the frame buffer (issue 38 item 4) --------------------------------------------

    @staticmethod
    def frames_kept(check, path, reported):
        """Checks that the file at `path` holds `reported` frames (the count the run printed or
        recorded), each step's frame in order; returns the Trajectory."""
        t = Trajectory(path)
        check(t.frames == reported, "%d frames in the file, the run computed %d"
              % (t.frames, reported))
        recorded = int(t.parameter("frames"))
        check(recorded == t.frames, "/parameters/frames = %d, %d frames in the file"
              % (recorded, t.frames))
        steps = [int(s) for s in t.steps]
        check(steps[:-1] == list(range(len(steps) - 1)), "the steps are not 0, 1, 2, ...")
        return t

    def frame_buffer_stop(self):
        """SIGINT while the writer holds frames in memory (a frame every step of a small run,
        up to 64 held): the stop writes them all, none is lost."""
        check = Check()
        cwd = self.case_dir("frame_buffer_stop")
        args = ["simulate", "--n", "32", "--d", "3", "--T", "1000", "--dt", "0.01", "--every",
                "1", "--out", "held.h5", "--quiet"]
        path = os.path.join(cwd, "held.h5")
        started = time.monotonic()
        proc = self.runner.start(args, cwd)
        live = wait_for_frames(proc, path, 3)
        check(live is not None, "the run ended before 3 frames were readable")
        if live is not None:
            proc.send_signal(signal.SIGINT)
        res = self.runner.finish(proc, args, started)
        check(res.status == 130, "exit %s, expected 130" % status_text(res.status))
        frames, lost = "—", "—"
        m = re.search(r"interrupted: (\d+) frames", res.out)
        check(m is not None, "no 'interrupted: N frames' line on stdout")
        try:
            reported = int(m.group(1)) if m else -1
            t = self.frames_kept(check, path, reported)
            check(t.status == "interrupted", "status %r, expected 'interrupted'" % t.status)
            frames, lost = "%s (live) → %d (computed %d)" % (live, t.frames, reported), str(
                max(0, reported - t.frames))
        except Exception as e:  # noqa: BLE001
            check(False, "file unreadable: %s" % e)
        self.add(Row("42 frame buffer: SIGINT while frames are held in memory",
                     self.runner.show(args) + "; SIGINT after ≥3 frames", "130",
                     status_text(res.status), first_line(res.err) or "(empty)", frames, lost,
                     check.problems))

    def frame_buffer_failure(self):
        """A run that leaves the model's domain (V = -I drives pre-ln's magnitudes through zero)
        with a frame every step: exit 1, every frame before the failure on disk."""
        check = Check()
        cwd = self.case_dir("frame_buffer_failure")
        n, d = 32, 4
        k, c = np.meshgrid(np.arange(n), np.arange(d), indexing="ij")
        with h5py.File(os.path.join(cwd, "init.h5"), "w") as f:
            f["theta0"] = np.sin(1.0 + 3.7 * k + 1.3 * c)
            f["r0"] = 1.0 + np.arange(n) / (n - 1.0)
        with h5py.File(os.path.join(cwd, "weights.h5"), "w") as f:
            f["Q"], f["K"], f["V"] = np.eye(d), np.eye(d), -np.eye(d)
        args = ["simulate", "--scheme", "pre-ln", "--n", str(n), "--d", str(d), "--init",
                "file:init.h5", "--weights", "file:weights.h5", "--T", "5", "--dt", "0.001",
                "--every", "1", "--out", "failed.h5", "--quiet"]
        res = self.runner.run(args, cwd)
        one_line_refusal(check, res, ["left the model's domain", "t = "], status=1)
        frames, lost = "—", "—"
        try:
            m = re.search(r"at t = ([0-9.eE+-]+)", res.err)
            fail_t = float(m.group(1)) if m else float("nan")
            t = Trajectory(os.path.join(cwd, "failed.h5"))
            check(t.status == "failed", "status %r, expected 'failed'" % t.status)
            # Every step's frame strictly before the failure time (dt = 0.001).
            due = int(np.ceil(fail_t / 0.001 - 1e-9))
            self.frames_kept(check, os.path.join(cwd, "failed.h5"), due)
            check(due > 64, "failed after %d frames, within the first buffer" % due)
            frames, lost = "— → %d (due %d)" % (t.frames, due), str(max(0, due - t.frames))
        except Exception as e:  # noqa: BLE001
            check(False, "file unreadable: %s" % e)
        self.add(Row("42 frame buffer: a domain failure while frames are held in memory",
                     self.runner.show(args), "1", status_text(res.status), first_line(res.err),
                     frames, lost, check.problems))

    # ---- 43: unrecorded is not zero, run by run; the MPI sweep's warnings (issue 39) -----

    def sweep_python(self, cwd, script, *args):
        env = dict(os.environ)
        env["PYTHONPATH"] = os.path.join(REPO, "python") + os.pathsep + env.get("PYTHONPATH", "")
        return subprocess.run(["/usr/bin/python3", "-c", script, *args], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=TIMEOUT)

    def unrecorded_runs(self):
        # A sweep whose runs differ in what they record: an observables axis, made through the
        # library (experiment files refuse one) by tests/regression/sweep_unrecorded_not_zero.cpp.
        cwd = self.case_dir("unrecorded_runs")
        path = self.data_copy(cwd, "sweep_observables_axis.h5", "u.h5")
        check = Check()
        with h5py.File(path, "r") as f:
            merge_count = f["merge_count"][...].tolist()
            fill = int(f["merge_count"].attrs.get("_FillValue", 0))
            recorded = "recorded" in f
        check(merge_count[0] == [-1, -1], "merge_count of the runs without clusters: %s"
              % merge_count[0])
        check(fill == -1, "merge_count's _FillValue is %s" % fill)
        check(recorded, "no /recorded")
        self.add(Row("43 a sweep whose runs differ in recording clusters: the file",
                     "h5py: merge_count, /recorded of u.h5", "-1 (fill), /recorded",
                     "%s, fill %s" % (merge_count[0], fill),
                     "/recorded present" if recorded else "/recorded absent", "—", "—",
                     check.problems))
        script = ("import sys, nadyn, nadyn.plot\n"
                  "ds = nadyn.open(sys.argv[1])\n"
                  "point = {'observables': 'mean_cos', 'seed': 1}\n"
                  "run = nadyn.io.sweep_run(ds, point)\n"
                  "print('merge_count' in run, nadyn.io.not_recorded(run, 'merge_count'))\n"
                  "for call in (lambda: nadyn.clusters.merge_events(ds, **point),\n"
                  "             lambda: nadyn.plot.observables(ds, names=('clusters',), "
                  "point=point)):\n"
                  "    try:\n"
                  "        call()\n"
                  "        print('no error')\n"
                  "    except ValueError as error:\n"
                  "        print(error)\n")
        check = Check()
        proc = self.sweep_python(cwd, script, path)
        lines = proc.stdout.splitlines()
        check(proc.returncode == 0, "the interpreter ended with %s: %s"
              % (status_text(proc.returncode), first_line(proc.stderr)))
        expect = "not recorded (add clusters to observables)"
        check(len(lines) == 3, "printed %r" % lines)
        check(bool(lines) and lines[0].startswith("False merge_count " + expect),
              "sweep_run: %r" % (lines[:1],))
        check(all(expect in line for line in lines[1:]), "merge_events, plot: %r" % lines[1:])
        self.add(Row("43 the same run in Python: sweep_run, merge_events, plot of clusters",
                     "python3 -c 'nadyn.io.sweep_run(ds, point); "
                     "nadyn.clusters.merge_events(ds, **point); nadyn.plot.observables(...)'",
                     "0 (not recorded ×3)", status_text(proc.returncode),
                     self.runner.clean(lines[-1]) if lines else "(none)", "—", "—",
                     check.problems))
        mpirun = shutil.which("mpirun")
        if not mpirun:
            return
        check = Check()
        with open(os.path.join(cwd, "neg.toml"), "w") as f:
            f.write("[run]\nn = 6\nd = 3\nT = 0.2\n[sweep]\nbeta = [-1, 1]\n")
        command = ("%s --allow-run-as-root --oversubscribe -x OMP_NUM_THREADS=1 -np 2 %s sweep "
                   "neg.toml --out neg.h5 --quiet" % (mpirun, self.runner.nadyn))
        res = self.runner.run_shell(command, cwd)
        check(res.status == 0, "exit %s" % status_text(res.status))
        check(res.err.count("beta < 0") == 1, "the warning %d times" % res.err.count("beta < 0"))
        self.add(Row("43 negative beta in an MPI sweep: one warning, from rank 0",
                     "mpirun -np 2 nadyn sweep neg.toml --out neg.h5", "0, one warning",
                     status_text(res.status), self.runner.clean(first_line(res.err)), "—", "—",
                     check.problems))

    # ---- 44. heads sharing their values (issue 38) --------------------------------------

    SHARED_VALUES = ["--n", "64", "--d", "16", "--heads", "8", "--weights",
                     "interaction-product", "--value", "identity", "--integrator", "layers"]

    def shared_values_extreme_beta(self):
        """Eight heads sharing their values (the kernel sums their weights before one value
        product) at beta = 1e4, in double and float: the log-sum-exp keeps every weight
        finite, so the run completes on the sphere."""
        check = Check()
        cwd = self.case_dir("shared_values_beta")
        base = ["simulate"] + self.SHARED_VALUES + ["--beta", "1e4", "--dt", "0.1", "--T", "5",
                                                    "--quiet"]
        statuses, frames = [], []
        for arithmetic in ("double", "float"):
            res = self.runner.run(base + ["--precision", arithmetic, "--out",
                                          arithmetic + ".h5"], cwd)
            statuses.append(status_text(res.status))
            check(res.status == 0, "%s: exit %s: %s" % (arithmetic, status_text(res.status),
                                                        first_line(res.err)))
            try:
                t = Trajectory(os.path.join(cwd, arithmetic + ".h5"))
                check(t.status == "complete", "%s: status %r" % (arithmetic, t.status))
                bad = unit_norm_problems(t)
                check(not bad, "%s: frames %s not finite unit vectors" % (arithmetic, bad[:5]))
                frames.append(str(t.frames))
            except Exception as e:  # noqa: BLE001
                check(False, "%s: unreadable: %s" % (arithmetic, e))
        self.add(Row("44 heads sharing their values at beta = 1e4 (double, float)",
                     self.runner.show(base + ["--precision", "P"]) + " for P = double, float",
                     "0, 0", ", ".join(statuses), "(empty)", ", ".join(frames) or "—", "—",
                     check.problems))

    # ---- 45. MPI sweep: every rank computes (issue 39 item 9) ------------------------------

    def mpi_command(self, ranks, args, bind_none=False):
        mpirun = shutil.which("mpirun")
        binding = " --bind-to none" if bind_none else ""
        return ("%s --allow-run-as-root --oversubscribe%s -np %d %s %s"
                % (mpirun, binding, ranks, self.runner.nadyn, " ".join(args)))

    @staticmethod
    def runs_per_rank(out):
        found = re.search(r"runs per rank ([0-9, ]+);", out)
        return [int(x) for x in found.group(1).split(",")] if found else []

    @staticmethod
    def same_sweeps(a, b):
        """The datasets of two sweep files, bitwise, but wall_time."""
        with h5py.File(a, "r") as x, h5py.File(b, "r") as y:
            if sorted(x) != sorted(y):
                return False
            for name in x:
                if name == "wall_time" or not isinstance(x[name], h5py.Dataset):
                    continue
                a, b = x[name][()], y[name][()]
                same = (a.tolist() == b.tolist() if getattr(a, "dtype", None) is not None
                        and a.dtype.kind == "O" else np.asarray(a).tobytes() == np.asarray(b).tobytes())
                if not same:
                    return False
            return True

    def mpi_every_rank(self):
        if not shutil.which("mpirun"):
            return
        cwd = self.case_dir("mpi_every_rank")
        with open(os.path.join(cwd, "e.toml"), "w") as f:
            f.write("[run]\nn = 64\nd = 8\nT = 10\ndt = 0.02\n[sweep]\nseed = { range = [1, 8] }\n")
        with open(os.path.join(cwd, "fail.toml"), "w") as f:
            f.write('[run]\nscheme = "pre-ln"\nr0 = 1e-300\nn = 8\nd = 3\nT = 1\ndt = 0.1\n'
                    "[sweep]\nseed = { range = [1, 6] }\n")
        with open(os.path.join(cwd, "long.toml"), "w") as f:
            f.write("[run]\nn = 48\nd = 8\nT = 100\ndt = 0.01\n[sweep]\nseed = { range = [1, 24] }\n")
        with open(os.path.join(cwd, "large.toml"), "w") as f:
            f.write('[run]\nn = 256\nd = 64\nT = 0.2\ndt = 0.1\npositions = "none"\n'
                    "[sweep]\nseed = [1, 2, 3]\n")
        env_one = "env OMP_NUM_THREADS=1 "
        # Both ranks compute; the file is the one-process sweep's.
        check = Check()
        one = self.runner.run(["sweep", "e.toml", "--out", "one.h5", "--quiet"], cwd)
        check(one.status == 0, "the one-process sweep failed: %s" % first_line(one.err))
        command = env_one + self.mpi_command(2, ["sweep", "e.toml", "--out", "two.h5", "--quiet"])
        res = self.runner.run_shell(command, cwd)
        counts = self.runs_per_rank(res.out)
        check(res.status == 0, "exit %s" % status_text(res.status))
        check(len(counts) == 2 and min(counts) >= 1 and sum(counts) == 8,
              "runs per rank %s" % counts)
        if res.status == 0 and one.status == 0:
            check(self.same_sweeps(os.path.join(cwd, "one.h5"), os.path.join(cwd, "two.h5")),
                  "the file differs from the one-process sweep's")
        self.add(Row("45 MPI sweep over 2 ranks: both compute, the one-process file",
                     "mpirun -np 2 nadyn sweep e.toml", "0, runs on both ranks",
                     "%s, runs per rank %s" % (status_text(res.status),
                                               ", ".join(map(str, counts)) or "(none)"),
                     self.runner.clean(first_line(res.err)) or "(none)", "—", "—",
                     check.problems))
        # Every run fails, rank 0's among them: recorded as failed, exit 1, one line.
        check = Check()
        command = env_one + self.mpi_command(2, ["sweep", "fail.toml", "--out", "f.h5", "--quiet"])
        res = self.runner.run_shell(command, cwd)
        counts = self.runs_per_rank(res.out)
        # mpirun adds its own lines about the exit status; nadyn's are one.
        lines = [line for line in res.err.splitlines() if line.startswith("nadyn:")]
        check(res.status == 1, "exit %s, expected 1" % status_text(res.status))
        check(len(lines) == 1, "%d lines from nadyn on stderr" % len(lines))
        for word in ("6 runs failed; the first:", "non-finite"):
            check(any(word in line for line in lines), "stderr does not mention %r" % word)
        check(len(counts) == 2 and counts[0] >= 1, "runs per rank %s" % counts)
        got = "no file"
        try:
            with h5py.File(os.path.join(cwd, "f.h5"), "r") as f:
                status = f.attrs.get("status", b"")
                status = status.decode() if isinstance(status, bytes) else str(status)
                failed = int((f["status"][()] == 3).sum())
            got = "status %s, %d runs failed" % (status, failed)
            check(status == "failed" and failed == 6, got)
        except Exception as e:  # noqa: BLE001
            check(False, "file unreadable: %s" % e)
        self.add(Row("45 MPI sweep whose runs all fail (rank 0's too)",
                     "mpirun -np 2 nadyn sweep fail.toml", "1", status_text(res.status),
                     self.runner.clean(lines[0]) if lines else "(none)", got, "—",
                     check.problems))
        # SIGINT to mpirun while both ranks compute, then --resume over 2 ranks.
        check = Check()
        whole = self.runner.run(["sweep", "long.toml", "--out", "whole.h5", "--quiet"], cwd)
        check(whole.status == 0, "the one-process sweep failed")
        command = env_one + self.mpi_command(2, ["sweep", "long.toml", "--out", "cut.h5",
                                                 "--quiet"])
        started = time.monotonic()
        proc = subprocess.Popen(["/bin/sh", "-c", "exec " + command], cwd=cwd,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=_child_setup)
        cut = os.path.join(cwd, "cut.h5")
        while not os.path.exists(cut) and time.monotonic() - started < 60:
            time.sleep(0.05)
        time.sleep(0.7)
        proc.send_signal(signal.SIGINT)  # our own child, mpirun, by its pid
        stopped = Runner.finish(proc, command, started)
        resumed = self.runner.run_shell(
            env_one + self.mpi_command(2, ["sweep", "--resume", "cut.h5", "--quiet"]), cwd)
        check(stopped.status != 0, "the sweep finished before the signal")
        check(resumed.status == 0, "the resume exited %s" % status_text(resumed.status))
        if resumed.status == 0 and whole.status == 0:
            check(self.same_sweeps(os.path.join(cwd, "whole.h5"), cut),
                  "the resumed file differs from the uninterrupted one")
        done = re.search(r"(\d+) runs complete", stopped.out)
        self.add(Row("45 MPI sweep over 2 ranks: SIGINT, then --resume over 2 ranks",
                     "mpirun -np 2 nadyn sweep long.toml; SIGINT; mpirun -np 2 nadyn sweep "
                     "--resume cut.h5", "non-zero, then 0",
                     "%s, then %s" % (status_text(stopped.status), status_text(resumed.status)),
                     self.runner.clean(first_line(stopped.err)) or "(none)",
                     "%s of 24 runs kept" % (done.group(1) if done else "?"),
                     "—", check.problems))
        # Two ranks on a node of C cores, unbound: each runs with C / 2 threads by default.
        check = Check()
        cores = os.cpu_count() or 1
        share = max(1, cores // 2)
        command = "env -u OMP_NUM_THREADS " + self.mpi_command(
            2, ["sweep", "large.toml", "--out", "large.h5", "--quiet"], bind_none=True)
        res = self.runner.run_shell(command, cwd)
        check(res.status == 0, "exit %s" % status_text(res.status))
        threads = set()
        try:
            with h5py.File(os.path.join(cwd, "large.h5"), "r") as f:
                for text in f["parameters"][()].ravel():
                    text = text.decode() if isinstance(text, bytes) else str(text)
                    threads.update(re.findall(r"; threads=(\d+);", text))
        except Exception as e:  # noqa: BLE001
            check(False, "file unreadable: %s" % e)
        check(threads == {str(share)}, "threads per run %s, expected %d" % (threads, share))
        self.add(Row("45 MPI sweep, 2 unbound ranks on %d cores: threads per run" % cores,
                     "mpirun --bind-to none -np 2 nadyn sweep large.toml", "0, threads=%d"
                     % share, "%s, threads=%s" % (status_text(res.status),
                                                  ",".join(sorted(threads)) or "?"),
                     self.runner.clean(first_line(res.err)) or "(none)", "—", "—",
                     check.problems))

    # ---- 46. the study lifetimes: censored runs, too few betas, frames beyond T -----------

    def lifetimes_table(self, cwd, label, sets):
        """`nadyn table lifetimes --quick` with the extra --set arguments, into out/ of cwd:
        its result, the page's text (None if not written) and the command."""
        args = ["table", "lifetimes", "--quick", "--out-dir", "out", "--no-figures"]
        for setting in sets:
            args += ["--set", setting]
        res = self.runner.run(args, cwd)
        page = os.path.join(cwd, "out", "lifetimes.md")
        return res, (open(page).read() if os.path.isfile(page) else None), args

    def lifetimes_cases(self):
        # The n = 128 and 512 experiments at n = 48 in these cases: the study's code path
        # is the same, and each case stays a few seconds of CPU.
        small = ["n128:run.n=48", "n512:run.n=48"]
        cwd = self.case_dir("lifetimes_censored")
        check = Check()
        res, page, args = self.lifetimes_table(
            cwd, "censored", small + ["run.T=1", 'run.frame_times="logspace:-1,0,5"'])
        check(res.status == 0, "exit %s" % status_text(res.status))
        check(page is not None, "no page written")
        if page is not None:
            rows = [line for line in page.splitlines() if line.startswith("| 32 | 2 | 2 |")]
            check(rows and "| 2 | 0 | 1 | > 1 |" in rows[0],
                  "the censored point is not `2 runs, 0 merged, > 1`: %s" % rows[:1])
            check("no fit (fewer betas below T)" in page, "the fit does not say it has none")
            check(not re.search(r"\bnan\b", page, re.IGNORECASE), "the page shows NaN")
        self.add(Row("46 lifetimes: every run censored (T = 1): counted, no fit, said so",
                     self.runner.show(args), "0", status_text(res.status),
                     self.runner.clean(first_line(res.err)) or "(empty)", "—", "—",
                     check.problems))
        cwd = self.case_dir("lifetimes_one_beta")
        check = Check()
        res, page, args = self.lifetimes_table(cwd, "one beta", small + ["sweep.beta=[2]"])
        check(res.status == 0, "exit %s" % status_text(res.status))
        check(page is not None and "no test (fewer than 3 betas below T)" in page,
              "the linearity test does not say it has too few betas")
        check(page is not None and "no fit (fewer betas below T)" in page,
              "the rate does not say it has too few betas")
        self.add(Row("46 lifetimes: one beta: no rate and no linearity test, said so",
                     self.runner.show(args), "0", status_text(res.status),
                     self.runner.clean(first_line(res.err)) or "(empty)", "—", "—",
                     check.problems))
        cwd = self.case_dir("lifetimes_frames_beyond_T")
        check = Check()
        res, page, args = self.lifetimes_table(cwd, "frames beyond T", small + ["run.T=50"])
        one_line_refusal(check, res, ["frame-times must lie in [0, T] = [0, 50]"])
        check(not os.path.exists(os.path.join(cwd, "out", "data")), "sweep files were made")
        check(page is None, "a page was written")
        self.add(Row("46 lifetimes: --set run.T below the quick form's frame times",
                     self.runner.show(args), "2", status_text(res.status),
                     self.runner.clean(first_line(res.err)), "—", "—", check.problems))

    def run_all(self):
        self.prepare_inputs()
        self.bad_inputs()
        for sig in (signal.SIGINT, signal.SIGTERM):
            self.signal_stop(sig)
        self.sigkill_readable()
        rk4 = ["--n", "128", "--d", "8", "--T", "40", "--dt", "0.01", "--every", "40"]
        self.stop_and_resume("3 SIGKILL, then --resume (rk4)", signal.SIGKILL, rk4)
        if shutil.which("h5clear"):
            self.stop_and_resume("3 SIGKILL, h5clear -s, then --resume (rk4)", signal.SIGKILL,
                                 rk4, clear_first=True)
        self.stop_and_resume("4 SIGINT, then --resume (rk4)", signal.SIGINT,
                             rk4 + ["--scheme", "pre-ln", "--weights", "random"])
        self.stop_and_resume("4 SIGINT, then --resume (dopri5)", signal.SIGINT,
                             ["--n", "128", "--d", "16", "--T", "40", "--dt", "0.01", "--every",
                              "40", "--integrator", "dopri5", "--rtol", "1e-12", "--atol",
                              "1e-14", "--weights", "random"])
        # 20000 layers (about 2.5 s): time for a poller on a loaded machine to see the third
        # frame before the run ends.
        self.stop_and_resume("4 SIGINT, then --resume (layers)", signal.SIGINT,
                             ["--n", "128", "--d", "16", "--T", "200", "--dt", "0.01", "--every",
                              "200", "--integrator", "layers", "--weights", "random-per-layer",
                              "--scheme", "mix-ln"])
        small = ["--n", "64", "--d", "8", "--T", "5", "--dt", "0.01", "--every", "10"]
        self.rerun("rk4, random weights", small + ["--weights", "random"])
        self.rerun("dopri5", small + ["--integrator", "dopri5", "--scheme", "ngpt"])
        self.rerun("layers, random-per-layer", small + ["--integrator", "layers", "--weights",
                                                        "random-per-layer"])
        self.numerical_fault()
        self.disk_full()
        self.bad_simulate("n = 1e8, d = 1e5", ["--n", "100000000", "--d", "100000"],
                          ["GiB"], scenario="8 memory estimate")
        self.threads()
        self.sweep_disk_full()
        self.force_not_regular()
        self.two_writers()
        self.resume_live()
        self.header_limits()
        self.early_kill()
        self.experiment_refusals()
        self.memory_of_weights()
        self.inconsistent_ranks()
        self.sweep_observables()
        self.step_counts()
        self.changed_inputs()
        self.resume_killed_early()
        self.creation_stub()
        self.fifo_inputs()
        self.table_cases()
        self.dangling_link()
        self.bad_simulate("block 1e9", ["--n", "8", "--block", "1000000000"],
                          ["block must be between 1 and n = 8"], scenario="27 block out of range")
        self.zero_attention()
        self.set_newline()
        self.sweep_input_missing_on_worker()
        self.dry_run_missing_input()
        self.out_of_memory()
        self.sweep_failed_status()
        self.crashing_metadata()
        self.crashing_metadata_python()
        self.retried_metadata()
        for sig in (signal.SIGTERM, signal.SIGINT):
            self.stuck_stop(sig)
        self.layer_time_stop()
        self.sweep_file_damage()
        self.observables_table_cases()
        self.frictions()
        self.frame_buffer_stop()
        self.frame_buffer_failure()
        self.unrecorded_runs()
        self.shared_values_extreme_beta()
        # 60000 float layers of 8 heads (about 2.5 s): time to see the third frame.
        self.stop_and_resume("44 SIGINT, then --resume (layers, 8 heads sharing their values, "
                             "float)", signal.SIGINT,
                             self.SHARED_VALUES + ["--dt", "0.01", "--T", "600", "--every",
                                                   "600", "--precision", "float"])
        self.mpi_every_rank()
        self.lifetimes_cases()


def cell(text):
    text = str(text).replace("\n", " ").replace("|", "\\|")
    return "`%s`" % text if text and "`" not in text and text not in ("—", "(empty)") \
        else text


def machine_line():
    nproc = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    return "%s, nproc %s" % (os.uname().machine, nproc)


def write_markdown(path, report, version, seconds):
    ok = sum(1 for r in report.rows if r.ok)
    fail = len(report.rows) - ok
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    lines = [
        "# nadyn reliability report",
        "",
        "Every scenario below was actually run, in a fresh temporary directory (`$TMP`), and "
        "the table records what nadyn did.",
        "",
        "- date: %s" % date,
        "- nadyn: `%s`" % version,
        "- machine: %s (HDF5 %s via h5py %s)" % (machine_line(), h5py.version.hdf5_version,
                                                 h5py.version.version),
        "- result: **%d OK, %d FAIL** of %d scenarios, in %.0f s" % (ok, fail,
                                                                     len(report.rows), seconds),
        "- regenerate with: `%s`" % REGENERATE,
        "",
        "| scenario | command (shortened) | exit status (expected → got) | first line of stderr "
        "| frames in the file before → after | frames lost | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in report.rows:
        lines.append("| " + " | ".join([
            cell(r.scenario).strip("`"), cell(r.command), "%s → %s" % (r.expected, r.got),
            cell(r.stderr), r.frames, r.lost, "OK" if r.ok else "**FAIL**"]) + " |")
    lines += [
        "",
        "## What each verdict checks",
        "",
        "1. **Bad inputs**: exit 2, stdout empty, exactly one stderr line starting `nadyn: ` "
        "that contains the words naming the problem. Each `simulate` case runs twice: into "
        "an empty directory (nothing may be created there) and with `--force` onto an "
        "existing trajectory (it must keep its bytes and its modification time; the frames "
        "column counts that file's frames). Cases naming their own file (inspect, resume, "
        "`--out` without `--force`) check that file the same way; the unwritable case checks "
        "`/nonexistent` was not created.",
        "2. **SIGINT / SIGTERM**: stopped once h5py (`swmr=True`) reads ≥ 3 frames; exit 130 "
        "(SIGINT) or 143 (SIGTERM), "
        "status `interrupted`, steps strictly increasing, every frame on the `--every` "
        "cadence up to the stop present (frames lost = cadence steps missing), all series of "
        "equal length, positions finite unit vectors, at least as many frames as read live.",
        "3. **SIGKILL (SWMR)**: the live file is readable (h5py and `nadyn inspect`); after the "
        "kill h5py (`swmr=True`) opens it with status `running`, every frame counted live just "
        "before the kill is there on the cadence and untorn, `nadyn inspect` agrees on the "
        "count, and `h5dump -H` works after `h5clear -s`. The resume rows kill a smaller run, "
        "resume it (once as is, once after `h5clear -s`) and compare every frame, bit for "
        "bit, with the uninterrupted run.",
        "   Live reads (rows 2 to 4) open the file only while its superblock says a SWMR "
        "writer has it (`in_swmr_write_mode` in the script): a reader's file lock while nadyn "
        "creates the file, or reopens it at the end to write the final attributes, makes "
        "the run itself fail.",
        "4. **Resume** (rk4, dopri5, layers): after `--resume`, status `complete` and every "
        "frame of every series (positions, magnitudes, steps, times, observables) bitwise "
        "equal to the uninterrupted run's; no frame missing or extra.",
        "5. **Rerun**: `nadyn rerun FILE --out NEW` gives the same frames bit for bit.",
        "6. **Numerical fault**: exit 1, one stderr line naming `t =` and the token, status "
        "`failed`, the last frame finite, every cadence frame before the failure time kept.",
        "7. **Disk full** (file size limit, SIGXFSZ ignored): exit 1, one stderr line "
        "mentioning `no space`, status `failed`, all series of equal length, every frame on "
        "the cadence, finite and unit-norm, and as many as the message reports.",
        "8. **Memory estimate**: refused like a bad input (exit 2, no file) with a GiB "
        "estimate.",
        "9. **Threads**: `--threads 1, 2, 3` give bitwise identical frames (and record the "
        "thread count).",
        "10. **nadyn table** (rows 25): a study of 8 long runs is signalled once its sweep file "
        "exists: SIGINT exits 130, SIGTERM 143, one stderr line and no traceback; no process "
        "naming the study is left (a `nadyn sweep` child dies with its parent, SIGKILL "
        "included) and the same command then runs at once (exit 0). A FIFO at a table's path "
        "or its `.partial`, a `reduce.py` that does not load and a read-only `--out-dir` are "
        "refused as bad inputs (one line, exit 2, no table written, the FIFO kept).",
        "11. **lifetimes** (rows 42): the study's quick form with every run censored counts "
        "them (`0` merged, `> T`) and says that there is no fit, with NaN nowhere; with one "
        "beta it says there is no rate and no linearity test; with frame times beyond T it "
        "is refused before any sweep file is made.",
        "",
    ]
    failed = [r for r in report.rows if not r.ok]
    if failed:
        lines += ["## Failures", ""]
        for r in failed:
            lines.append("- **%s**: %s" % (r.scenario, "; ".join(
                report.runner.clean(p) for p in r.problems)))
        lines.append("")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as fh:
        fh.write("\n".join(lines))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nadyn", default=os.path.join(REPO, "build", "bin", "nadyn"))
    parser.add_argument("--out", default=os.path.join(REPO, "results", "reliability.md"))
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    options = parser.parse_args()
    nadyn = os.path.abspath(options.nadyn)
    if not os.access(nadyn, os.X_OK):
        sys.exit("reliability.py: no nadyn binary at %s (cmake --build build)" % nadyn)
    version = subprocess.run([nadyn, "--version"], capture_output=True,
                             text=True).stdout.strip()
    started = time.monotonic()
    root = tempfile.mkdtemp(prefix="nadyn-reliability-")
    try:
        report = Report(Runner(nadyn, root), root)
        report.run_all()
    finally:
        if options.keep:
            print("kept", root)
        else:
            shutil.rmtree(root, ignore_errors=True)
    seconds = time.monotonic() - started
    write_markdown(options.out, report, version, seconds)
    fails = sum(1 for r in report.rows if not r.ok)
    print("%d OK, %d FAIL in %.0f s; wrote %s" % (len(report.rows) - fails, fails, seconds,
                                                  options.out))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
