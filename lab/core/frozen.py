"""Frozen config values: the base of every config model, and the one way to change one.

    FrozenModel   a pydantic model that is a value: frozen, extra="forbid",
                  its JSON form and fingerprint computed once
    with_value    a validated copy with the field at a dotted path set
    with_values   the same for several paths

Why frozen: a config is shared by the app's session state, its caches, the
replay's report and the resume traces. While it could be changed in place,
each of those took a private copy or re-read it from JSON to be safe: a
slider move serialised or re-validated the config five times on its way to
the stage. A frozen value is safe to share as it is, so nobody copies it,
and what is derived from it (its JSON form, the fingerprint every cache is
keyed on) is computed once and kept on the value.

A change is a new value: ``model_copy(update=...)`` for fields whose values
are already valid (another config value, a field just validated), or
``with_value(cfg, "watermark.ratio", 0.7)``, which validates the new value
where it lands and shares every untouched section with the original.
"""

from __future__ import annotations

import copy
import hashlib
import json
from functools import cache, cached_property
from collections.abc import Mapping
from typing import Annotated, Any, Self, TypeVar

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from ..errors import ConfigError

__all__ = ["FrozenModel", "canonical_json", "with_value", "with_values"]

_M = TypeVar("_M", bound=BaseModel)


@cache
def _derived(cls: type) -> tuple[str, ...]:
    """The cached properties of ``cls``: what a value keeps about itself, dropped from a copy whose fields change."""
    return tuple(sorted({name for klass in cls.__mro__ for name, v in vars(klass).items() if isinstance(v, cached_property)}))


def canonical_json(data: Any) -> str:
    """One text per value: sorted keys, no spaces (a dict's insertion order must not change a key)."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class FrozenModel(BaseModel):
    """A config value. A person writes these, so typos fail loudly (``extra="forbid"``); nobody changes one in place."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @cached_property
    def _json_data(self) -> dict[str, Any]:
        # The one serialisation of this value; the fingerprint and ``json_data`` read it.
        return self.model_dump(mode="json")

    def json_data(self) -> dict[str, Any]:
        """``model_dump(mode="json")``, serialised once per value; a fresh copy the caller may keep or change."""
        return copy.deepcopy(self._json_data)

    @cached_property
    def fingerprint(self) -> str:
        """A short hash of the value: equal configs share it, every cache is keyed on it."""
        return _digest(canonical_json(self._json_data))

    def fingerprint_without(self, section: str, fields: tuple[str, ...]) -> str:
        """The fingerprint of this value with ``fields`` of the sub-model ``section`` left out (a cache that ignores them)."""
        data = dict(self._json_data)
        data[section] = {k: v for k, v in data[section].items() if k not in fields}
        return _digest(canonical_json(data))

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        out = super().model_copy(update=update, deep=deep)
        if update:
            # pydantic copies the instance dict, where cached properties live: a changed copy must not keep the old ones.
            for name in _derived(type(self)):
                out.__dict__.pop(name, None)
        return out


def _fields(model: BaseModel) -> dict[str, Any]:
    # Not dict(model): that walks the instance dict, which also holds the cached properties.
    return {name: getattr(model, name) for name in type(model).model_fields}


def _checks_across_fields(cls: type[BaseModel], name: str) -> bool:
    """Whether ``cls`` has a validator that could look at ``name`` or at the model as a whole."""
    decorators = cls.__pydantic_decorators__
    if decorators.model_validators:
        return True
    return any(name in d.info.fields or "*" in d.info.fields for d in decorators.field_validators.values())


@cache
def _field_adapter(cls: type[BaseModel], name: str) -> TypeAdapter[Any]:
    """Validates one field's value against its type and bounds (``Field(ge=..., le=...)``), without the rest of the model."""
    info = cls.model_fields[name]
    return TypeAdapter(Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation)


def _error(err: ValidationError, what: str, field: str = "") -> ConfigError:
    first = err.errors()[0]
    loc = ".".join([field, *(str(p) for p in first["loc"])] if field else [str(p) for p in first["loc"]])
    more = f" (and {err.error_count() - 1} more)" if err.error_count() > 1 else ""
    return ConfigError(f"{what}{loc}: {first['msg']}{more}")


def with_value(model: _M, path: str, value: Any, *, what: str = "field ") -> _M:
    """A validated copy of ``model`` with the field at ``path`` (``"watermark.ratio"``) set.

    Only the new value is validated, against its field's type and bounds; the
    models along the path take the new value as it is, unless one declares a
    validator that could look at it (a model validator, or a field validator
    on that field), which then validates that model with its other fields as
    they are. Every section the path does not cross is shared with ``model``,
    fingerprint included. A model that is not frozen is dumped and validated
    whole, so the copy shares nothing with it. A failure is a ``ConfigError``
    whose message starts with ``what`` and the field's full path.
    """
    cls = type(model)
    if not cls.model_config.get("frozen"):
        return _with_value_whole(model, path, value, what)
    head, _, rest = path.partition(".")
    if head not in cls.model_fields:
        raise ConfigError(f"{what}{path}: no such field")
    if rest:
        child = getattr(model, head)
        if not isinstance(child, BaseModel):
            raise ConfigError(f"{what}{path}: {head} has no fields")
        # The section comes back with the field set and validated where it lives.
        value = with_value(child, rest, value, what=f"{what}{head}.")
    try:
        if _checks_across_fields(cls, head):
            # A validator here may look at the new value beside the others: the model is validated, its other fields as they are.
            return cls.model_validate({**_fields(model), head: value})
        if not rest:
            value = _field_adapter(cls, head).validate_python(value)
    except ValidationError as e:
        # The model's errors name the field; the field's own adapter's do not.
        raise _error(e, what, "" if _checks_across_fields(cls, head) else head) from None
    return model.model_copy(update={head: value})


def with_values(model: _M, values: Mapping[str, Any], *, what: str = "field ") -> _M:
    """``with_value`` for each ``path: value`` of ``values``, in order (``{"window": 32_000, "watermark.ratio": 0.7}``)."""
    for path, value in values.items():
        model = with_value(model, path, value, what=what)
    return model


def _with_value_whole(model: _M, path: str, value: Any, what: str) -> _M:
    data = model.model_dump()
    node = data
    parts = path.split(".")
    for part in parts[:-1]:
        if not isinstance(node.get(part), dict):
            raise ConfigError(f"{what}{path}: no such field")
        node = node[part]
    node[parts[-1]] = value
    try:
        return type(model).model_validate(data)
    except ValidationError as e:
        raise _error(e, what) from None
