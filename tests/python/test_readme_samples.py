"""The documentation's sample outputs are what the program prints.

Every indented `$ nadyn ...` sample of README.md and docs/*.md whose command is
deterministic (listed in CHECKED, with the file that shows it) is run with the binary under
test, in a scratch directory after the commands it
depends on, and its printed lines are compared with the file's: text exactly, numbers to
a relative 1e-9 (the last digits of a float may differ between instruction sets; numbers
below 1e-10, round-off columns, only need to be that small on both sides), up to a
line `...` where the file elides the rest. A command shown in several files is checked in
each.
"""
import glob
import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NADYN = os.environ.get("NADYN_CLI", os.path.join(ROOT, "build", "bin", "nadyn"))

# Sample command -> the commands that must run first (in the same directory).
CHECKED = {
    "nadyn reduced --scheme peri-ln --T 1000 --samples 6 --spacing log": [],
    "nadyn reduced --scheme pre-ln --attention unnormalized --n 16 --beta 1 --T 10 --samples 4": [],
    "nadyn table initial --format csv": [],
    "nadyn inspect mix.h5 --csv | head -3": [
        "nadyn simulate --scheme mix-ln --n 8 --d 8 --init orthogonal --integrator dopri5 "
        "--rtol 1e-10 --T 10 --out mix.h5 --quiet"],
}

# Sample command -> the file (relative to the repository) that must show it.
SHOWN_IN = {
    "nadyn reduced --scheme peri-ln --T 1000 --samples 6 --spacing log": "docs/cli.md",
    "nadyn reduced --scheme pre-ln --attention unnormalized --n 16 --beta 1 --T 10 --samples 4":
        "docs/cli.md",
    "nadyn table initial --format csv": "docs/cli.md",
    "nadyn inspect mix.h5 --csv | head -3": "docs/cli.md",
}


def documents():
    """README.md and every Markdown file of docs/, relative to the repository."""
    docs = sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
    return ["README.md"] + docs


NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^nan$|^[-+]?inf$")


def samples_of(document):
    """(command, expected lines) for every `    $ ` line of one document."""
    lines = open(os.path.join(ROOT, document), encoding="utf-8").read().splitlines()
    samples = []
    for i, line in enumerate(lines):
        if not line.startswith("    $ "):
            continue
        expected = []
        for following in lines[i + 1:]:
            if not following.startswith("    ") or following.startswith("    $ "):
                break
            expected.append(following[4:])
        samples.append((line[6:].strip(), expected))
    return samples


def same_token(a, b):
    if NUMBER.match(a) and NUMBER.match(b):
        x, y = float(a), float(b)
        if x != x or y != y:
            return x != x and y != y
        if abs(x) < 1e-10 and abs(y) < 1e-10:
            return True  # round-off (e.g. a relative error column): its bits are the build's
        return abs(x - y) <= 1e-9 * max(abs(x), abs(y))
    return a == b


def same_line(expected, printed):
    e, p = re.split(r"[\s,]+", expected.strip()), re.split(r"[\s,]+", printed.strip())
    return len(e) == len(p) and all(same_token(a, b) for a, b in zip(e, p))


def run(command, cwd):
    shell = command.replace("nadyn ", NADYN + " ", 1) if command.startswith("nadyn ") else command
    result = subprocess.run(shell, shell=True, cwd=cwd, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, f"{command}: exit {result.returncode}\n{result.stderr}"
    return result.stdout.splitlines()


def checked_samples():
    """(document, command, expected lines) for every appearance of a CHECKED command."""
    return [(document, command, expected) for document in documents()
            for command, expected in samples_of(document) if command in CHECKED]


def test_every_checked_sample_is_in_its_document():
    assert set(SHOWN_IN) == set(CHECKED)
    for command, document in SHOWN_IN.items():
        assert os.path.isfile(os.path.join(ROOT, document)), f"{document} is missing"
        commands = [shown for shown, _ in samples_of(document)]
        assert command in commands, f"{document} no longer shows `$ {command}`"


CHECKED_SAMPLES = checked_samples()


@pytest.mark.parametrize("document,command,expected", CHECKED_SAMPLES,
                         ids=[f"{document}: {command}" for document, command, _ in CHECKED_SAMPLES])
def test_sample_is_what_the_program_prints(document, command, expected, tmp_path):
    assert expected, f"{document} shows no output under `$ {command}`"
    for setup in CHECKED[command]:
        run(setup, tmp_path)
    printed = run(command, tmp_path)
    for k, line in enumerate(expected):
        if line.strip() == "...":
            break
        assert k < len(printed), (
            f"`{command}` printed {len(printed)} lines; {document} shows more")
        assert same_line(line, printed[k]), (
            f"`{command}`, line {k + 1}:\n  {document}:  {line}\n  program: {printed[k]}")
    else:
        assert len(printed) == len(expected), (
            f"`{command}` printed {len(printed)} lines, {document} shows {len(expected)}")
