"""Old module paths that pickles made before the stage packages still name.

A pickled model refers to the classes of its attributes by module path
(``ctsne.mixing.PriorMixing``, ``ctsne.optimizer.OptimizerState``). Those modules moved
into the stage packages; this finder answers an import of an old path with the module
that now holds the same classes, so ``pickle.load`` of an older model keeps working.
Only paths that a saved model can name are listed; code must import the new paths.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys

# old path -> new path, for the modules whose classes a fitted model holds
PICKLED_PATHS = {
    "ctsne.mixing": "ctsne.affinities.mixing",
    "ctsne.optimizer": "ctsne.optimization.optimizer",
}


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if fullname in PICKLED_PATHS:
            return importlib.machinery.ModuleSpec(fullname, self)
        return None

    def create_module(self, spec):
        # the module object itself, so classes compare equal under both names
        return importlib.import_module(PICKLED_PATHS[spec.name])

    def exec_module(self, module) -> None:
        pass


def install() -> None:
    """Register the finder once (``import ctsne`` does this)."""
    if not any(isinstance(f, _Alias) for f in sys.meta_path):
        sys.meta_path.append(_Alias())
