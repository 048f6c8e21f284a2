"""One way to give the chart a model: a class built from :class:`HandoffEffects`.

Rule kept here: every chart model in the library (the compiler's recorder, the
coverage probe, the interpreted engine's adapter) is made by :func:`effects_model`
from the one :class:`~handoff_fsm.chart.HandoffEffects` protocol, so none of them
can miss an effect or spell a parameter differently from the chart. A model only
says what to do when the chart calls an effect (``handler``); the signature the
framework injects arguments by is declared here once.

A rejecting validator (see :data:`~handoff_fsm.chart.REJECTIONS`) must raise, or
the framework would take its transition: models that do not run the real
validators raise :class:`Rejected` instead.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import cache
from typing import Any

from handoff_fsm.chart import REJECTIONS, HandoffEffects

EffectHandler = Callable[[Any, str, tuple[Any, ...]], Any]
"""``handler(model, effect_name, args)``: what a model does when the chart calls an effect."""


class Rejected(Exception):  # noqa: N818 - a signal, not an error
    """Raised for a rejecting validator by models that do not run the real validators."""

    def __init__(self, validator: str) -> None:
        super().__init__(validator)
        self.validator = validator


@cache
def effect_names() -> tuple[str, ...]:
    """Every effect the chart may call on its model (the :class:`HandoffEffects` methods)."""
    return tuple(
        name
        for name, value in vars(HandoffEffects).items()
        if callable(value) and not name.startswith("_")
    )


@cache
def effect_parameters(name: str) -> tuple[str, ...]:
    """The payload parameters ``name`` takes (``()`` or ``("fact",)``)."""
    return tuple(inspect.signature(getattr(HandoffEffects, name)).parameters)[1:]


@cache
def returns_action(name: str) -> bool:
    """Whether ``name`` issues an action (and so returns it)."""
    return inspect.signature(getattr(HandoffEffects, name)).return_annotation not in (None, "None")


def effects_model(
    class_name: str, handler: EffectHandler, *, state_field: str = "state"
) -> type[Any]:
    """A chart model class whose every effect calls ``handler(self, name, args)``.

    Instances have a ``state_field`` attribute for the framework's configuration.
    """
    namespace: dict[str, Any] = {"__slots__": (state_field, "__dict__")}
    for name in effect_names():
        namespace[name] = _effect(class_name, name, handler)
    return type(class_name, (), namespace)


def _effect(class_name: str, name: str, handler: EffectHandler) -> Callable[..., Any]:
    def effect(self: Any, *args: Any, **kwargs: Any) -> Any:
        return handler(self, name, (*args, *kwargs.values()))

    # The framework injects arguments by parameter name, reading the signature of the
    # bound method and caching it by qualified name: declare both.
    effect.__name__ = name
    effect.__qualname__ = f"{class_name}.{name}"
    effect.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD)
            for p in ("self", *effect_parameters(name))
        ]
    )
    return effect


def rejecting(name: str) -> bool:
    """Whether ``name`` is a validator that always rejects (see ``REJECTIONS``)."""
    return name in REJECTIONS
