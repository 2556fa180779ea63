"""The built-in criteria, price source and notifiers, registered exactly like third-party plugins.

Each module here is a plugin: it implements ``snipe_register_criteria`` (and the price
module ``snipe_register_price_sources``) with ``@hookimpl``. :func:`engine._plugins.
make_plugin_host` registers them first, under the names listed in :data:`BUILTIN_PLUGINS`.
Reading them is the quickest way to learn how to write a criterion.
"""

from __future__ import annotations

from . import _hold as _hold
from . import _match as _match
from . import _notify as _notify
from . import _price as _price
from . import _reference as _reference
from . import _stickers as _stickers
from . import _wear as _wear

__all__ = ["BUILTIN_PLUGINS"]

BUILTIN_PLUGINS: tuple[tuple[str, object], ...] = (
    ("builtin.match", _match),
    ("builtin.price", _price),
    ("builtin.wear", _wear),
    ("builtin.stickers", _stickers),
    ("builtin.hold", _hold),
    ("builtin.reference", _reference),
    ("builtin.notify", _notify),
)
"""(plugin name, plugin module) of every built-in plugin, in registration order."""
