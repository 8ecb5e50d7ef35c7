"""The nadyn a benchmark times, checked against the source tree it reports on.

A report's header names the binary's own `nadyn --version` (the commit it was built from).
A binary older than the tree would put another commit's figures under this tree's name, so
the benchmarks refuse it (exit 2) before they time anything. The build stamps the commit at
every `cmake --build` (cmake/NadynGitCommit.cmake); "-dirty" is not compared: a benchmark of
uncommitted work is allowed and says so in its header."""

from __future__ import annotations

import re
import subprocess
import sys


def built_commit(version: str) -> str:
    """The commit in `nadyn --version`'s "nadyn X.Y.Z (COMMIT)", or "unknown"."""
    match = re.search(r"\(([^()\s]+)\)\s*$", version)
    return match.group(1) if match else "unknown"


def tree_commit(root: str) -> str | None:
    """`git describe --always --dirty --abbrev=12` of root, or None outside a git checkout."""
    try:
        result = subprocess.run(
            ["git", "-C", root, "describe", "--always", "--dirty", "--abbrev=12"],
            capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return result.stdout.strip() or None


def mismatch(version: str, tree: str | None) -> str | None:
    """Why a binary printing version does not belong to a tree at commit tree, or None."""
    built = built_commit(version)
    if tree is None or built == "unknown":
        return None
    if built.removesuffix("-dirty") != tree.removesuffix("-dirty"):
        return f"was built from {built}, the source tree is at {tree}"
    return None


def checked_version(nadyn: str, root: str) -> str:
    """`nadyn --version` of the binary nadyn; exits 2 with a one-line error when it was built
    from another commit than root's."""
    version = subprocess.run([nadyn, "--version"], capture_output=True, text=True).stdout.strip()
    why = mismatch(version, tree_commit(root))
    if why:
        print(f"{sys.argv[0]}: {nadyn} {why}: rebuild it (cmake --build BUILD) so that the "
              "report names the commit it times", file=sys.stderr)
        sys.exit(2)
    return version
