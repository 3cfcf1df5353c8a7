"""Registers attncheck's pytest plugins (the parity grid's options; the gate for hardware runners) and its
Hypothesis profiles, here so that `pytest --hypothesis-profile=NAME` finds them; no logic here."""

from hypothesis import HealthCheck, settings

pytest_plugins = ["conformance.plugin", "conformance.gate_plugin"]

# The oracle's property tests: derandomised and without an example database, so a mutation run and CI
# see the same examples; the thorough profile explores afresh (tests/oracle/oracle_support.py).
settings.register_profile(
    "attncheck-oracle",
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "attncheck-oracle-thorough",
    max_examples=1000,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
