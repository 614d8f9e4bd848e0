"""One module per verb of ``coldstart`` (``coldstart.VERBS``): each a thin layer over the
library, as asv's commands are, exposing ``add_arguments(parser)`` and ``run(args)``. Nothing
is re-exported here: the front door imports only the chosen verb's module."""
