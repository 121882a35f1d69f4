"""Every key bound anywhere in the cockpit comes from the one registry (:mod:`sparktui.tui.bindings`), so
the help screen, the footer and the command palette list what the keys do."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

from textual.binding import Binding
from textual.dom import DOMNode

import sparktui.tui
from sparktui.tui.bindings import KEYS, palette


def bound() -> list[tuple[str, str, str]]:
    """(class, key, action) of every binding a cockpit class declares itself."""
    found = []
    for info in pkgutil.walk_packages(sparktui.tui.__path__, "sparktui.tui."):
        module = importlib.import_module(info.name)
        for cls in vars(module).values():
            if inspect.isclass(cls) and issubclass(cls, DOMNode) and cls.__module__ == module.__name__:
                for binding in cls.__dict__.get("BINDINGS", ()):
                    assert isinstance(binding, Binding), f"{cls.__name__}: {binding!r} is not from the registry"
                    found += [(cls.__name__, key, binding.action) for key in binding.key.split(",")]
    return found


def test_every_key_bound_is_in_the_registry() -> None:
    registered = {(key, k.action) for k in KEYS for key in k.key.split(",")}
    seen = bound()
    assert {"SparkApp", "FilterBar", "SourceList", "ValuesScreen", "WelcomeScreen", "HelpScreen"} <= {
        c for c, _, _ in seen
    }
    for cls, key, action in seen:
        # a modal screen's way out (bindings.closing): escape, q and the key that opened it; a cockpit key that
        # acts on a modal screen too (bindings.forwarded) is the cockpit's action
        found = (key, action.removeprefix("app.")) in registered
        assert found or action == "dismiss", f"{cls}: {key} -> {action} is not in the registry"


def test_the_palette_offers_cockpit_keys_only() -> None:
    assert {k.action for k in palette()} == {"help", "export", "sources", "progress"}
