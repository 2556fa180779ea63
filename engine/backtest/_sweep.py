"""Sweeps: rule variants backtested in parallel (processes or Ray actors) on one recording,
ranked; each worker reads the recording once.

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

import atexit
import contextlib
import importlib
import io
import itertools
import logging
import multiprocessing
import os
import secrets
import shutil
import socket
import tempfile
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from ruamel.yaml import YAML

from .._errors import ConfigError
from ._format import Record, read_records, recording_span, segment_paths
from ._lookahead import replaying
from ._report import build_report
from ._run import BacktestOptions, run_backtest

__all__ = ["SweepStats", "Variant", "apply_overrides", "load_sweep", "run_sweep", "sweep_serially"]


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


Job = tuple[str, str, str, int, float]
"""One variant's work: ``(name, rules text, recording directory, seed, latency)``."""


@dataclass
class SweepStats:
    """How a sweep ran, filled in by :func:`run_sweep` when given one.

    ``reads``: for each worker (``host:pid``), how many times it read the recording (1
    each: a worker reads it once, for its first variant, and keeps it for the rest);
    ``variants``: how many variants each worker ran; ``cpu``: the CPU seconds each
    worker's process had used by the end of its last variant (imports and the read
    included: what the sweep cost, whatever else the machine was doing); ``startup``:
    seconds spent starting Ray and its workers (0 for the process pool, whose start is
    part of the run)."""

    reads: dict[str, int] = field(default_factory=dict)
    variants: dict[str, int] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)
    startup: float = 0.0


@dataclass(frozen=True)
class _Loaded:
    """A recording read into memory: its records and the time of its last one."""

    path: str
    records: tuple[Record, ...]
    end: float


_loaded: _Loaded | None = None
_reads = 0
"""How many times this process has read a recording (what the workers report)."""


HOLD_LIMIT = 64 * 1024 * 1024
"""Bytes of gzip segments above which a worker does not hold the recording in memory but
reads it afresh for each variant. Decoded records take ~30x their gzip size (measured on
a 3 MB recording: 92 MB held); a week of a busy market held by every worker would not fit
in memory, while a recording under the limit costs at most ~2 GB per worker."""


def _segments_bytes(path: str) -> int:
    return sum(segment.stat().st_size for segment in segment_paths(Path(path)))


def _recording(path: str) -> _Loaded:
    """The recording at ``path``, read once per process and kept: a worker's later
    variants replay the same records (the replay never changes them; the test that
    compares a sweep with :func:`sweep_serially`, which reads afresh, would see it)."""
    global _loaded, _reads
    if _loaded is None or _loaded.path != path:
        _loaded = None  # the old one freed before the new one is read
        records = tuple(read_records(path))
        _, end = recording_span(path)
        _loaded = _Loaded(path, records, end)
        _reads += 1
    return _loaded


def _records_of(path: str) -> tuple[Iterable[Record], float]:
    """The records a worker replays a variant over: the ones it holds, or, for a recording
    over :data:`HOLD_LIMIT` bytes of gzip, a fresh stream of them, so
    that a worker's memory does not grow with the recording."""
    global _loaded, _reads
    if _segments_bytes(path) > HOLD_LIMIT:
        _loaded = None
        _reads += 1
        return read_records(path), recording_span(path)[1]
    loaded = _recording(path)
    return loaded.records, loaded.end


def _backtest(job: Job, records: Iterable[Record], end: float) -> dict[str, Any]:
    """One variant replayed over ``records``: its summary (without the purchase list)."""
    from .._plugins import make_plugin_host
    from ..rules import load_rules_text

    name, text, data, seed, latency = job
    host = make_plugin_host()
    ruleset = load_rules_text(text, f"<variant {name}>", host=host)
    options = BacktestOptions(seed=seed, latency=latency)

    async def main() -> dict[str, Any]:
        run = await run_backtest(ruleset, iter(records), host=host, end=end, options=options)
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


def _run_variant(job: Job) -> dict[str, Any]:
    """One variant in a worker (a pool's process or a Ray actor), on the recording this
    worker has read once; the result says which worker ran it and how often it read."""
    # a worker says nothing itself: its warnings go back, counted, in its result
    logging.getLogger("snipe").setLevel(logging.ERROR)
    result = _backtest(job, *_records_of(job[2]))
    result[_WORKER] = (f"{socket.gethostname()}:{os.getpid()}", _reads, time.process_time())
    return result


_WORKER = "_worker"
"""The key of a worker's own note in its result, taken out before results are ranked."""


def _jobs(sweep: Sweep, data: str | os.PathLike[str]) -> list[Job]:
    try:
        base = sweep.rules_path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read ({exc.strerror})", location=str(sweep.rules_path)) from None
    return [
        (v.name, apply_overrides(base, v.overrides), str(data), sweep.seed, sweep.latency)
        for v in sweep.variants
    ]


