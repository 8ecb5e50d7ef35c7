"""bench/provenance.py: a benchmark refuses a binary built from another commit than the tree
it reports on; and this build's nadyn names the commit of its tree (the commit is stamped at
every build, not at configure time: an incremental build after a commit kept the old one)."""
import importlib.util
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("bench_provenance", ROOT / "bench" / "provenance.py")
provenance = importlib.util.module_from_spec(spec)
spec.loader.exec_module(provenance)


def test_the_commit_is_read_from_the_version_line():
    assert provenance.built_commit("nadyn 0.1.0 (1211f0be6e7b)") == "1211f0be6e7b"
    assert provenance.built_commit("nadyn 0.1.0 (ddb88a2303a7-dirty)\n") == "ddb88a2303a7-dirty"
    assert provenance.built_commit("nadyn 0.1.0") == "unknown"
    assert provenance.built_commit("") == "unknown"


def test_another_commit_is_a_mismatch_and_dirt_is_not():
    assert provenance.mismatch("nadyn 0.1.0 (1211f0be6e7b)", "ddb88a2303a7") == \
        "was built from 1211f0be6e7b, the source tree is at ddb88a2303a7"
    assert provenance.mismatch("nadyn 0.1.0 (ddb88a2303a7)", "ddb88a2303a7-dirty") is None
    assert provenance.mismatch("nadyn 0.1.0 (ddb88a2303a7-dirty)", "ddb88a2303a7") is None
    # Outside a checkout, or from a tarball ("unknown"), there is nothing to compare.
    assert provenance.mismatch("nadyn 0.1.0 (1211f0be6e7b)", None) is None
    assert provenance.mismatch("nadyn 0.1.0 (unknown)", "ddb88a2303a7") is None


def git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def test_a_benchmark_refuses_a_stale_binary_with_exit_2(tmp_path):
    repo = tmp_path / "tree"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "a").write_text("a\n")
    git(repo, "add", "a")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "a")
    head = git(repo, "describe", "--always", "--dirty", "--abbrev=12")
    fake = tmp_path / "nadyn"
    script = ("import sys\n"
              "sys.path.insert(0, sys.argv[1])\n"
              "import provenance\n"
              "print(provenance.checked_version(sys.argv[2], sys.argv[3]))\n")
    for commit, status in (("0123456789ab", 2), (head, 0)):
        fake.write_text(f"#!/bin/sh\necho 'nadyn 0.1.0 ({commit})'\n")
        fake.chmod(0o755)
        result = subprocess.run([sys.executable, "-c", script, str(ROOT / "bench"), str(fake),
                                 str(repo)], capture_output=True, text=True)
        assert result.returncode == status, result.stderr
        if status:
            assert result.stdout == ""
            assert len(result.stderr.strip().splitlines()) == 1
            assert f"was built from 0123456789ab, the source tree is at {head}" in result.stderr
        else:
            assert result.stdout.strip() == f"nadyn 0.1.0 ({head})"


def test_this_build_names_its_trees_commit(cli):
    tree = provenance.tree_commit(str(ROOT))
    if tree is None:
        pytest.skip("not a git checkout: the build says 'unknown'")
    version = subprocess.run([cli, "--version"], capture_output=True, text=True,
                             check=True).stdout
    assert provenance.built_commit(version) != "unknown"
    assert provenance.mismatch(version, tree) is None, \
        f"{version.strip()}: rebuild (cmake --build) before the tests"
