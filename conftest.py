"""Registers attncheck's pytest plugins (the parity grid's options; the gate for hardware runners); no logic here."""
pytest_plugins = ["conformance.plugin", "conformance.gate_plugin"]
