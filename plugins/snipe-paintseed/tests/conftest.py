"""Make the plugin importable when its tests run from a snipe checkout without it
installed (``pytest plugins/snipe-paintseed``)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[1])
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
