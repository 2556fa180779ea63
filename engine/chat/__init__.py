"""Chat commands on the Telegram notification channel: /status, /profit, /daily, /pause,
/resume, /reload and /help, answered only in the configured chat.

Enabled by ``notify.telegram.commands: true`` (off by default); ``snipe run`` starts the
:class:`CommandBot` beside the engine. The answers are pure functions of the engine's
read model (``_answers.py``); the controls are :mod:`engine.sniper`'s ``controls``, which
the HTTP API shares.
"""

from ._answers import (
    COMMANDS,
    Command,
    daily_answer,
    help_answer,
    parse_command,
    pause_answer,
    profit_answer,
    reload_answer,
    resume_answer,
    status_answer,
    unknown_answer,
)
from ._bot import BotAPIError, BotSettings, BotStats, CommandBot, Update, decode_updates

__all__ = [
    "COMMANDS",
    "BotAPIError",
    "BotSettings",
    "BotStats",
    "Command",
    "CommandBot",
    "Update",
    "daily_answer",
    "decode_updates",
    "help_answer",
    "parse_command",
    "pause_answer",
    "profit_answer",
    "reload_answer",
    "resume_answer",
    "status_answer",
    "unknown_answer",
]
