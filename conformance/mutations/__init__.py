"""Mutation testing of attncheck itself: every test must be able to fail.

Data (the catalogues, each mutant an exact edit naming the tests that must kill it):
  catalogue.py (oracle), spec_mutants.py (routing specs), adapter_mutants.py (kernels/),
  library_mutants.py (the ROCm fork's stand-in, installed FlashInfer, torch), targets.py (which
  catalogue and which tests per target and budget); kinds.py holds the mutant shapes.
Logic: engine.py runs a catalogue (`attncheck mutate`: conformance/commands/mutate.py),
  selection.py picks each mutant's tests from coverage, launcher.py gives every run a fresh
  process, child.py is what that process runs, killmatrix.py holds the verdicts and writes the
  matrix, torch_faults.py the faulty torch functions. runner.py is the original named-tests-only runner of the oracle
  catalogue (`python -m conformance.mutations.runner`).
See docs/mutation.md and docs/oracle-mutants.md.
"""
