"""Old dotted paths: components that moved keep their former import path for one release."""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import ScrapyDeprecationWarning

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["moved"]


def moved(old_module: str, new_paths: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``old_module``: each name in ``new_paths`` (name -> the
    module it lives in now) is imported from there, with a ``ScrapyDeprecationWarning``
    naming the new path, so a project's settings that name the old path keep working."""

    def __getattr__(name: str) -> Any:
        new_module = new_paths.get(name)
        if new_module is None:
            raise AttributeError(f"module {old_module!r} has no attribute {name!r}")
        warnings.warn(
            f"{old_module}.{name} moved to {new_module}.{name}; the old path goes away in "
            "the next release (update ADDONS, *_MIDDLEWARES, ITEM_PIPELINES or EXTENSIONS)",
            ScrapyDeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(new_module), name)

    return __getattr__
