"""Stage 6, interfaces: where users meet the estimator.

- :mod:`~ctsne.interfaces.cli`: the ``ctsne`` command.
- :mod:`~ctsne.interfaces.files`: reading tables, writing results, preparing features.
- :mod:`~ctsne.interfaces.explorer`: the ``ctsne explore`` page.

The scanpy-style functions are :mod:`ctsne.tl` and :mod:`ctsne.pl` (scanpy's convention
puts them at the top of the package).
"""
