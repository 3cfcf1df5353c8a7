"""The exploration: stateful scenario machines over long-lived adapters, their subjects and scripts."""
