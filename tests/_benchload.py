"""A script of ``bench/`` loaded as a module, for the tests of what it checks."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent.parent / "bench"


def load_bench(script: str, module_name: str) -> Any:
    """``bench/<script>`` executed afresh as module ``module_name``."""
    spec = importlib.util.spec_from_file_location(module_name, BENCH / script)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module
