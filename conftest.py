"""Registers attncheck's pytest plugin (options --target/--device/--budget/--seed); no logic here."""
pytest_plugins = ["conformance.plugin"]
