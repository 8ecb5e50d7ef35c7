"""Every `$ ...` sample of the documentation prints what the documentation shows.

A sample is a line `    $ COMMAND` of an indented code block in README.md or docs/*.md
(a command ending in `\\` continues on the next line); its shown output is the block's
following lines up to the next `$` line or the end of the block. The samples of one document
run in order, in one scratch directory (holding a link to examples/), so that a sample may
read the files earlier samples wrote. A fenced code block preceded by `<!-- sample: setup -->`
is a set-up step run at its place in that order (```python with /usr/bin/python3, ```sh
with bash); every other fenced block is prose.

A sample runs with the binaries under test: a leading `nadyn` or `build/bin/nadyn` is
NADYN_CLI, `build/examples/NAME` the example program NAME, `python3` /usr/bin/python3; the
command runs in bash, stdout and stderr into one stream. The exit status must be nonzero
when the shown output ends with an error (a last line `nadyn: ...`, not `nadyn: warning:`),
and 0 otherwise (`; echo $?` shows the status as the last line).

The shown and the printed output are compared line by line, trailing blank lines dropped,
after the same normalisation of each line: whitespace runs become one space; the volatile
parts below are replaced by a placeholder; numbers match to a relative 1e-9 (a build of
another instruction set rounds the last bits differently; numbers below 1e-10 on both
sides, round-off columns, match); all other text matches exactly. A shown line `...` stands
for any number of printed lines.

Volatile parts (VOLATILE), and only these: durations printed as `S.SSS s`; the
`wall_time_seconds`, `started` and `finished` parameters; ISO dates; the path of the binary
(`.../bin/nadyn`, in `Usage:` and `command_line`); the git commit in `git_commit` and
`--version`; and the number of runs a sweep places side by side (one per core).

A sample that cannot run here (it needs root, a keyboard, a cluster, or minutes) is in a
code block preceded by `<!-- sample: not run: REASON -->`; it is counted, not run. Every
other sample is run: there is no third kind.
"""
from __future__ import annotations

import functools
import glob
import os
import re
import shlex
import subprocess
from dataclasses import dataclass, field

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NADYN = os.environ.get("NADYN_CLI", os.path.join(ROOT, "build", "bin", "nadyn"))
EXAMPLES_DIR = os.environ.get("NADYN_EXAMPLES_DIR", os.path.join(ROOT, "build", "examples"))
PYTHON = "/usr/bin/python3"


def documents():
    """README.md and every Markdown file of docs/, relative to the repository."""
    docs = sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
    return ["README.md"] + docs


# ---------------------------------------------------------------------------------------
# Extraction

MARKER = re.compile(r"^<!--\s*sample:\s*(.*?)\s*-->\s*$")
NOT_RUN = re.compile(r"^not run:\s*(\S.*)$")
PROMPT = re.compile(r"^\s*\$ \S")


@dataclass
class Sample:
    document: str
    line: int  # 1-based line of the `$`
    command: str
    expected: list[str]
    not_run: str | None = None  # the reason, when marked


@dataclass
class Setup:
    document: str
    line: int
    language: str
    code: str


@dataclass
class Document:
    name: str
    steps: list = field(default_factory=list)  # Samples and Setups, in order
    errors: list[str] = field(default_factory=list)  # malformed or stale markers


