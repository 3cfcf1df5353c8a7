"""Harness mutants: mistakes in attncheck's own machinery, each shown by a test that must notice.

The oracle, the specs and the adapters decide verdicts; the machinery around them decides whether
a verdict is reached at all and whether it can be reproduced: the scenario machines' profile and
known-failure handling, a lost CUDA context, the plain-library scripts, the fresh-adapter control
of failing records, the sweep's timer, the fork server's import path, the ledger's rules, the
command line. Every one of these was written after something went wrong on the H200 runner
(docs/evidence/2026-12-01-flashinfer-h200-session.md); each mutant puts that mistake back.
"""
from __future__ import annotations

from conformance.mutations.kinds import Mutant, check_unique

_FI_SUBJ = "tests/scenarios/test_flashinfer_subjects.py::"
_ISO = "tests/scenarios/test_explore_isolation.py::"
_LEDGER = "tests/harness/test_known_failures.py::"
_PREBUILD = "tests/kernels/test_flashinfer_prebuild.py::"


def _harness(name: str, path: str, old: str, new: str, description: str, kills: tuple[str, ...]) -> Mutant:
    return Mutant(name, path, old, new, description, kills, kind="harness")


HARNESS_MUTANTS: tuple[Mutant, ...] = (
    _harness("explore-profile-limits-ignored", "scenarios/machines.py",
             "    prof = replace(profile or S.probe_profile(probe), **subject.profile_limits)\n",
             "    prof = profile or S.probe_profile(probe)\n",
             "a subject's profile limits are ignored: a JIT runner draws modules no run has built",
             (_FI_SUBJ + "test_one_subject_per_api_and_mode_inside_the_built_modules",)),
    _harness("explore-known-raise-reported", "scenarios/machines.py",
             "        entry = self.subject.known(case, backend) if self.subject.known is not None else None\n"
             "        if entry is None:\n            return False\n",
             "        entry = None\n        if entry is None:\n            return False\n",
             "a raise the ledger explains is reported again as a new finding",
             (_FI_SUBJ + "test_a_raise_the_ledger_explains_is_known_not_a_finding",)),
    _harness("explore-crash-entry-launched", "scenarios/machines.py",
             "        if entry is not None and entry[1] == \"crash\":\n",
             "        if False:\n",
             "a case the ledger says kills the process is launched anyway: the subject dies with it",
             (_FI_SUBJ + "test_a_case_the_ledger_says_crashes_is_not_launched",)),
    _harness("explore-context-loss-shrunk", "scenarios/machines.py",
             "class ContextLost(BaseException):\n",
             "class ContextLost(Exception):\n",
             "a lost CUDA context is an ordinary exception: Hypothesis shrinks in the dead context",
             (_ISO + "test_a_lost_context_ends_the_subject_unshrunk_with_its_calls",)),
    _harness("explore-empty-output-history-crash", "scenarios/machines.py",
             "        elif out.out.numel() and (d := max_diff()) > bound:\n",
             "        elif (d := max_diff()) > bound:\n",
             "history independence on a GPU takes max() over an output with no rows",
             (_FI_SUBJ + "test_exploration_finds_the_lifecycle_defect_and_writes_a_plain_script[ragged-catchers1]",)),
    _harness("explore-crashed-subject-dropped", "scenarios/explore.py",
             "        results[name] = {\"subject\": name, \"examples\": None,",
             "        return\n        results[name] = {\"subject\": name, \"examples\": None,",
             "a subject whose process died is left out of the merged summary",
             (_ISO + "test_a_subject_whose_process_dies_reports_the_calls_it_was_making",)),
    _harness("explore-jobs-ignored", "scenarios/explore.py",
             "            while len(running) >= a.jobs:\n",
             "            while len(running) >= 1:\n",
             "--jobs is ignored: the subjects of a GPU run go one at a time and the sitting runs out",
             (_ISO + "test_jobs_children_run_at_once_and_merge_in_the_subjects_order",)),
    _harness("explore-merged-in-finishing-order", "scenarios/explore.py",
             "    return _merge(a, [results[n] for n in names])\n",
             "    return _merge(a, list(results.values()))\n",
             "the merged summary lists subjects in the order their processes ended, not the order asked",
             (_ISO + "test_jobs_children_run_at_once_and_merge_in_the_subjects_order",)),
    _harness("isolate-fresh-control-error-not-probed", "conformance/isolate.py",
             "            lost = rec.fresh == \"error\" and not note_context(rec, device, None)\n",
             "",
             "the isolated child leaves the pending error of a failing record's fresh control to the next case",
             ("tests/gate/test_isolated_run.py::test_the_child_clears_the_pending_error_its_fresh_control_leaves",)),
    _harness("prebuild-joined-at-exit", "kernels/flashinfer_prebuild.py",
             "name=f\"attncheck-jit-{k}\", daemon=True)",
             "name=f\"attncheck-jit-{k}\", daemon=False)",
             "a prebuild still running holds the process at exit: a run out of time outlives its step",
             (_PREBUILD + "test_a_prebuild_still_running_does_not_hold_the_process_at_exit",)),
    _harness("mutate-failure-message-dropped", "conformance/mutations/child.py",
             "            self.messages.setdefault(report.nodeid, failure_message(report.longreprtext))\n",
             "",
             "a mutant run's child records that a test failed but not why",
             ("tests/mutation/test_mutation_matrix.py::test_a_failing_control_says_why_each_test_failed",)),
    _harness("mutate-control-why-dropped", "conformance/mutations/engine.py",
             "            messages.update(report.get(\"messages\", {}))\n",
             "",
             "a failing control names its failing tests and not why they failed",
             ("tests/mutation/test_mutation_matrix.py::test_a_failing_control_says_why_each_test_failed",)),
    _harness("ledger-window-entry-takes-causal", "conformance/known_failures.py",
             "c[\"layout\"] == \"paged\" and not c[\"causal\"] and c[\"window_left\"] >= 0\n",
             "c[\"layout\"] == \"paged\" and c[\"window_left\"] >= 0\n",
             "the split-KV window entry claims causal windows too, which the library computes right",
             (_LEDGER + "test_the_window_graph_and_head_dim_entries_match_only_what_was_shown",)),
    _harness("ledger-modes-ignored", "conformance/known_failures.py",
             "        if e.modes and mode not in e.modes:\n",
             "        if False:\n",
             "a graph-mode-only entry explains eager records as well",
             (_LEDGER + "test_the_window_graph_and_head_dim_entries_match_only_what_was_shown",)),
    _harness("ledger-head-dim-96-entry-widened", "conformance/known_failures.py",
             "c[\"head_dim_qk\"] == 96 and backend",
             "c[\"head_dim_qk\"] in (96, 128) and backend",
             "the head-dim-96 crash entry also claims head dim 128, which runs (a crash entry is not launched)",
             (_LEDGER + "test_the_window_graph_and_head_dim_entries_match_only_what_was_shown",)),
    _harness("prebuild-command-ignores-backends", "kernels/flashinfer_prebuild.py",
             "for b in (a.backend or offered)))\n",
             "for b in offered))\n",
             "the prebuild command builds every offered family's modules, not the coming runs' backends",
             (_PREBUILD + "test_the_command_builds_every_module_of_the_matrix_before_a_run",)),
    _harness("repro-fi-control-reuses-the-wrapper", "scenarios/repro_flashinfer.py",
             "                lines.append(f\"    ctl_w = {w.call(ctor[c.on])}\")\n",
             "                lines.append(f\"    ctl_w = {c.on}\")\n",
             "the plain script's control replays the plan on the same wrapper, not a fresh one",
             (_FI_SUBJ + "test_exploration_finds_the_lifecycle_defect_and_writes_a_plain_script[paged-catchers0]",)),
    _harness("parity-no-fresh-control", "conformance/parity_run.py",
             "    if rec.status not in FAILING or is_crash(rec) or not callable(getattr(adapter, \"fresh\", None)):\n",
             "    if True:\n",
             "a failing record is never repeated on a fresh adapter: lifecycle defects read as case defects",
             ("tests/harness/test_fresh_control.py::test_a_stale_mask_failure_is_marked_history_dependent",)),
    _harness("parity-lost-context-ignored", "conformance/parity_run.py",
             "                        if not alive:  # nothing more can run in this process",
             "                        if False:  # nothing more can run in this process",
             "a lost CUDA context is not handed over to child processes: every later pair fails in it",
             ("tests/gate/test_isolated_run.py::"
              "test_a_lost_context_in_process_hands_the_rest_of_the_run_to_child_processes",)),
    _harness("sweep-no-sync-after-flush", "conformance/sweep.py",
             "        torch.cuda.synchronize()  # the flush done",
             "        pass  # the flush done",
             "the start event is recorded while the flush runs: host launch work hides behind it",
             ("tests/gate/test_sweep.py::test_the_cuda_event_interval_starts_on_an_idle_gpu_after_the_flush",)),
    _harness("forkserver-drops-pythonpath", "conformance/mutations/launcher.py",
             "        sys.path[0:0] = list(dict.fromkeys(list(req[\"path\"]) + env_path))",
             "        sys.path[0:0] = list(req[\"path\"])",
             "a forked run loses the PYTHONPATH where the runner installed FlashInfer",
             ("tests/mutation/test_mutation_matrix.py::"
              "test_a_forked_run_sees_the_libraries_on_pythonpath_as_a_fresh_interpreter_does",)),
    _harness("ledger-fa3-hnd-any-layout", "conformance/known_failures.py",
             "    if c[\"layout\"] not in (\"ragged\", \"single\") or c[\"kv_layout\"] != \"HND\":\n",
             "    if c[\"layout\"] not in (\"ragged\", \"single\"):\n",
             "the fa3 HND entries claim NHD cases too (and keep them from being launched)",
             ("tests/harness/test_known_failures.py::test_the_fa3_hnd_entries_split_on_the_group_size_the_kernel_computes",)),
    _harness("spec-held-backend-refusals-ignored", "routing/spec.py",
             "            out.append(held if held is not None and held.raises is not None else fixed)\n",
             "            out.append(fixed)\n",
             "a wrapper held on a backend is expected to run it even where an explicit request for it is refused",
             ("tests/routing/test_spec.py::"
              "test_a_wrapper_held_on_a_backend_refuses_what_an_explicit_request_for_it_refuses",)),
    _harness("cli-case-list-first-only", "conformance/cli.py",
             "        return [Case.from_json(o) for o in objs]\n",
             "        return [Case.from_json(objs[0])]\n",
             "--case @file.json with a list runs its first case only",
             ("tests/harness/test_cli.py::test_a_case_file_may_hold_a_list_of_cases",)),
)

check_unique(HARNESS_MUTANTS)
