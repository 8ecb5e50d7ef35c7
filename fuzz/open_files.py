#!/usr/bin/python3
"""Fuzzes nadyn.open (and nadyn.frame_count) on damaged copies of real nadyn files.

    /usr/bin/python3 fuzz/open_files.py [--seconds S] [--seed N] [--crashes DIR] [SEED_FILE...]
    /usr/bin/python3 fuzz/open_files.py --replay INPUT     # one input as it is, no mutation

Each input is a seed file (fuzz/seeds/whole_files/ by default: a complete run, one killed in
SWMR mode, a --no-swmr run, a sweep) with a few bytes flipped, set to 0x00 or 0xff, or cut
off, mostly within its first 64 KiB where the metadata is. A forked interpreter calls
nadyn.open on it, the way a user's session would. nadyn.open walks a file's structure in a
child process of its own first, so that libhdf5's crashes on damaged metadata become an
OSError: the interpreter itself must survive every input. A bug is the interpreter dying on a
signal (a crash nadyn.open let through), or hanging for more than 45 s; an exception of any
kind is a result. The inputs that found one go to --crashes (default fuzz/crashes/) as
open_files-<sha1>.h5; the script exits 1 if there were any.
"""
import argparse
import hashlib
import os
import random
import signal
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import nadyn  # noqa: E402 (after the path of this tree's package)

HANG_SECONDS = 45.0


def mutate(data: bytes, rng: random.Random) -> bytes:
    """A few byte-level changes, mostly in the metadata at the start of the file."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 6)):
        span = min(len(out), 65536) if rng.random() < 0.8 else len(out)
        at = rng.randrange(span)
        kind = rng.random()
        if kind < 0.6:
            out[at] ^= 1 << rng.randrange(8)
        elif kind < 0.8:
            out[at] = rng.choice((0x00, 0xFF))
        else:
            out[at] = rng.randrange(256)
    if rng.random() < 0.05:
        del out[rng.randrange(len(out) // 2, len(out)):]
    return bytes(out)


def open_in_interpreter(path: str) -> tuple[str, int]:
    """("ok" | "error" | "crash" | "hang", signal) of nadyn.open in a forked interpreter."""
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.setpgid(0, 0)  # a group of its own: a hang ends with nadyn.open's reader too
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            nadyn.frame_count(path)
            nadyn.open(path).close()
        except Exception:  # noqa: BLE001 (any exception is a clean result)
            code = 1
        os._exit(code)
    try:
        os.setpgid(pid, pid)  # as the child does: whichever runs first
    except OSError:
        pass
    deadline = time.monotonic() + HANG_SECONDS
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            try:
                os.killpg(pid, signal.SIGKILL)  # our own child's group, by its id
            except ProcessLookupError:
                pass
            os.waitpid(pid, 0)
            return "hang", 0
        time.sleep(0.002)
    if os.WIFSIGNALED(status):
        return "crash", os.WTERMSIG(status)
    return ("ok" if os.WEXITSTATUS(status) == 0 else "error"), 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: time)")
    parser.add_argument("--crashes", default=os.path.join(HERE, "crashes"))
    parser.add_argument("--replay", help="open this file as it is and say how it ended")
    parser.add_argument("seeds", nargs="*")
    options = parser.parse_args()
    if options.replay:
        outcome, sig = open_in_interpreter(options.replay)
        print("open_files: %s: %s%s" % (options.replay, outcome,
                                        " (%s)" % signal.Signals(sig).name if sig else ""))
        return 1 if outcome in ("crash", "hang") else 0
    seed_paths = options.seeds or sorted(
        os.path.join(HERE, "seeds", "whole_files", name)
        for name in os.listdir(os.path.join(HERE, "seeds", "whole_files")))
    seeds = []
    for path in seed_paths:
        with open(path, "rb") as f:
            seeds.append(f.read())
    seed = options.seed if options.seed is not None else int(time.time())
    rng = random.Random(seed)
    counts = {"ok": 0, "error": 0, "crash": 0, "hang": 0}
    found = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="nadyn-open-fuzz-") as tmp:
        path = os.path.join(tmp, "input.h5")
        while time.monotonic() - started < options.seconds:
            data = mutate(rng.choice(seeds), rng)
            with open(path, "wb") as f:
                f.write(data)
            outcome, sig = open_in_interpreter(path)
            counts[outcome] += 1
            if outcome in ("crash", "hang"):
                os.makedirs(options.crashes, exist_ok=True)
                name = "open_files-%s.h5" % hashlib.sha1(data).hexdigest()
                with open(os.path.join(options.crashes, name), "wb") as f:
                    f.write(data)
                what = "hang (> %.0f s)" % HANG_SECONDS if outcome == "hang" else \
                    "crash (%s)" % signal.Signals(sig).name
                print("open_files: %s: %s" % (what, os.path.join(options.crashes, name)),
                      file=sys.stderr)
                found.append(name)
    total = sum(counts.values())
    print("open_files: %d inputs in %.0f s (seed %d): %d opened, %d refused with an exception, "
          "%d crashed the interpreter, %d hung" % (total, time.monotonic() - started, seed,
                                                  counts["ok"], counts["error"], counts["crash"],
                                                  counts["hang"]), file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
