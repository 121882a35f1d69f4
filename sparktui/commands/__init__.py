"""The front end for a terminal: one module per subcommand, each adding its own options to the parser and
running the command (parse, call the core, print)."""
