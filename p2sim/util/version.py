"""This p2sim's version: one string, the package's ``__version__`` and what Dask workers are checked against.

Kept in the utilities so that the layers read it without importing the package's front door
(``p2sim/__init__.py`` re-exports the API, which imports every layer: a cycle).
"""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"  # pyproject.toml's [project] version
