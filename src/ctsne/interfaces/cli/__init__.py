"""The ``ctsne`` command: the parser (:mod:`.main`) and one module per subcommand."""
