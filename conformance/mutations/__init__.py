"""Mutation testing of attncheck itself: every test must be able to fail.

`catalogue.py` lists semantic mutants (exact one-place text replacements), each naming the
tests that must kill it; `runner.py` applies one mutant to a private copy of the repository and
runs those tests there, after a clean-copy control run. See docs/oracle-mutants.md.
"""