def parse(document: str) -> Document:
    lines = open(os.path.join(ROOT, document), encoding="utf-8").read().splitlines()
    parsed = Document(document)
    marker = None  # (line, text) of a marker waiting for its block
    i = 0

    def take_marker(kind_ok, what):
        nonlocal marker
        if marker is None:
            return None
        line, text = marker
        marker = None
        if not kind_ok(text):
            parsed.errors.append(f"{document}:{line}: `<!-- sample: {text} -->` is not "
                                 f"followed by {what}")
            return None
        return text

    while i < len(lines):
        line = lines[i]
        m = MARKER.match(line.strip())
        if m:
            if marker is not None:
                parsed.errors.append(f"{document}:{marker[0]}: marker without a block")
            text = m.group(1)
            if text != "setup" and not NOT_RUN.match(text):
                parsed.errors.append(f"{document}:{i + 1}: unknown marker `{line.strip()}` "
                                     "(`sample: setup` or `sample: not run: REASON`)")
            else:
                marker = (i + 1, text)
            i += 1
            continue
        if line.startswith("```"):
            language = line[3:].strip()
            end = i + 1
            while end < len(lines) and not lines[end].startswith("```"):
                end += 1
            if marker is not None and marker[1] == "setup":
                take_marker(lambda t: True, "")
                if language not in ("python", "sh"):
                    parsed.errors.append(f"{document}:{i + 1}: a setup block must be "
                                         "```python or ```sh")
                else:
                    parsed.steps.append(Setup(document, i + 1, language,
                                              "\n".join(lines[i + 1:end]) + "\n"))
            else:
                take_marker(lambda t: False, "a ```python or ```sh block")
            i = end + 1
            continue
        if line.startswith("    ") and line.strip():
            # An indented code block: indented lines and the blank lines between them.
            end = i
            while end < len(lines) and (lines[end].startswith("    ") or not lines[end].strip()):
                end += 1
            while not lines[end - 1].strip():
                end -= 1
            block = [(k + 1, lines[k][4:] if lines[k].strip() else "") for k in range(i, end)]
            samples = samples_of_block(document, block)
            reason = None
            if samples:
                text = take_marker(lambda t: True, "")
                reason = NOT_RUN.match(text).group(1) if text and text != "setup" else None
                if text == "setup":
                    parsed.errors.append(f"{document}:{i}: `sample: setup` marks a fenced block, "
                                         "not samples")
            else:
                take_marker(lambda t: False, "a block of `$` samples")
            for sample in samples:
                sample.not_run = reason
                parsed.steps.append(sample)
            i = end
            continue
        if line.strip() and marker is not None:
            take_marker(lambda t: False, "a code block")
        i += 1
    if marker is not None:
        parsed.errors.append(f"{document}:{marker[0]}: marker at the end of the file")
    # A `$` line anywhere else (a fenced block, another indent) would escape the checks.
    seen = {step.line for step in parsed.steps if isinstance(step, Sample)}
    for number, line in enumerate(lines, 1):
        if PROMPT.match(line) and number not in seen:
            parsed.errors.append(f"{document}:{number}: a `$` sample outside an indented code "
                                 "block (indent it by 4 spaces, no fence)")
    return parsed


def samples_of_block(document, block):
    """The `$` samples of one indented block: [(line number, text)] without the indent."""
    samples = []
    k = 0
    while k < len(block):
        number, text = block[k]
        if not text.startswith("$ "):
            if samples:
                samples[-1].expected.append(text)
            k += 1
            continue
        command = text[2:].strip()
        while command.endswith("\\") and k + 1 < len(block):
            k += 1
            command = command[:-1].rstrip() + " " + block[k][1].strip()
        samples.append(Sample(document, number, command, []))
        k += 1
    for sample in samples:
        while sample.expected and not sample.expected[-1].strip():
            sample.expected.pop()
    return samples


@functools.lru_cache(maxsize=None)
def parsed(document):
    return parse(document)


def all_samples():
    return [step for document in documents() for step in parsed(document).steps
            if isinstance(step, Sample)]


# ---------------------------------------------------------------------------------------
# Running

def shell_command(command: str) -> str:
    """The sample's command with the binaries under test in place of the documented ones."""
    for documented, real in (("build/bin/nadyn", NADYN), ("nadyn", NADYN),
                             ("python3", PYTHON)):
        if command == documented or command.startswith(documented + " "):
            return shlex.quote(real) + command[len(documented):]
    if command.startswith("build/examples/"):
        program, _, rest = command[len("build/examples/"):].partition(" ")
        return shlex.quote(os.path.join(EXAMPLES_DIR, program)) + (" " + rest if rest else "")
    return command


