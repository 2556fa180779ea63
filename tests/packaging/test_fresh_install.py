"""The package installs into a fresh virtual environment WITHOUT extras and works.

Every import of ``engine`` must be satisfied by ``[project] dependencies`` alone: the test
suite's own environment has the dev extras (and their dependencies), which can hide a
missing declaration (``sniffio`` was imported but not declared once). So this builds the
package from a copy of the sources (a build in the worktree would leave ``build/`` behind),
installs it into a new venv with pip (from the index pip is configured with, as a user's
``pip install`` would), and runs the installed ``snipe`` from outside the source tree with
no ``PYTHONPATH``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INSTALL_TIMEOUT = 900  # seconds: a cold pip cache on a slow CI machine

pytestmark = pytest.mark.slow


def _copy_sources(target: Path) -> Path:
    source = target / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(
        ROOT / "engine",
        source / "engine",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    return source


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.pop("VIRTUAL_ENV", None)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _run(args: list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=cwd, env=_clean_env(), capture_output=True, text=True, timeout=timeout
    )


def test_a_plain_install_without_extras_runs_help_and_check(tmp_path: Path) -> None:
    source = _copy_sources(tmp_path)
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    bin_dir = env_dir / ("Scripts" if sys.platform == "win32" else "bin")
    python = bin_dir / "python"
    installed = _run(
        [str(python), "-m", "pip", "install", "--quiet", str(source)],
        cwd=tmp_path,
        timeout=INSTALL_TIMEOUT,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]

    # nothing beyond the declared dependencies: no dev extra slipped in
    listed = _run([str(python), "-m", "pip", "list", "--format=freeze"], cwd=tmp_path)
    names = {line.split("==")[0].lower() for line in listed.stdout.split()}
    assert {"pytest", "trio", "ray", "matplotlib", "hypothesis"}.isdisjoint(names)

    snipe = bin_dir / "snipe"
    helped = _run([str(snipe), "--help"], cwd=tmp_path)
    assert helped.returncode == 0, helped.stderr[-3000:]
    assert "usage: snipe" in helped.stdout

    shutil.copy2(ROOT / "rules.example.yaml", tmp_path / "rules.example.yaml")
    checked = _run([str(snipe), "check", "rules.example.yaml"], cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout[-2000:] + checked.stderr[-3000:]
    assert "ok: rules.example.yaml" in checked.stdout

    # the package came from the venv, not from a source tree on the path
    where = _run([str(python), "-c", "import engine; print(engine.__file__)"], cwd=tmp_path)
    assert str(env_dir) in where.stdout, where.stdout + where.stderr
