"""Models kept in ``st.session_state`` across a Streamlit module reload.

Streamlit's dev server re-imports the project's modules when a source file
changes, but keeps every browser session's ``st.session_state``. A transcript
or config stored before the reload is then an instance of the previous class
object: the same name and fields, yet ``isinstance`` against the class
imported now is False, and pydantic refuses it as a field of a new model.

``as_current`` is the one place that deals with it, for every model the state
modules keep. It recognises such an object by its class's qualified name and
rebuilds it as the current class through ``model_validate(model_dump())``.
The name only tells a stale twin from an unrelated object; the re-validation
is the real check, because a reload may have changed the model's fields (a
stored object that no longer fits is refused, as anything else would be).
No Streamlit here: the state modules hand the object in and store the result.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel, ValidationError

__all__ = ["as_current"]

M = TypeVar("M", bound=BaseModel)


def as_current(obj: object, cls: type[M]) -> M | None:
    """``obj`` as an instance of ``cls`` as imported now, or None when it is not one, stale or not.

    An instance of ``cls`` comes back as it is (no copy); an instance of an
    earlier class object of the same qualified name comes back rebuilt, if its
    fields still validate; anything else is None, for the caller to refuse or
    to treat as never stored.
    """
    if isinstance(obj, cls):
        return obj
    if not isinstance(obj, BaseModel) or type(obj).__qualname__ != cls.__qualname__:
        return None
    try:
        return cls.model_validate(obj.model_dump())
    except ValidationError:
        return None