def run_step(step, cwd):
    env = dict(os.environ)
    if isinstance(step, Setup):
        program = [PYTHON, "-"] if step.language == "python" else ["bash", "-euo", "pipefail"]
        result = subprocess.run(program, input=step.code, cwd=cwd, env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    else:
        result = subprocess.run(["bash", "-c", shell_command(step.command)], cwd=cwd, env=env,
                                text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                timeout=120)
    printed = result.stdout.splitlines()
    while printed and not printed[-1].strip():
        printed.pop()
    return result.returncode, printed


@functools.lru_cache(maxsize=None)
def outcomes(document, scratch):
    """Runs the document's steps in order in `scratch`: {line: (status, printed lines)}."""
    os.symlink(os.path.join(ROOT, "examples"), os.path.join(scratch, "examples"))
    results = {}
    for step in parsed(document).steps:
        if isinstance(step, Sample) and step.not_run:
            continue
        results[step.line] = run_step(step, scratch)
    return results


@pytest.fixture(scope="session")
def scratch_of(tmp_path_factory):
    directories = {}

    def scratch(document):
        if document not in directories:
            directories[document] = str(tmp_path_factory.mktemp(
                re.sub(r"[^A-Za-z0-9]+", "_", document)))
        return directories[document]

    return scratch


# ---------------------------------------------------------------------------------------
# Comparing

VOLATILE = [
    (re.compile(r"\b\d+\.\d+ s\b"), "<duration> s"),
    (re.compile(r"^(\s*(?:wall_time_seconds|started|finished)\s+)\S.*$"), r"\1<volatile>"),
    (re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z?\b"), "<date>"),
    (re.compile(r"(?<!\S)\S*\bbin/nadyn\b"), "nadyn"),
    (re.compile(r"^(\s*git_commit\s+)\S+$"), r"\1<commit>"),
    (re.compile(r"^(nadyn \S+ )\(\S+\)$"), r"\1(<commit>)"),
    (re.compile(r"\(\d+ side by side\)"), "(<cores> side by side)"),
]

NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|\bnan\b|[-+]?\binf\b")


def normalised(line: str) -> str:
    for pattern, replacement in VOLATILE:
        line = pattern.sub(replacement, line)
    return " ".join(line.split())


def same_number(a: str, b: str) -> bool:
    x, y = float(a), float(b)
    if x != x or y != y:
        return x != x and y != y
    if abs(x) < 1e-10 and abs(y) < 1e-10:
        return True  # round-off (e.g. a relative error column): its bits are the build's
    return abs(x - y) <= 1e-9 * max(abs(x), abs(y))


def same_line(expected: str, printed: str) -> bool:
    e, p = normalised(expected), normalised(printed)
    e_numbers, p_numbers = NUMBER.findall(e), NUMBER.findall(p)
    return (NUMBER.split(e) == NUMBER.split(p) and len(e_numbers) == len(p_numbers)
            and all(same_number(a, b) for a, b in zip(e_numbers, p_numbers)))


def matches(expected: list[str], printed: list[str]) -> bool:
    """Line by line, a shown `...` standing for any number of printed lines."""

    @functools.lru_cache(maxsize=None)
    def match(i, j):
        if i == len(expected):
            return j == len(printed)
        if expected[i].strip() == "...":
            return match(i + 1, j) or (j < len(printed) and match(i, j + 1))
        return j < len(printed) and same_line(expected[i], printed[j]) and match(i + 1, j + 1)

    return match(0, 0)


# ---------------------------------------------------------------------------------------
# Tests

SAMPLES = all_samples()


def test_every_sample_is_run_or_marked_with_a_reason(capsys):
    errors = [error for document in documents() for error in parsed(document).errors]
    assert not errors, "\n".join(errors)
    total = len(SAMPLES)
    not_run = [s for s in SAMPLES if s.not_run]
    nadyn_samples = [s for s in SAMPLES if re.match(r"(build/bin/)?nadyn\b", s.command)]
    with capsys.disabled():
        print(f"\ndoc samples: {total} `$` samples ({len(nadyn_samples)} of nadyn), "
              f"{total - len(not_run)} run and compared "
              f"({sum(1 for s in nadyn_samples if not s.not_run)} of nadyn), "
              f"{len(not_run)} marked not run:")
        for s in not_run:
            print(f"  {s.document}:{s.line}: {s.command}  ({s.not_run})")
    assert all(s.not_run is None or s.not_run.strip() for s in SAMPLES)
    assert total > len(not_run) > 0


RUN = [s for s in SAMPLES if not s.not_run]


@pytest.mark.parametrize("sample", RUN, ids=[f"{s.document}:{s.line}: {s.command}" for s in RUN])
def test_sample_prints_what_the_document_shows(sample, scratch_of):
    results = outcomes(sample.document, scratch_of(sample.document))
    status, printed = results[sample.line]
    failed_setups = [f"{sample.document}:{step.line}:\n" + "\n".join(results[step.line][1])
                     for step in parsed(sample.document).steps
                     if isinstance(step, Setup) and step.line < sample.line
                     and results[step.line][0] != 0]
    assert not failed_setups, "a set-up block failed: " + "\n".join(failed_setups)
    last = sample.expected[-1] if sample.expected else ""
    ends_with_error = last.startswith("nadyn: ") and not last.startswith("nadyn: warning:")
    assert (status != 0) == ends_with_error, (
        f"`{sample.command}` exited with {status}, but {sample.document} shows "
        + ("an error" if ends_with_error else "a success") + ":\n" + "\n".join(printed))
    assert matches(sample.expected, printed), (
        f"{sample.document}:{sample.line}: `{sample.command}`\n"
        "--- the document shows:\n" + "\n".join(sample.expected) +
        "\n--- the program printed:\n" + "\n".join(printed))
