"""The ``enzyme-cc`` / ``enzyme-c++`` compiler drivers (see :mod:`.main`)."""

from .main import main, main_cxx

__all__ = ["main", "main_cxx"]
