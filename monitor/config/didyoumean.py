""" "Did you mean": the fields a model accepts where a file has a key it does not know, and the closest
of them to the misspelt key (``gpu:`` -> ``gpus``)."""

from __future__ import annotations

import difflib
import types
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel


def _expand(tp: Any) -> list[Any]:
    """The alternatives a type stands for: Optional, unions and Annotated unwrapped."""
    origin = get_origin(tp)
    if origin is Annotated:
        return _expand(get_args(tp)[0])
    if origin is Union or origin is types.UnionType:
        return [t for a in get_args(tp) for t in _expand(a)]
    return [tp]


def _step(tp: Any, part: str | int) -> list[Any]:
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        field = tp.model_fields.get(str(part)) if isinstance(part, str) else None
        if field is not None:
            return _expand(field.annotation)
        return [tp] if isinstance(part, str) else []  # a validator's or a union's tag: still this model
    origin, args = get_origin(tp), get_args(tp)
    if isinstance(part, int) and origin in (list, tuple, Sequence, set, frozenset) and args:
        return _expand(args[0])
    if isinstance(origin, type) and issubclass(origin, Mapping) and len(args) == 2:
        return _expand(args[1])
    return []


def fields_at(model: type[BaseModel], loc: Iterable[str | int]) -> set[str]:
    """The field names accepted at ``loc`` (the path of the mapping holding the unknown key)."""
    here: list[Any] = [model]
    for part in loc:
        here = [t for tp in here for t in _step(tp, part)]
    out: set[str] = set()
    for tp in here:
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            for model in _with_subclasses(tp):  # a receiver entry is validated by its kind's subclass
                out.update(f.alias or name for name, f in model.model_fields.items())
    return out


def _with_subclasses(tp: type[BaseModel]) -> list[type[BaseModel]]:
    out, todo = [], [tp]
    while todo:
        t = todo.pop()
        out.append(t)
        todo.extend(t.__subclasses__())
    return out


def did_you_mean(model: type[BaseModel] | None, loc: Sequence[str | int]) -> str:
    """ " (did you mean `gpus`?)" for the unknown key at ``loc``, or "" when nothing is close."""
    if model is None or not loc or not isinstance(loc[-1], str):
        return ""
    close = difflib.get_close_matches(loc[-1], sorted(fields_at(model, loc[:-1])), n=1, cutoff=0.6)
    return f"did you mean `{close[0]}`?" if close else ""
