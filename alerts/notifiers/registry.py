"""Receiver kinds register themselves.

Each notifier module declares its config model (a pydantic subclass of :class:`ReceiverConfig`: the
fields a ``receivers[i]`` entry of the watch config may have) and how to build its notifier from it,
and calls :func:`register` at import. The watch config validates every receiver through this registry
when it is loaded (:func:`validate_receiver`, with file:line:field errors for nested fields), and the
composition root builds the notifiers through it (:func:`build_notifier`). So adding a receiver kind
touches its own module and its docs, nothing else; a kind registered later (by a plugin, or a test)
is accepted by config loading as soon as it is registered.

The built-in kinds are the modules of this package, imported on first use of the registry.
Secrets never come from the config: a builder reads them from :attr:`BuildContext.env` (the process
environment), by a name its config may choose (``routing_key_env: PAGERDUTY_ROUTING_KEY``).
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

from alerts.notifiers.base import Notifier

DEFAULT_KIND = "console"  # a receiver without a kind


def _http_url(v: str) -> str:
    if not re.match(r"^https?://[^/\s]+", v):
        raise ValueError(f"{v!r} is not an http(s) URL such as https://host:port")
    return v


HttpUrl = Annotated[str, AfterValidator(_http_url)]  # a receiver's endpoint: http(s)://host[:port][/path]


class ReceiverConfig(BaseModel):
    """What every receiver has: the ``name`` routes refer to, and its ``kind``. Unknown fields are errors."""

    model_config = ConfigDict(extra="forbid")

    name: str
    kind: str


@dataclass(frozen=True)
class BuildContext:
    """What a builder may use besides its config: the environment its secrets are read from (never the
    config file), and where people reach herowatch's dashboard (``server.external_url``)."""

    env: Mapping[str, str] = field(default_factory=dict)
    external_url: str | None = None

    def secret(self, name: str) -> str | None:
        value = (self.env.get(name) or "").strip()
        return value or None


Builder = Callable[[Any, BuildContext], Notifier]


@dataclass(frozen=True)
class ReceiverKind:
    kind: str
    config: type[ReceiverConfig]
    build: Builder | None  # None: recorded (and shown on the dashboard), never sent

    @property
    def sends(self) -> bool:
        return self.build is not None


_KINDS: dict[str, ReceiverKind] = {}
_lock = threading.Lock()
_builtins_loaded = False


def register(kind: str, config: type[ReceiverConfig], build: Builder | None) -> ReceiverKind:
    """Make ``kind`` usable in ``receivers``: entries of that kind are validated by ``config`` and their
    notifier is ``build(config_instance, context)`` (``build=None``: recorded, never sent)."""
    if not isinstance(kind, str) or not kind or kind != kind.strip():
        raise ValueError(f"a receiver kind is a non-empty name, got {kind!r}")
    if not (isinstance(config, type) and issubclass(config, ReceiverConfig)):
        raise TypeError(f"the config of receiver kind {kind!r} must subclass ReceiverConfig")
    entry = ReceiverKind(kind, config, build)
    with _lock:
        known = _KINDS.get(kind)
        if known is not None and known.config.__qualname__ != config.__qualname__:
            raise ValueError(f"receiver kind {kind!r} is already registered (by {known.config.__module__})")
        _KINDS[kind] = entry
    return entry


def unregister(kind: str) -> None:
    with _lock:
        _KINDS.pop(kind, None)


def kinds() -> dict[str, ReceiverKind]:
    """Every registered kind (the built-in ones are imported the first time)."""
    _load_builtins()
    with _lock:
        return dict(_KINDS)


def kind_of(kind: str) -> ReceiverKind:
    known = kinds()
    try:
        return known[kind]
    except KeyError:
        raise ValueError(f"unknown receiver kind {kind!r}; known: {', '.join(sorted(known))}") from None


def records_only(kind: str | None) -> bool:
    """Is ``kind`` registered without a notifier (recorded and shown, never sent: ``dashboard``)?"""
    entry = kinds().get(kind or "")
    return entry is not None and not entry.sends


def validate_receiver(value: Any, context: Any = None) -> ReceiverConfig:
    """One ``receivers[i]`` entry, validated by its kind's config model. Errors are pydantic errors
    located inside the entry (``kind``, ``channel``, ...), so the config loader can say file:line:field."""
    if isinstance(value, ReceiverConfig):
        return value
    if not isinstance(value, Mapping):
        raise ValueError("a receiver is a mapping such as {name: oncall, kind: slack, channel: C0123}")
    kind = value.get("kind", DEFAULT_KIND)
    known = kinds()
    if not isinstance(kind, str) or kind not in known:
        raise ValidationError.from_exception_data(
            "receiver",
            [
                InitErrorDetails(
                    type=PydanticCustomError(
                        "receiver_kind",
                        "unknown receiver kind {kind}; known: {known}",
                        {"kind": repr(kind), "known": ", ".join(sorted(known))},
                    ),
                    loc=("kind",),
                    input=kind,
                )
            ],
        )
    data = {**value, "kind": kind}
    return known[kind].config.model_validate(data, context=context)


def build_notifier(config: ReceiverConfig, context: BuildContext | None = None) -> Notifier | None:
    """The notifier of a validated receiver; None for a kind that is recorded, never sent.
    Raises ValueError with a clear message when the receiver cannot work (a secret is missing)."""
    entry = kind_of(config.kind)
    if entry.build is None:
        return None
    return entry.build(config, context or BuildContext())


def _load_builtins() -> None:
    """Import every module of this package once: each registers the kinds it serves."""
    global _builtins_loaded
    if _builtins_loaded:
        return
    package = importlib.import_module(__package__ or "alerts.notifiers")
    for info in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{package.__name__}.{info.name}")
    _builtins_loaded = True
