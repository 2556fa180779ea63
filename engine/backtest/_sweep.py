"""Sweeps: rule variants backtested in parallel processes on one recording, ranked.

A sweep file (YAML)::

    rules: rules.example.yaml        # the base rules file, relative to the sweep file
    seed: 0                          # optional
    latency_ms: 250                  # optional
    variants:                        # each: a name and the settings it changes
      - name: base
      - name: greedy-redlines
        set: {redline-discount.discount: 12, budgets.per_day: "300.00"}
    grid:                            # optional: every combination becomes a variant
      redline-discount.discount: [12, 18, 25]

A key is ``<rule name>.<setting>[.<sub-setting>]`` or ``budgets.<setting>``; values are
written as in the rules file. Variants are ranked by realised margin (then by spend, lower
first, then by name).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import itertools
import logging
import multiprocessing
import os
import tempfile
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from ruamel.yaml import YAML

from .._errors import ConfigError
from ._format import read_records, recording_span
from ._lookahead import replaying
from ._report import build_report
from ._run import BacktestOptions, run_backtest

__all__ = ["Variant", "apply_overrides", "load_sweep", "run_sweep"]


@dataclass(frozen=True)
class Variant:
    name: str
    overrides: tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class Sweep:
    rules_path: Path
    variants: tuple[Variant, ...]
    seed: int
    latency: float


def load_sweep(path: str | os.PathLike[str]) -> Sweep:
    """Read a sweep file; errors name the file and the key."""
    file = Path(path)
    try:
        data = YAML(typ="safe").load(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read ({exc.strerror})", location=str(file)) from None
    except Exception as exc:  # ruamel's YAML errors carry their own line:column
        raise ConfigError(f"not valid YAML: {exc}", location=str(file)) from None
    if not isinstance(data, dict) or "rules" not in data:
        raise ConfigError("a sweep needs a `rules:` file", location=str(file), field="rules")
    variants = []
    for index, entry in enumerate(data.get("variants") or []):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise ConfigError(
                "each variant needs a name", location=str(file), field=f"variants[{index}]"
            )
        overrides = entry.get("set") or {}
        if not isinstance(overrides, dict):
            raise ConfigError(
                "`set` must be a mapping", location=str(file), field=f"variants[{index}].set"
            )
        variants.append(Variant(entry["name"], tuple(overrides.items())))
    grid = data.get("grid") or {}
    if not isinstance(grid, dict) or not all(isinstance(v, list) for v in grid.values()):
        raise ConfigError("`grid` maps keys to lists of values", location=str(file), field="grid")
    keys = list(grid)
    for values in itertools.product(*(grid[k] for k in keys)):
        name = ",".join(f"{k}={v}" for k, v in zip(keys, values, strict=True))
        variants.append(Variant(name, tuple(zip(keys, values, strict=True))))
    if not variants:
        variants.append(Variant("base", ()))
    names = [v.name for v in variants]
    if len(set(names)) != len(names):
        raise ConfigError("variant names must be unique", location=str(file), field="variants")
    return Sweep(
        rules_path=(file.parent / str(data["rules"])).resolve(),
        variants=tuple(variants),
        seed=int(data.get("seed", 0)),
        latency=float(data.get("latency_ms", 250)) / 1000,
    )


def apply_overrides(rules_text: str, overrides: tuple[tuple[str, Any], ...]) -> str:
    """The rules file text with ``overrides`` applied (comments and layout kept)."""
    yaml = YAML()
    document = yaml.load(rules_text)
    for key, value in overrides:
        head, _, rest = str(key).partition(".")
        if not rest:
            raise ConfigError(f"{key!r}: expected <rule>.<setting> or budgets.<setting>")
        if head == "budgets":
            target = document.setdefault("budgets", {})
        else:
            target = next((r for r in document.get("rules", []) if r.get("name") == head), None)
            if target is None:
                raise ConfigError(f"{key!r}: there is no rule named {head!r}")
        *path, last = rest.split(".")
        for part in path:
            target = target.setdefault(part, {})
        target[last] = value
    out = io.StringIO()
    yaml.dump(document, out)
    return out.getvalue()


def _run_variant(job: tuple[str, str, str, int, float]) -> dict[str, Any]:
    """One variant in a worker process: its summary (without the purchase list)."""
    from .._plugins import make_plugin_host
    from ..rules import load_rules_text

    name, text, data, seed, latency = job
    # a worker says nothing itself: its warnings go back, counted, in its result
    logging.getLogger("snipe").setLevel(logging.ERROR)
    host = make_plugin_host()
    ruleset = load_rules_text(text, f"<variant {name}>", host=host)
    _, end = recording_span(data)
    options = BacktestOptions(seed=seed, latency=latency)

    async def main() -> dict[str, Any]:
        run = await run_backtest(ruleset, read_records(data), host=host, end=end, options=options)
        summary = build_report(run).summary
        return {
            "variant": name,
            "fingerprint": summary["fingerprint"],
            "totals": summary["totals"],
            "missed": summary["missed"],
            "warnings": run.warnings,
        }

    with replaying(data):  # for plugins that read recorded history
        return anyio.run(main)


def run_sweep(
    sweep: Sweep,
    data: str | os.PathLike[str],
    *,
    jobs: int | None = None,
    ray_address: str | None = None,
) -> list[dict[str, Any]]:
    """Backtest every variant (``jobs`` processes at a time) and rank them.

    With ``ray_address`` (``"local"`` for a Ray instance started here, else the address of
    a running cluster) the variants run as Ray tasks instead: the optional extra
    ``pip install 'snipe[ray]'``; the recording directory must be readable at the same
    path on every node. A local instance listens on 127.0.0.1 only and sends no usage
    statistics (:data:`LOCAL_RAY_ENVIRONMENT`; set those variables yourself to differ)."""
    try:
        base = sweep.rules_path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read ({exc.strerror})", location=str(sweep.rules_path)) from None
    jobs_list = [
        (v.name, apply_overrides(base, v.overrides), str(data), sweep.seed, sweep.latency)
        for v in sweep.variants
    ]
    if ray_address is not None:
        results = _on_ray(jobs_list, ray_address)
    else:
        workers = max(1, min(jobs or os.cpu_count() or 1, len(jobs_list)))
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            results = list(pool.map(_run_variant, jobs_list))
    results.sort(
        key=lambda r: (-r["totals"]["realised_margin"], r["totals"]["spend"], r["variant"])
    )
    for rank, result in enumerate(results, start=1):
        result["rank"] = rank
    return results


LOCAL_RAY_ENVIRONMENT = (
    # no usage statistics sent to the Ray project
    ("RAY_USAGE_STATS_ENABLED", "0"),
    # the head node on the loopback address: Ray otherwise finds "its" address by opening a
    # UDP socket towards 8.8.8.8 and binds its services to the public interface
    ("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0"),
)
"""What ``--ray local`` sets in the environment (before Ray is imported, and inherited by
Ray's own processes) unless the user has set it already."""


@contextlib.contextmanager
def _quiet_home() -> Iterator[None]:
    """Ray's processes started meanwhile see a home directory holding a cluster file.

    Ray (2.x) always starts a usage-statistics process, which, even with the statistics
    off, asks the cloud metadata address (169.254.169.254) which cloud it runs on unless
    ``~/ray_bootstrap_config.yaml`` names a provider. A local instance has none to ask about.
    """
    if os.environ.get("RAY_USAGE_STATS_ENABLED") != "0":
        yield  # the user asked for statistics: leave Ray as it is
        return
    saved = os.environ.get("HOME")
    with tempfile.TemporaryDirectory(prefix="snipe-ray-") as home:
        Path(home, "ray_bootstrap_config.yaml").write_text("provider: {type: local}\n")
        os.environ["HOME"] = home
        try:
            yield
        finally:
            if saved is None:
                os.environ.pop("HOME", None)
            else:
                os.environ["HOME"] = saved


def _on_ray(jobs: list[tuple[str, str, str, int, float]], address: str) -> list[dict[str, Any]]:
    if address == "local":
        for name, value in LOCAL_RAY_ENVIRONMENT:
            os.environ.setdefault(name, value)
    try:
        ray: Any = importlib.import_module("ray")  # optional: no stubs needed
    except ImportError:
        raise ConfigError(
            "Ray is not installed: pip install 'snipe[ray]'", location="--ray"
        ) from None
    started = not ray.is_initialized()
    if started:
        if address == "local":
            with _quiet_home():
                # a private instance on this machine only: bound to 127.0.0.1, no dashboard
                ray.init(include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1")
        else:
            ray.init(address=address, log_to_driver=False)
    try:
        task = ray.remote(_run_variant)
        return list(ray.get([task.remote(job) for job in jobs]))
    finally:
        if started:
            ray.shutdown()