def _ranked(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    results.sort(
        key=lambda r: (-r["totals"]["realised_margin"], r["totals"]["spend"], r["variant"])
    )
    for rank, result in enumerate(results, start=1):
        result["rank"] = rank
    return results


def run_sweep(
    sweep: Sweep,
    data: str | os.PathLike[str],
    *,
    jobs: int | None = None,
    ray_address: str | None = None,
    stats: SweepStats | None = None,
) -> list[dict[str, Any]]:
    """Backtest every variant on ``jobs`` workers (all cores by default) and rank them.

    Each worker reads the recording once, for its first variant, and replays the records
    it keeps in memory for the others (so a worker holds one recording's records).

    With ``ray_address`` (``"local"`` for a Ray instance started here, else the address of
    a running cluster) the workers are Ray actors instead of processes here, at most
    ``jobs`` of them (the cluster's CPUs by default): the optional extra
    ``pip install 'snipe[ray]'``; the recording directory must be readable at the same
    path on every node. A local instance listens on 127.0.0.1 only, has no dashboard and
    sends no usage statistics (:data:`LOCAL_RAY_ENVIRONMENT`; set those variables
    yourself to differ). ``stats``, when given, is filled in (:class:`SweepStats`)."""
    jobs_list = _jobs(sweep, data)
    stats = stats if stats is not None else SweepStats()
    if ray_address is not None:
        results = _on_ray(jobs_list, ray_address, jobs, stats)
    else:
        workers = max(1, min(jobs or os.cpu_count() or 1, len(jobs_list)))
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            results = list(pool.map(_run_variant, jobs_list))
    for result in results:
        worker, reads, cpu = result.pop(_WORKER)
        stats.reads[worker] = max(reads, stats.reads.get(worker, 0))
        stats.cpu[worker] = max(cpu, stats.cpu.get(worker, 0.0))
        stats.variants[worker] = stats.variants.get(worker, 0) + 1
    return _ranked(results)


def sweep_serially(sweep: Sweep, data: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The same sweep in this process, one variant after another, each reading the
    recording afresh: the reference a parallel sweep must equal byte for byte (and the
    serial time it is measured against). The ``snipe`` logger is quiet meanwhile."""
    logger = logging.getLogger("snipe")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        results = [
            _backtest(job, read_records(job[2]), recording_span(job[2])[1])
            for job in _jobs(sweep, data)
        ]
    finally:
        logger.setLevel(level)
    return _ranked(results)


LOCAL_RAY_ENVIRONMENT = (
    # no usage statistics sent to the Ray project
    ("RAY_USAGE_STATS_ENABLED", "0"),
    # the head node on the loopback address: Ray otherwise finds "its" address by opening a
    # UDP socket towards 8.8.8.8 and binds its services to the public interface
    ("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0"),
)
"""What ``--ray local`` sets in the environment (before Ray is imported, and inherited by
Ray's own processes) unless the user has set it already."""


_TOKEN_SETTINGS = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")


def _token_for_this_process() -> None:
    """Local instances started by this process ask for one token of its own.

    Ray (2.5x and later) protects a local instance with a token, made at its first start
    in ``~/.ray/auth_token`` and then cached by the driver; under :func:`_quiet_home`
    that file goes with the temporary home, so a second instance started by the same
    process (a bench's N = 1 then N = 2, two tests) would find no token and fail. A
    random token in a private file (mode 0600 in a 0700 directory, removed at exit),
    named by ``RAY_AUTH_TOKEN_PATH`` for as long as this process lives, serves them all.
    Left alone when the user set any of Ray's token settings; the token itself is never
    logged or printed."""
    if any(os.environ.get(name) for name in _TOKEN_SETTINGS):
        return
    directory = tempfile.mkdtemp(prefix="snipe-ray-token-")  # 0700
    atexit.register(shutil.rmtree, directory, True)
    path = Path(directory, "auth_token")
    path.touch(mode=0o600)
    path.write_text(secrets.token_hex(32), encoding="ascii")
    # the mode is left to Ray, which turns tokens on for a new local instance and refreshes
    # its own cached settings (setting the mode here would miss them if Ray was imported)
    os.environ["RAY_AUTH_TOKEN_PATH"] = str(path)


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


class _Worker:
    """A Ray actor: one process that runs variant after variant on the recording it reads
    once (:func:`_run_variant`); an actor, not a task each, so that the workers are
    exactly the ones started here and each keeps its records for the whole sweep."""

    def ready(self) -> None:
        """Answers once the actor's process is up (what the start-up time ends with)."""

    def run(self, job: Job) -> dict[str, Any]:
        return _run_variant(job)


def _on_ray(
    jobs: list[Job], address: str, workers: int | None, stats: SweepStats
) -> list[dict[str, Any]]:
    if address == "local":
        for name, value in LOCAL_RAY_ENVIRONMENT:
            os.environ.setdefault(name, value)
        _token_for_this_process()
    try:
        ray: Any = importlib.import_module("ray")  # optional: no stubs needed
    except ImportError:
        raise ConfigError(
            "Ray is not installed: pip install 'snipe[ray]'", location="--ray"
        ) from None
    began = time.perf_counter()
    started = not ray.is_initialized()
    if started:
        if address == "local":
            with _quiet_home():
                # a private instance on this machine only: bound to 127.0.0.1, no
                # dashboard, as many CPUs as workers asked for (else all of them)
                ray.init(
                    num_cpus=workers,
                    include_dashboard=False,
                    log_to_driver=False,
                    _node_ip_address="127.0.0.1",
                )
        else:
            ray.init(address=address, log_to_driver=False)
    pool: list[Any] = []
    try:
        cpus = int(ray.cluster_resources().get("CPU", 1))
        count = max(1, min(workers or cpus, len(jobs)))
        actor = ray.remote(num_cpus=1)(_Worker)
        pool = [actor.remote() for _ in range(count)]
        ray.get([worker.ready.remote() for worker in pool])
        stats.startup = time.perf_counter() - began
        # each variant to the first worker free (variants differ in cost)
        actors = importlib.import_module("ray.util").ActorPool(pool)
        return list(actors.map(lambda worker, job: worker.run.remote(job), jobs))
    finally:
        for worker in pool:
            ray.kill(worker)  # its records freed now, not when the driver's handle goes
        if started:
            ray.shutdown()
