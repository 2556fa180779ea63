"""`snipe run`'s exit statuses, the systemd unit and the README agree on what is restarted."""

from __future__ import annotations

import re
from pathlib import Path

from engine.cli._run import EXIT_CONFIG, EXIT_CRASH, EXIT_HALTED, EXIT_OK, EXIT_REFUSED

ROOT = Path(__file__).resolve().parents[2]


def _unit_setting(name: str) -> str:
    text = (ROOT / "docs" / "snipe.service").read_text("utf-8")
    (value,) = re.findall(rf"^{name}=(.*)$", text, flags=re.MULTILINE)
    return value.strip()


def test_the_unit_restarts_exactly_what_a_restart_can_fix() -> None:
    assert _unit_setting("Restart") == "on-failure"  # exit != 0 and deaths by a signal
    prevented = {int(code) for code in _unit_setting("RestartPreventExitStatus").split()}
    assert prevented == {EXIT_CONFIG, EXIT_REFUSED, EXIT_HALTED}
    assert EXIT_CRASH not in prevented
    assert EXIT_OK == 0  # on-failure never restarts a clean stop


def test_the_readme_table_says_the_same() -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    rows = dict(re.findall(r"^\| (\d) \| .*\| (restarted|stays down) \|$", readme, re.MULTILINE))
    assert rows == {
        str(EXIT_OK): "stays down",
        str(EXIT_CRASH): "restarted",
        str(EXIT_CONFIG): "stays down",
        str(EXIT_REFUSED): "stays down",
        str(EXIT_HALTED): "stays down",
    }
