"""The log reader: a vLLM start-up log into the phase schema (``reader.read_log``), the suite's
second source after the probes.

Lines parsed and placed in time (``lines``), the boots of a log (``boots``), a boot's lines
matched against the registry's patterns (``scan``, ``facts``, ``normalise``) and composed into
phases (``compose``: the V1 engine and the V0 engine).
"""
