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

_FI_SUBJ = "tests/explore/test_flashinfer_subjects.py::"
_ISO = "tests/explore/test_explore_isolation.py::"
_SOURCE = "tests/kernels/test_flashinfer_source_faults.py::"
_OOM = "tests/explore/test_explore_environment.py::"
_LEDGER = "tests/harness/test_known_failures.py::"
_PREBUILD = "tests/kernels/test_flashinfer_prebuild.py::"
_MUTATION = "tests/mutation/test_mutation_matrix.py::"
_ENV = "tests/kernels/test_kernels_env.py::"
_FAULTS = "tests/kernels/test_standin_faults.py::"
_UPSTREAM = "tests/kernels/test_upstream_standin.py::"
_LAYERS = "tests/harness/test_layers.py::"
_CLI = "tests/harness/test_cli_commands.py::"
_CACHE = "tests/mutation/test_verdict_cache.py::"
_VERIFY = "tests/harness/test_ledger_verify.py::"
_REPORT = "tests/harness/test_ledger_report.py::"
_DIFF = "tests/gate/test_record_diff.py::"
_DEFECTS = "tests/explore/test_distinct_defects.py::"
_LIFECYCLE = "tests/explore/test_lifecycle_faults.py::"
_CAUGHT = _LIFECYCLE + "test_each_fault_is_caught_in_a_few_calls_and_the_same_calls_hold_without_it"
_WORKERS = "tests/harness/test_pytest_workers.py::"
_PRECISION = "tests/kernels/test_torch_precision_faults.py::"
_PRISTINE = "tests/explore/test_pristine_control.py::"
_KNOWN = "tests/harness/test_known_failures.py::"
_LEDGER_VERIFY = "tests/harness/test_ledger_verify.py::"
_DEFECT_CAUGHT = _PRECISION + "test_a_defect_fails_where_its_run_caught_it_and_the_faultless_loop_passes"
_PF = "kernels/torch_precision_faults.py"
_BF = "kernels/torch_batch_faults.py"
_BATCH_FAULTS = "tests/kernels/test_torch_batch_faults.py::"
_BATCH_CAUGHT = _BATCH_FAULTS + "test_a_batch_fault_fails_where_its_run_caught_it_and_batch_one_calls_do_not_see_it"
_MATRIX = "tests/harness/test_matrix.py::"
_DRAWS = "tests/explore/test_machine_draws.py::"
_PLOTS = "tests/reports/test_report_plots.py::"
_PLOTS_MODEL = _PLOTS + "test_the_model_holds_each_records_err_over_bound_and_its_longest_kv_length"
_PLOTS_SVG = _PLOTS + "test_every_plot_is_inline_svg_with_a_title_axes_a_legend_and_a_caption"
_PLOTS_GEOMETRY = _PLOTS + "test_the_threshold_sits_on_q_star_and_every_cell_carries_its_interval"
_PLOTS_BROWSER = _PLOTS + "test_the_rendered_page_shows_every_plot_with_its_marks_where_the_numbers_put_them"
_BAD = "tests/harness/test_bad_input.py::"
_BAD_ROW = _BAD + "test_every_bad_input_exits_2_in_one_line_and_writes_nothing"
_PROGRESS = "tests/harness/test_progress.py::"
_LONG_ITEM = _PROGRESS + "test_a_long_item_says_it_is_still_running_and_progress_gives_the_time_left"


def _harness(name: str, path: str, old: str, new: str, description: str, kills: tuple[str, ...]) -> Mutant:
    return Mutant(name, path, old, new, description, kills, kind="harness")


HARNESS_MUTANTS: tuple[Mutant, ...] = (
    _harness(
        "explore-main-subject-unchecked",
        "conformance/explore/loop.py",
        "        chosen = _chosen(a.target, a.device, a.subject)  # an unknown subject; a device the target cannot use\n",
        "        chosen = []\n",
        "explore's command line checks no --subject before the run: an unknown one ends in a traceback, not exit 2",
        (_OOM + "test_only_bad_arguments_exit_2_a_value_error_mid_run_is_no_usage_error",),
    ),
    _harness(
        "explore-hypothesis-home-in-cwd",
        "conformance/explore/loop.py",
        '    configuration.set_hypothesis_home_dir(out / ".hypothesis")\n',
        "    pass\n",
        "an exploration leaves Hypothesis's .hypothesis/ (its constants cache) in the working directory",
        (_OOM + "test_an_exploration_leaves_nothing_in_the_working_directory",),
    ),
    _harness(
        "teardown-keeps-adapters-buffers",
        "conformance/explore/machines.py",
        "            release(adapter)\n",
        "            pass\n",
        "an example's teardown drops its adapters without releasing them: one a failure's traceback keeps holds "
        "its workspaces and captured graphs through the shrink (a GPU process grew to 38 GiB)",
        (_OOM + "test_an_example_leaves_no_adapter_holding_its_buffers",),
    ),
    _harness(
        "replaced-adapter-not-retired",
        "conformance/explore/machines.py",
        "            self.retired.append(replaced)\n",
        "            pass\n",
        "an adapter replaced after a known violation is dropped unreleased: its buffers live as long as a "
        "traceback keeps it",
        (_OOM + "test_an_example_leaves_no_adapter_holding_its_buffers",),
    ),
    _harness(
        "fresh-control-keeps-buffers",
        "conformance/explore/machines.py",
        "            release(control)  # its output is all the comparison needs\n",
        "            pass\n",
        "a fresh control keeps its wrapper, workspace and capture after the comparison",
        (_OOM + "test_an_example_leaves_no_adapter_holding_its_buffers",),
    ),
    _harness(
        "adapter-close-keeps-workspaces",
        "kernels/flashinfer/adapter.py",
        "        self._workspaces.clear()\n",
        "        pass\n",
        "closing a FlashInfer adapter keeps its 128 MiB workspaces",
        (_OOM + "test_an_example_leaves_no_adapter_holding_its_buffers",),
    ),
    _harness(
        "reclaim-below-the-threshold",
        "kernels/_env.py",
        "    if torch.cuda.memory_reserved(device) <= RECLAIM_ABOVE_BYTES:\n",
        "    if torch.cuda.memory_reserved(device) > RECLAIM_ABOVE_BYTES:\n",
        "a GPU exploration collects after every small example (0.14 s each) and never when it holds too much",
        (
            _OOM + "test_a_gpu_process_collects_only_when_it_holds_too_much[cuda-5-True]",
            _OOM + "test_a_gpu_process_collects_only_when_it_holds_too_much[cuda-3-False]",
        ),
    ),
    _harness(
        "standin-segment-packbits-negative-total-packs",
        "kernels/standins/_kernels.py",
        "    if total < 0:  # upstream allocates its output as torch.empty(indptr_new[-1]) (packbits.py:128-132)\n",
        "    if False:\n",
        "the stand-ins pack a mask whose packed total is negative where upstream raises: a paged mask over a "
        "request with no pages runs wrong instead of raising, and the ledger's entry for it does not match",
        (_UPSTREAM + "test_segment_packbits_raises_where_upstreams_packed_total_is_negative",),
    ),
    _harness(
        "graph-machine-plans-any-model",
        "conformance/explore/machines.py",
        "            case = S.in_model(case, self.model)\n",
        "            pass\n",
        "a graph machine plans whatever model it draws: a capture is re-planned for another dtype or head dim, "
        "which no engine does, and the re-plans that do happen on one wrapper grow rare",
        (_FI_SUBJ + "test_a_graph_machine_serves_one_model_and_an_eager_one_any",),
    ),
    _harness(
        "engine-model-page-size-free",
        "scenarios/strategies.py",
        "        page_size=model.page_size if case.is_paged and model.is_paged else case.page_size,\n",
        "        page_size=case.page_size,\n",
        "a graph machine's engine changes its KV cache's page size between plans of one captured wrapper",
        (_FI_SUBJ + "test_a_graph_machine_serves_one_model_and_an_eager_one_any",),
    ),
    _harness(
        "graph-machine-model-follows-each-plan",
        "conformance/explore/machines.py",
        "            self.model = self.model or case\n",
        "            self.model = case\n",
        "a graph machine's model is each drawn plan's own: the engine's model changes with every step",
        (_FI_SUBJ + "test_a_graph_machine_serves_one_model_and_an_eager_one_any",),
    ),
    _harness(
        "within-rows-fill-ignored",
        "scenarios/strategies.py",
        "        qo[-1] += left\n",
        "        pass\n",
        "a filled re-plan of a capture still cuts its rows: engines' padded replays (exactly the captured rows) "
        "are never drawn",
        (
            "tests/scenarios/test_scenario_strategies.py::test_helpers_keep_a_case_valid",
            _FI_SUBJ + "test_a_filled_re_plan_of_a_capture_keeps_its_query_rows_spread_otherwise",
        ),
    ),
    _harness(
        "replan-captured-fill-dropped",
        "conformance/explore/machines.py",
        "        case = S.within_rows(S.with_lengths(self.current, lengths), self.current.total_qo, fill)\n",
        "        case = S.within_rows(S.with_lengths(self.current, lengths), self.current.total_qo)\n",
        "replan_captured draws `fill` and drops it: every re-plan of a capture has fewer rows than it",
        (_FI_SUBJ + "test_a_filled_re_plan_of_a_capture_keeps_its_query_rows_spread_otherwise",),
    ),
    _harness(
        "explore-profile-limits-ignored",
        "conformance/explore/machines.py",
        "    prof = replace(profile or S.probe_profile(probe), **subject.profile_limits)\n",
        "    prof = profile or S.probe_profile(probe)\n",
        "a subject's profile limits are ignored: a JIT runner draws modules no run has built",
        (_FI_SUBJ + "test_one_subject_per_api_and_mode_inside_the_built_modules",),
    ),
    _harness(
        "explore-known-raise-reported",
        "conformance/explore/machines.py",
        "        entry = self._ledger(case, resolved or backend)\n",
        "        entry = None\n",
        "a raise the ledger explains is reported again as a new finding",
        (
            _FI_SUBJ + "test_a_raise_the_ledger_explains_is_known_not_a_finding",
            _FI_SUBJ + "test_the_decode_subject_finds_runs_empty_batch_defect_and_holds_once_it_is_known",
        ),
    ),
    _harness(
        "explore-crash-entry-launched",
        "conformance/explore/machines.py",
        '        if entry is not None and entry[1] == "crash":\n',
        "        if False:\n",
        "a case the ledger says kills the process is launched anyway: the subject dies with it",
        (_FI_SUBJ + "test_a_case_the_ledger_says_crashes_is_not_launched",),
    ),
    _harness(
        "explore-context-loss-shrunk",
        "conformance/explore/machines.py",
        "class ContextLost(BaseException):\n",
        "class ContextLost(Exception):\n",
        "a lost CUDA context is an ordinary exception: Hypothesis shrinks in the dead context",
        (_ISO + "test_a_lost_context_ends_the_subject_unshrunk_with_its_calls",),
    ),
    _harness(
        "explore-context-lost-script-unverified",
        "conformance/explore/loop.py",
        'result.failure = _record(lost.failure, subject, out, f"{phase}-context-lost", verify)',
        'result.failure = _record(lost.failure, subject, out, f"{phase}-context-lost")',
        "the script of a subject whose CUDA context was lost is written and never run: a crash is reported "
        "with a script nobody knows reproduces",
        (_ISO + "test_a_lost_contexts_script_is_run_in_a_fresh_process",),
    ),
    _harness(
        "explore-empty-output-history-crash",
        "conformance/explore/machines.py",
        "        elif out.out.numel() and (d := max_diff()) > bound:\n",
        "        elif (d := max_diff()) > bound:\n",
        "history independence on a GPU takes max() over an output with no rows",
        (_FI_SUBJ + "test_exploration_finds_the_lifecycle_defect_and_writes_a_plain_script[ragged-catchers1]",),
    ),
    _harness(
        "explore-crashed-subject-dropped",
        "conformance/explore/loop.py",
        '        directed = json.loads(partial.read_text())["directed"] if partial.exists() else []\n',
        (
            '        directed = json.loads(partial.read_text())["directed"] if partial.exists() else []\n'
            "        return\n"
        ),
        "a subject whose process died is left out of the merged summary",
        (_ISO + "test_a_subject_whose_process_dies_reports_the_calls_it_was_making",),
    ),
    _harness(
        "explore-jobs-ignored",
        "conformance/explore/loop.py",
        "            while len(running) >= a.jobs:\n",
        "            while len(running) >= 1:\n",
        "--jobs is ignored: the subjects of a GPU run go one at a time and the device session runs out",
        (_ISO + "test_jobs_children_run_at_once_and_merge_in_the_subjects_order",),
    ),
    _harness(
        "explore-merged-in-finishing-order",
        "conformance/explore/loop.py",
        "    return _merge(a, [results[n] for n in names])\n",
        "    return _merge(a, list(results.values()))\n",
        "the merged summary lists subjects in the order their processes ended, not the order asked",
        (_ISO + "test_jobs_children_run_at_once_and_merge_in_the_subjects_order",),
    ),
    _harness(
        "fresh-control-error-not-probed",
        "conformance/evaluate.py",
        ('        if rec.fresh == "error":\n            rec, alive = note_context(rec, device, lost_text)\n'),
        "",
        "a failing record's fresh control leaves its pending error to the next case (in the isolated child "
        "as in process)",
        ("tests/gate/test_isolated_run.py::test_the_child_clears_the_pending_error_its_fresh_control_leaves",),
    ),
    _harness(
        "prebuild-joined-at-exit",
        "kernels/flashinfer/prebuild.py",
        '    threads = [threading.Thread(target=worker, name=f"attncheck-jit-{k}", daemon=True) for k in range(workers)]\n',
        '    threads = [threading.Thread(target=worker, name=f"attncheck-jit-{k}", daemon=False) for k in range(workers)]\n',
        "a prebuild still running holds the process at exit: a run out of time outlives its step",
        (_PREBUILD + "test_a_prebuild_still_running_does_not_hold_the_process_at_exit",),
    ),
    _harness(
        "mutate-failure-message-dropped",
        "conformance/mutations/child.py",
        "            self.messages.setdefault(report.nodeid, msg)\n",
        "",
        "a mutant run's child records that a test failed but not why",
        ("tests/mutation/test_mutation_matrix.py::test_a_failing_control_says_why_each_test_failed",),
    ),
    _harness(
        "mutate-control-why-dropped",
        "conformance/mutations/engine.py",
        '            messages.update(report.get("messages", {}))\n',
        "",
        "a failing control names its failing tests and not why they failed",
        ("tests/mutation/test_mutation_matrix.py::test_a_failing_control_says_why_each_test_failed",),
    ),
    _harness(
        "ledger-window-entry-takes-causal",
        "conformance/known_failures.py",
        '        and not c["causal"]\n',
        "",
        "the split-KV window entry claims causal windows too, which the library computes right",
        (_LEDGER + "test_the_window_graph_and_head_dim_entries_match_only_what_was_shown",),
    ),
    _harness(
        "ledger-modes-ignored",
        "conformance/known_failures.py",
        "        and (not e.modes or mode in e.modes)\n",
        "        and True\n",
        "a graph-mode-only entry explains eager records as well",
        (_LEDGER + "test_the_window_graph_and_head_dim_entries_match_only_what_was_shown",),
    ),
    _harness(
        "prebuild-command-ignores-backends",
        "conformance/commands/prebuild.py",
        "    families = list(dict.fromkeys(split_backend(b)[0] for b in (a.backend or offered)))\n",
        "    families = list(dict.fromkeys(split_backend(b)[0] for b in offered))\n",
        "the prebuild command builds every offered family's modules, not the coming runs' backends",
        (_PREBUILD + "test_the_command_builds_every_module_of_the_matrix_before_a_run",),
    ),
    _harness(
        "prebuild-first-seen-order",
        "kernels/flashinfer/prebuild.py",
        "    todo = sorted(enumerate(requests), key=lambda ir: build_rank(ir[1]))  # longest first: the last to end sets the time\n",
        "    todo = list(enumerate(requests))  # longest first: the last to end sets the time\n",
        "the prebuild queues modules in first-seen order: the slow fa3 modules start last and end it alone",
        (_PREBUILD + "test_the_slowest_modules_are_queued_first",),
    ),
    _harness(
        "prebuild-stages-ignore-tensor-cores",
        "kernels/flashinfer/adapter.py",
        '        tc = bool((options or {}).get("decode_tensor_cores", False))\n',
        "        tc = False\n",
        "a tensor-core decode run prebuilds the CUDA-core decode module it never loads",
        (_PREBUILD + "test_tensor_core_decode_prebuilds_the_prefill_module_the_run_loads",),
    ),
    _harness(
        "prebuild-command-ignores-cases",
        "conformance/commands/prebuild.py",
        "    cases = given if given is not None else TARGET.matrix(a.budget, device=a.device)\n",
        "    cases = TARGET.matrix(a.budget, device=a.device)\n",
        "the prebuild command builds the whole matrix's modules whatever cases the coming runs hold",
        (_PREBUILD + "test_the_command_prebuilds_given_cases_with_tensor_core_decode",),
    ),
    _harness(
        "explore-ledger-asked-eager-in-graph",
        "conformance/explore/machines.py",
        '        return self.subject.known(case, f"{backend}+graph" if self.graph and "+" not in backend else backend)\n',
        "        return self.subject.known(case, backend)\n",
        "a graph subject asks the ledger about eager mode: a graph-only entry's raise is reported as new",
        (_FI_SUBJ + "test_a_graph_subject_asks_the_ledger_about_its_graph_backend",),
    ),
    _harness(
        "ledger-fa3-decode-without-tensor-cores",
        "conformance/known_failures.py",
        '        opts["decode_tensor_cores"] = True\n',
        "        pass\n",
        "the ledger reads fa3 decode as CUDA-core decode, which the adapter never runs on fa3",
        (_LEDGER + "test_the_cudnn_and_tensor_core_decode_entries_match_only_what_was_shown",),
    ),
    _harness(
        "ledger-cudnn-unwritten-takes-all-empty",
        "conformance/known_failures.py",
        '            and any(k > 0 for k in c["kv_lens"])\n',
        "",
        "the cuDNN unwritten-rows entry also claims a batch with no keys at all, which raises instead",
        (_LEDGER + "test_the_cudnn_and_tensor_core_decode_entries_match_only_what_was_shown",),
    ),
    _harness(
        "ledger-torch-efficient-any-mask",
        "conformance/known_failures.py",
        '    return ("cudnn" in kernels and (masked_rows or causal_short)) or ("efficient" in kernels and lower_right)\n',
        '    return ("cudnn" in kernels and (masked_rows or causal_short)) or ("efficient" in kernels and causal_short)\n',
        "the torch empty-rows entry claims memory-efficient under a materialised mask, which it gets right",
        (_LEDGER + "test_every_recorded_torch_cuda_failure_is_the_empty_rows_entry_and_no_pass_is_claimed",),
    ),
    _harness(
        "ledger-joined-kernels-unread",
        "conformance/known_failures.py",
        '    if base == "auto" and resolved and all(k in RESOLVED_KERNELS for k in resolved.split("+")):\n',
        '    if base == "auto" and resolved in RESOLVED_KERNELS:\n',
        "an auto record whose requests ran different kernels (torch's \"cudnn+math\") is judged as auto's",
        (_LEDGER + "test_every_recorded_torch_cuda_failure_is_the_empty_rows_entry_and_no_pass_is_claimed",),
    ),
    _harness(
        "records-batch-read-by-first-request",
        "routing/per_request.py",
        "    parts = [expected_route(spec, r) for r in request_queries(query)]\n",
        "    parts = [expected_route(spec, r) for r in request_queries(query)[:1]]\n",
        "a per-request library's batch is expected to run its first request's backend only",
        (
            "tests/routing/test_torch_spec.py::test_the_cuda_rows_explain_every_recorded_sm90_auto_record_and_are_all_reached",
        ),
    ),
    _harness(
        "routes-for-ignores-per-request",
        "routing/per_request.py",
        "    if spec.library in PER_REQUEST:\n",
        "    if False:\n",
        "the machines ask torch's per-request spec about a whole batch: a CUDA batch of several requests raises",
        (
            "tests/routing/test_torch_spec.py::test_successive_plans_of_a_per_request_library_are_each_their_batchs_route",
        ),
    ),
    _harness(
        "records-joined-route-reaches-one-row",
        "routing/check.py",
        "    reached = {n for v in verdicts if v.passed for n in rows_of(v.expected)}  # a joined route reaches each row\n",
        (
            "    reached = {\n"
            "        rows_of(v.expected)[0] for v in verdicts if v.passed and v.expected.rule\n"
            "    }  # a joined route reaches each row\n"
        ),
        "a batch routed by several rows counts only its first row as reached: coverage gaps are invented",
        (
            "tests/routing/test_torch_spec.py::test_the_cuda_rows_explain_every_recorded_sm90_auto_record_and_are_all_reached",
        ),
    ),
    _harness(
        "ledger-options-ignored",
        "conformance/known_failures.py",
        "        and all(opts.get(k) in allowed for k, allowed in e.options.items())\n",
        "        and True\n",
        "entries tied to an adapter option (the packed-mask forms) explain runs of every form",
        (
            _LEDGER + "test_the_packed_mask_entry_explains_exactly_the_packed_runs_failures[packed]",
            _LEDGER + "test_the_ledgers_default_options_are_the_adapters",
        ),
    ),
    _harness(
        "ledger-packed-rule-takes-first-request",
        "conformance/known_failures.py",
        "        if q * k > 0 and offset > 0:\n",
        "        if q * k > 0 and offset >= 0:\n",
        "the packed-mask entry claims a one-request batch, whose mask starts at bit 0 and is read right",
        (_LEDGER + "test_the_packed_mask_entry_explains_exactly_the_packed_runs_failures[packed]",),
    ),
    _harness(
        "explore-dead-child-directed-dropped",
        "conformance/explore/loop.py",
        '        directed = json.loads(partial.read_text())["directed"] if partial.exists() else []\n',
        "        directed = []\n",
        "a subject killed in its exploration loses the directed results it had",
        (_ISO + "test_a_subject_killed_in_its_exploration_keeps_its_directed_results",),
    ),
    _harness(
        "explore-directed-not-saved-early",
        "conformance/explore/loop.py",
        "            on_directed(result)\n",
        "",
        "a subject's directed results are written only when the whole subject ends",
        (_ISO + "test_an_in_process_run_writes_each_subjects_directed_results_before_its_exploration",),
    ),
    _harness(
        "diff-settings-as-versions",
        "conformance/record_diff.py",
        "    keys = sorted(k for k in set(rep.base.versions) | set(rep.new.versions) if (k in JIT_ENV_VARS) == settings)\n",
        "    keys = sorted(k for k in set(rep.base.versions) | set(rep.new.versions) if settings is False or k in JIT_ENV_VARS)\n",
        "the upgrade diff lists a JIT cache directory among the library versions that changed",
        ("tests/gate/test_record_diff.py::test_each_kind_of_regression_is_found_and_exits_1",),
    ),
    _harness(
        "report-absent-version-printed",
        "reports/records.py",
        '    return ", ".join(f"{k} {v}" for k, v in sorted(versions.items()) if v not in (None, "none"))\n',
        '    return ", ".join(f"{k} {v}" for k, v in sorted(versions.items()))\n',
        "the reports print a library the runner lacks as a version ('hip none' on CUDA)",
        ("tests/reports/test_merged_report.py::test_a_version_the_runner_lacks_is_left_out_of_every_report",),
    ),
    _harness(
        "mutate-lost-context-unnamed",
        "conformance/mutations/child.py",
        "            if self.context_lost_at is not None:\n",
        "            if False:\n",
        "failures after a test that lost the CUDA context read as failures of their own",
        (_MUTATION + "test_failures_after_a_lost_cuda_context_name_the_test_that_lost_it",),
    ),
    _harness(
        "repro-fi-control-reuses-the-wrapper",
        "conformance/explore/repro_flashinfer.py",
        '                lines.append(f"        ctl_w = {w.call(ctor[c.on])}")\n',
        '                lines.append(f"        ctl_w = {c.on}")\n',
        "the plain script's control replays the plan on the same wrapper, not a fresh one",
        (_FI_SUBJ + "test_exploration_finds_the_lifecycle_defect_and_writes_a_plain_script[ragged-catchers1]",),
    ),
    _harness(
        "repro-fi-unraised-run-unjudged",
        "conformance/explore/repro_flashinfer.py",
        "                    lines += _judge_unraised_run(s.n)\n",
        "                    pass\n",
        "a run that raised in the machine and not in the script is never judged: 'every call held'",
        (_FI_SUBJ + "test_a_run_that_raised_in_the_machine_is_judged_where_the_script_does_not_raise",),
    ),
    _harness(
        "mutate-only-last-wins",
        "conformance/commands/mutate.py",
        '        action="extend",\n',
        "",
        "a repeated --only keeps its last names only: the mutants named before are silently not run",
        (_MUTATION + "test_a_repeated_only_adds_its_names",),
    ),
    _harness(
        "repro-run-not-synced-in-try",
        "conformance/explore/repro.py",
        (
            '                if DEVICE.startswith("cuda"):  # a kernel\'s fault surfaces at a sync: here, inside the try\n'
            "                    torch.cuda.synchronize()\n"
        ),
        "",
        "a library script's run is not synchronised inside its try: a kernel's fault surfaces later, or never",
        ("tests/explore/test_scenario_repro.py::test_a_library_scripts_run_is_synchronised_inside_its_try",),
    ),
    _harness(
        "repro-fi-run-not-synced-in-try",
        "conformance/explore/repro_flashinfer.py",
        '    body = [f"        {code}"] + ([f"        {SYNC}"] if what == "run" else [])\n',
        '    body = [f"        {code}"]\n',
        "a run's kernel fault is not synchronised inside its try: it surfaces later, or never",
        (_FI_SUBJ + "test_a_run_that_raised_in_the_machine_is_judged_where_the_script_does_not_raise",),
    ),
    _harness(
        "parity-no-fresh-control",
        "conformance/evaluate.py",
        '    if rec.status not in FAILING or is_crash(rec) or not callable(getattr(adapter, "fresh", None)):\n',
        "    if True:\n",
        "a failing record is never repeated on a fresh adapter: lifecycle defects read as case defects",
        ("tests/harness/test_fresh_control.py::test_a_stale_mask_failure_is_marked_history_dependent",),
    ),
    _harness(
        "parity-lost-context-ignored",
        "conformance/pairs.py",
        "            if not alive:  # nothing more can run in this process: the rest go to child processes\n",
        "            if False:  # nothing more can run in this process: the rest go to child processes\n",
        "a lost CUDA context is not handed over to child processes: every later pair fails in it",
        (
            "tests/gate/test_isolated_run.py::"
            "test_a_lost_context_in_process_hands_the_rest_of_the_run_to_child_processes",
            "tests/gate/test_isolated_run.py::test_a_dead_cuda_context_moves_the_rest_of_a_gate_run_to_child_processes",
        ),
    ),
    _harness(
        "sweep-no-sync-after-flush",
        "conformance/sweep.py",
        "        torch.cuda.synchronize()  # the flush done: the interval starts on an idle GPU (module docstring)\n",
        "        pass  # the flush done: the interval starts on an idle GPU (module docstring)\n",
        "the start event is recorded while the flush runs: host launch work hides behind it",
        ("tests/gate/test_sweep.py::test_the_cuda_event_interval_starts_on_an_idle_gpu_after_the_flush",),
    ),
    _harness(
        "forkserver-drops-pythonpath",
        "conformance/mutations/launcher.py",
        '        sys.path[0:0] = list(dict.fromkeys(list(req["path"]) + env_path))\n',
        '        sys.path[0:0] = list(req["path"])\n',
        "a forked run loses the PYTHONPATH where the runner installed FlashInfer",
        (
            "tests/mutation/test_mutation_matrix.py::"
            "test_a_forked_run_sees_the_libraries_on_pythonpath_as_a_fresh_interpreter_does",
        ),
    ),
    _harness(
        "ledger-fa3-hnd-any-layout",
        "conformance/known_failures.py",
        'c["layout"] in ("ragged", "single") and c["kv_layout"] == "HND" and _runs_on_in_both(c, backend, "fa3")',
        'c["layout"] in ("ragged", "single") and _runs_on_in_both(c, backend, "fa3")',
        "the fa3 HND entries claim NHD cases too (and keep them from being launched)",
        ("tests/harness/test_known_failures.py::test_the_fa3_hnd_entries_split_on_the_group_size_the_kernel_computes",),
    ),
    _harness(
        "ledger-auto-pick-ignores-mask",
        "conformance/known_failures.py",
        '        custom_mask=c["mask"] == "custom",\n',
        "        custom_mask=False,\n",
        "the ledger's model of sm90's auto sends masked cases to fa3: auto's fa2 defects go unexplained",
        (
            _LEDGER + "test_every_failure_of_the_recorded_fa3_and_auto_matrix_is_an_entry_or_a_lifecycle_defect",
            _LEDGER + "test_the_fa3_lse_fa3_192_and_empty_decode_entries_match_only_what_was_shown",
        ),
    ),
    _harness(
        "ledger-fa3-192-entry-any-layout",
        "conformance/known_failures.py",
        '        c["layout"] == "paged"\n        and (c["head_dim_qk"], c["head_dim_vo"]) == (192, 128)\n',
        '        c["layout"] in ("paged", "ragged", "single")\n        and (c["head_dim_qk"], c["head_dim_vo"]) == (192, 128)\n',
        "the fa3 (192, 128) entry claims ragged and single prefill, which run on fa3",
        (
            _LEDGER + "test_the_ledger_claims_no_passing_record_of_the_recorded_fa3_and_auto_matrix",
            _LEDGER + "test_the_fa3_lse_fa3_192_and_empty_decode_entries_match_only_what_was_shown",
        ),
    ),
    _harness(
        "ledger-fa3-lse-entry-any-batch",
        "conformance/known_failures.py",
        "    return any(_rows_past_an_empty_tile(q[i], k[i]) and sum(q[i + 1 :]) > 0 for i in range(len(q)))\n",
        "    return True\n",
        "the fa3 LSE entry claims every such batch, each request alone too (they pass)",
        (_LEDGER + "test_the_fa3_lse_fa3_192_and_empty_decode_entries_match_only_what_was_shown",),
    ),
    _harness(
        "ledger-fa3-hnd-wrong-without-rows",
        "conformance/known_failures.py",
        '        applies=lambda c, b: _fa3_hnd(c, b) and _fa3_hnd_group(c) > 0 and sum(c["qo_lens"]) > 0,  # rows to be wrong\n',
        "        applies=lambda c, b: _fa3_hnd(c, b) and _fa3_hnd_group(c) > 0,  # rows to be wrong\n",
        "the fa3 HND wrong-output entry claims a batch with no query rows, which has nothing to be wrong",
        (_LEDGER + "test_the_ledger_claims_no_passing_record_of_the_recorded_fa3_and_auto_matrix",),
    ),
    _harness(
        "ledger-fa3-lse-request-alone",
        "conformance/known_failures.py",
        "    return any(_rows_past_an_empty_tile(q[i], k[i]) and sum(q[i + 1 :]) > 0 for i in range(len(q)))\n",
        "    return any(_rows_past_an_empty_tile(q[i], k[i]) for i in range(len(q)))\n",
        "the fa3 LSE entry claims a request alone, which the probe never saw lose a row",
        (_LEDGER + "test_the_fa3_lse_fa3_192_and_empty_decode_entries_match_only_what_was_shown",),
    ),
    _harness(
        "ledger-fa3-lse-any-short-request",
        "conformance/known_failures.py",
        "        if last + kv - qo < 0 and nxt_last > last and nxt_last + kv - qo >= 0:\n",
        "        if qo > kv:\n",
        "the fa3 LSE entry claims any request with more query rows than keys, though store_zero reaches no row "
        "that sees keys unless a whole tile sees none",
        (_LEDGER + "test_the_fa3_lse_fa3_192_and_empty_decode_entries_match_only_what_was_shown",),
    ),
    _harness(
        "ledger-fa3-lse-any-head-dim",
        "conformance/known_failures.py",
        '        and (c.get("head_dim_qk"), c.get("head_dim_vo")) == (128, 128)  # where fa3\'s CTA_Q is 128\n',
        "",
        "the fa3 LSE entry claims head dims whose query tile is not the 128 rows the probe measured",
        (_LEDGER + "test_the_fa3_lse_fa3_192_and_empty_decode_entries_match_only_what_was_shown",),
    ),
    _harness(
        "ledger-decode-empty-any-option",
        "conformance/known_failures.py",
        '        options={"decode_tensor_cores": (False,)},\n',
        "",
        "the decode empty-batch run() entry claims tensor-core decode, whose plan() raises first",
        (_LEDGER + "test_the_fa3_lse_fa3_192_and_empty_decode_entries_match_only_what_was_shown",),
    ),
    _harness(
        "ledger-evidence-not-its-script",
        "conformance/known_failures.py",
        '        "docs/evidence/probe_flashinfer_fa3_lse_store_zero.py",\n',
        '        "docs/evidence/2026-12-01-h200-3/followup.sh",\n',
        "an entry names as its evidence a file that is not its script and has no output from the hardware",
        (
            _LEDGER + "test_a_confirmed_entry_keeps_what_its_script_printed_on_the_hardware"
            "[flashinfer-fa3-lse-after-empty-tile]",
            _LEDGER + "test_each_entry_has_a_standalone_script_of_plain_library_calls"
            "[flashinfer-fa3-lse-after-empty-tile]",
        ),
    ),
    _harness(
        "repro-step-note-many-lines",
        "conformance/explore/machines.py",
        "            text += f\"  [{self.outcome}: {' '.join(self.note.split())}]\"\n",
        '            text += f"  [{self.outcome}: {self.note}]"\n',
        "a step's many-line note (a CUDA error) breaks its line: the script's comment becomes a SyntaxError",
        (_FI_SUBJ + "test_scripts_of_a_many_line_raise_parse_and_replay_on_the_subjects_device",),
    ),
    _harness(
        "repro-library-script-cpu-cases",
        "conformance/explore/repro.py",
        "            inputs = materialize(case, seed, DEVICE)\n",
        "            inputs = materialize(case, seed)\n",
        "an adapter-driven script materialises its cases on the CPU for a CUDA adapter, which refuses them",
        (_FI_SUBJ + "test_scripts_of_a_many_line_raise_parse_and_replay_on_the_subjects_device",),
    ),
    _harness(
        "from-records-explicit-left-out",
        "conformance/route_records.py",
        "    return library in EXPLICIT_ROWS or requested == AUTO or requested in WHOLE_BATCH.get(library, ())\n",
        "    return requested == AUTO or requested in WHOLE_BATCH.get(library, ())\n",
        "the records check leaves explicit backends out: their rows are never observed, a redirect never seen",
        (
            "tests/gate/test_route_records.py::"
            "test_fresh_decisions_pass_explicit_requests_are_checked_and_skips_are_left_out",
            "tests/gate/test_route_records.py::test_an_explicit_request_that_ran_another_backend_fails",
        ),
    ),
    _harness(
        "ledger-zero-pages-any-size",
        "conformance/known_failures.py",
        "        and sum(_page_mask_bytes(c)) < 0\n",
        "",
        "the zero-pages entry claims every batch with a request over no pages, eager ones that pass too",
        (_LEDGER + "test_the_zero_pages_entries_split_on_the_packed_masks_size",),
    ),
    _harness(
        "parity-failed-run-route-dropped",
        "conformance/evaluate.py",
        "        planned = route_of_failed_run(adapter, inputs)\n",
        "        planned = None\n",
        "a run that raises after plan() keeps no backend: its route cannot be checked against the spec",
        (
            "tests/gate/test_route_records.py::"
            "test_a_run_that_raises_after_plan_keeps_the_backend_plan_chose_and_is_observed",
        ),
    ),
    _harness(
        "adapter-fork-failed-run-route-claimed",
        "kernels/flashinfer/adapter.py",
        "        if p is None or not p.resolved_after_plan or not _same_inputs(p.inputs, inputs) or self._facts().fork:\n",
        "        if p is None or not p.resolved_after_plan or not _same_inputs(p.inputs, inputs):\n",
        "on the fork a failed run claims what plan() chose, which the fork's run() re-checks",
        ("tests/gate/test_route_records.py::test_on_the_fork_a_failed_run_claims_no_backend",),
    ),
    _harness(
        "ledger-resolved-ignored",
        "conformance/known_failures.py",
        '    if base == "auto" and resolved and all(k in RESOLVED_KERNELS for k in resolved.split("+")):\n',
        "    if False:\n",
        "the ledger asks about auto's fresh pick, not the kernel the record ran: a held kernel's pass is claimed",
        (
            "tests/gate/test_ledger_resolved.py::test_an_auto_record_that_ran_another_kernel_is_not_claimed",
            _LEDGER + "test_the_ledger_claims_no_passing_record_of_the_recorded_fa3_and_auto_matrix",
        ),
    ),
    _harness(
        "cli-exit-ignores-unexpected-pass",
        "conformance/pairs.py",
        "        return 1 if any(v.outcome in GATE_FAILING for v in self.verdicts) else 0\n",
        '        return 1 if any(v.outcome == "fail" for v in self.verdicts) else 0\n',
        "`attncheck run` and the grid's results file exit 0 when a ledger entry claims a pass: a fixed "
        "defect's entry is never narrowed",
        (
            "tests/gate/test_ledger_resolved.py::test_the_cli_exit_status_is_the_gates_verdict",
            "tests/gate/test_gate_ledger.py::test_ledger_outcomes_under_the_gate",
        ),
    ),
    _harness(
        "gate-fails-on-known-failures",
        "conformance/gate.py",
        'GATE_FAILING: frozenset[str] = frozenset({"fail", "unexpected_pass"})\n',
        'GATE_FAILING: frozenset[str] = frozenset({"fail", "unexpected_pass", "expected_failure"})\n',
        "a run whose every failure the ledger explains exits 1: the CLI and the pytest gate disagree",
        ("tests/gate/test_ledger_resolved.py::test_the_cli_exit_status_is_the_gates_verdict",),
    ),
    _harness(
        "record-names-no-wrapper",
        "conformance/evaluate.py",
        '    made["wrapper"] = wrapper_of_last_plan(adapter)\n',
        '    made["wrapper"] = None\n',
        "records do not name the wrapper their plan used (a plan or run that raised included): the routing "
        "check loses each record's place in its wrapper's history",
        ("tests/gate/test_route_records.py::test_records_name_the_wrapper_each_plan_used_and_the_check_groups_by_it",),
    ),
    _harness(
        "route-check-ignores-recorded-wrapper",
        "conformance/route_records.py",
        "            (r.run_id, r.backend, r.wrapper)\n",
        "            (r.run_id, r.backend)\n",
        "the routing check puts every wrapper of a backend in one plan history, whatever the records name",
        (
            "tests/gate/test_route_records.py::test_records_name_the_wrapper_each_plan_used_and_the_check_groups_by_it",
            "tests/gate/test_route_records.py::test_the_wrappers_the_h200_run_named_are_the_ones_the_legacy_keying_rebuilds",
        ),
    ),
    _harness(
        "truth-recomputed-per-backend",
        "conformance/evaluate.py",
        "        if self._truth is None:\n",
        "        if True:\n",
        "the oracle runs again for every backend of a case (and for a case every backend declined)",
        ("tests/harness/test_truth_cache.py::test_a_cases_backends_share_one_oracle_run_made_only_when_asked",),
    ),
    _harness(
        "truth-cache-unbounded",
        "conformance/evaluate.py",
        "        while len(self._items) > self.size:\n",
        "        while False:\n",
        "the truth cache keeps every case: a long run's memory grows with its matrix",
        ("tests/harness/test_truth_cache.py::test_the_cache_keeps_at_most_its_size_least_recently_used_first",),
    ),
    _harness(
        "truth-cache-evicts-most-recent",
        "conformance/evaluate.py",
        "            self._items.popitem(last=False)\n",
        "            self._items.popitem(last=True)\n",
        "the truth cache drops the entry just made, not the least recently used",
        ("tests/harness/test_truth_cache.py::test_the_cache_keeps_at_most_its_size_least_recently_used_first",),
    ),
    _harness(
        "captured-batch-rematerialised",
        "conformance/evaluate.py",
        "        entry = self._items[key] = CaseTruth(inputs if inputs is not None else materialize(case, seed, device))\n",
        "        entry = self._items[key] = CaseTruth(materialize(case, seed, device))\n",
        "a replayed captured batch is replaced by inputs made from its case: the run judges other tensors",
        ("tests/harness/test_truth_cache.py::test_a_captured_batch_is_used_as_given",),
    ),
    _harness(
        "grid-without-fresh-control",
        "conformance/test_parity_grid.py",
        (
            "        return evaluate_with_control(\n"
            "            _ADAPTERS[key], parity_case, known.inputs, known.truth, grid.base, grid.device, CONTEXT_LOST\n"
            "        )\n"
        ),
        (
            "        from conformance.evaluate import evaluate\n"
            "\n"
            "        return evaluate(_ADAPTERS[key], parity_case, known.inputs, known.truth, grid.base), True\n"
        ),
        "the pytest grid evaluates without the fresh control `attncheck run` applies: its failing records "
        "cannot tell history from the case",
        ("tests/gate/test_gate_ledger.py::test_ledger_outcomes_under_the_gate",),
    ),
    _harness(
        "diff-missing-pairs-ignored",
        "conformance/record_diff.py",
        "        if missing:\n",
        "        if False:\n",
        'a NEW lacking pairs BASE has (a narrower or cut-off run) passes as "no regression"',
        (
            "tests/gate/test_record_diff.py::test_an_incomplete_comparison_is_said_first_and_exits_1"
            "[finished-but-narrower]",
        ),
    ),
    _harness(
        "diff-exit-ignores-incomplete",
        "conformance/commands/diff.py",
        "    return EXIT_FAILED if rep.exit_status else EXIT_OK\n",
        "    return EXIT_FAILED if rep.regressions else EXIT_OK\n",
        "an incomplete comparison is said in the report but exits 0: a CI gate reads it as a pass",
        (
            "tests/gate/test_record_diff.py::test_an_incomplete_comparison_is_said_first_and_exits_1"
            "[finished-but-narrower]",
        ),
    ),
    _harness(
        "diff-nothing-comparable-judged",
        "conformance/record_diff.py",
        "    if not (set(base.parity) & set(new.parity)) and not (set(base.timing) & set(new.timing)):\n",
        "    if False:\n",
        "two sides with no pair in common are judged (every pair on one side only) instead of refused",
        ("tests/gate/test_record_diff.py::test_two_sides_with_no_pair_in_common_are_refused",),
    ),
    _harness(
        "report-empty-results-rendered",
        "conformance/commands/report.py",
        "    if len(empty) == len(args.results):\n",
        "    if False:\n",
        'results holding no record render as a clean "0 failures" report',
        ("tests/reports/test_merged_report.py::test_results_with_no_record_or_no_end_are_said_first",),
    ),
    _harness(
        "unfinished-run-read-as-finished",
        "reports/merge.py",
        "        return self.header is not None and self.footer is None\n",
        "        return False\n",
        'a run with no end record (killed, cut off) reads as finished: the diff calls it "no regression", '
        "the report a complete one",
        (
            "tests/gate/test_record_diff.py::test_an_incomplete_comparison_is_said_first_and_exits_1"
            "[killed-after-its-last-record]",
            "tests/reports/test_merged_report.py::test_results_with_no_record_or_no_end_are_said_first",
        ),
    ),
    _harness(
        "sigterm-not-handled",
        "conformance/cli.py",
        "    main_thread = threading.current_thread() is threading.main_thread()\n",
        "    main_thread = False\n",
        "SIGTERM kills a run outright: no message, no report saying it did not finish, exit -15",
        ("tests/harness/test_cli.py::test_sigterm_ends_a_run_like_ctrl_c_with_exit_143",),
    ),
    _harness(
        "sigterm-read-as-ctrl-c",
        "conformance/cli.py",
        "    raise Terminated()\n",
        "    raise KeyboardInterrupt()\n",
        "a terminated run exits 130, as if a person pressed Ctrl-C: CI cannot tell cancellation from interruption",
        ("tests/harness/test_cli.py::test_sigterm_ends_a_run_like_ctrl_c_with_exit_143",),
    ),
    _harness(
        "hypothesis-profile-registered-late",
        "conftest.py",
        '    "attncheck-oracle-thorough",\n',
        '    "attncheck-oracle-thorough-unused",\n',
        "`pytest --hypothesis-profile=attncheck-oracle-thorough` finds no such profile (an INTERNALERROR)",
        (
            "tests/harness/test_hypothesis_profiles.py::test_the_oracle_tests_draw_what_the_chosen_profile_says"
            "[thorough]",
        ),
    ),
    _harness(
        "marker-declared-twice",
        "conformance/gate_plugin.py",
        '        config.addinivalue_line("markers", f"{m.name}: needs {m.needs}")\n',
        (
            '        config.addinivalue_line("markers", f"{m.name}: needs {m.needs}")\n'
            '        config.addinivalue_line("markers", f"{m.name}: a second declaration")\n'
        ),
        "a hardware marker declared twice (as pyproject.toml once did for cuda): `pytest --markers` lists it twice",
        ("tests/gate/test_markers.py::test_every_hardware_marker_is_declared_once",),
    ),
    _harness(
        "case-json-bool-from-anything",
        "scenarios/case.py",
        '    "boolean": (lambda v: isinstance(v, bool), "true or false"),\n',
        '    "boolean": (lambda v: True, "true or false"),\n',
        '"causal": "false" is taken, and a non-empty string is a true causal flag: a causal case runs',
        (
            "tests/harness/test_case.py::test_a_json_value_of_the_wrong_type_is_refused_not_coerced[bool-as-string]",
            "tests/harness/test_case.py::test_the_cli_refuses_a_wrongly_typed_case_in_one_line",
        ),
    ),
    _harness(
        "case-json-lengths-coerced",
        "scenarios/case.py",
        '    "integers": (lambda v: isinstance(v, (list, tuple)) and all(_is_int(x) for x in v), "[4, 1]"),  # tuple: Python\n',
        '    "integers": (lambda v: isinstance(v, (list, tuple)), "[4, 1]"),  # tuple: Python\n',
        '"qo_lens": [4.5] is taken and runs a query of 4 rows',
        ("tests/harness/test_case.py::test_a_json_value_of_the_wrong_type_is_refused_not_coerced[length-as-float]",),
    ),
    _harness(
        "case-json-bool-as-integer",
        "scenarios/case.py",
        "    return isinstance(v, int) and not isinstance(v, bool)\n",
        "    return isinstance(v, int)\n",
        '"num_kv_heads": true is taken as 1 head',
        ("tests/harness/test_case.py::test_a_json_value_of_the_wrong_type_is_refused_not_coerced[heads-as-bool]",),
    ),
    _harness(
        "inputs-corrupt-traceback",
        "scenarios/tensors.py",
        "    except Exception as e:  # torch.load on anything else: truncated, random bytes, text, another pickle\n",
        "    except KeyError as e:  # torch.load on anything else: truncated, random bytes, text, another pickle\n",
        "a truncated or foreign --inputs file ends in torch.load's traceback, exit 1 (read by CI as a failed kernel)",
        (_BAD + "test_every_bad_input_exits_2_in_one_line_and_writes_nothing[run-inputs-truncated]",),
    ),
    _harness(
        "inputs-case-unchecked",
        "scenarios/tensors.py",
        '    if not isinstance(blob, dict) or not isinstance(blob.get("case"), dict):\n',
        '    if not isinstance(blob, dict) or "case" not in blob:\n',
        "a batch file whose 'case' is not an object ends in a traceback",
        (_BAD + "test_every_bad_input_exits_2_in_one_line_and_writes_nothing[run-inputs-case-not-an-object]",),
    ),
    _harness(
        "out-file-not-checked",
        "conformance/commands/run.py",
        '    usable_out_dir("--out", args.out)  # a file, or a path under one, is refused before anything is written\n',
        "    pass  # a file, or a path under one, is refused before anything is written\n",
        "`--out` naming a file ends in makedirs' traceback, exit 1, after the run began",
        (_BAD + "test_every_bad_input_exits_2_in_one_line_and_writes_nothing[run-out-a-file]",),
    ),
    _harness(
        "ledger-asks-the-fresh-pick",
        "conformance/gate.py",
        (
            "        entry = entry_for(\n"
            "            self.target, case.to_json(), backend, self.version, self.arch, self.options, resolved=rec.resolved_backend\n"
            "        )\n"
        ),
        "        entry = entry_for(self.target, case.to_json(), backend, self.version, self.arch, self.options, resolved=None)\n",
        "the ledger judges an auto record by the fresh pick, not the kernel it ran: the CLI annotates it wrong "
        "and the gate reads a pass on the held kernel as unexpected",
        (
            "tests/gate/test_ledger_resolved.py::test_the_parity_run_annotates_a_failing_record_by_the_kernel_it_ran",
            "tests/gate/test_ledger_resolved.py::test_the_gate_does_not_call_a_pass_on_the_held_kernel_unexpected",
        ),
    ),
    _harness(
        "machines-failed-run-route-ignored",
        "conformance/explore/machines.py",
        "            held = route_of_failed_run(adapter, p.inputs)  # what plan() chose, where the run meant it\n",
        "            held = None  # what plan() chose, where the run meant it\n",
        "a run that raised is judged by the wrapper's requested backend, not the kernel plan() held: the "
        "sticky defect is reported again in every device session",
        (_FI_SUBJ + "test_a_held_fa3_meeting_a_mask_is_known_by_the_kernel_the_run_meant",),
    ),
    _harness(
        "ledger-sticky-entry-any-kernel",
        "conformance/known_failures.py",
        '        applies=lambda c, b: c["layout"] == "paged" and c["mask"] == "custom" and b == "fa3",\n',
        '        applies=lambda c, b: c["layout"] == "paged" and c["mask"] == "custom",\n',
        "the sticky paged auto entry claims every masked paged record, those that ran fa2 and passed too",
        (_LEDGER + "test_the_ledger_claims_no_passing_record_of_the_recorded_fa3_and_auto_matrix",),
    ),
    _harness(
        "spec-held-backend-refusals-ignored",
        "routing/spec.py",
        "            out.append(held if held is not None and held.raises is not None else fixed)\n",
        "            out.append(fixed)\n",
        "a wrapper held on a backend is expected to run it even where an explicit request for it is refused",
        (
            "tests/routing/test_spec.py::"
            "test_a_wrapper_held_on_a_backend_refuses_what_an_explicit_request_for_it_refuses",
        ),
    ),
    _harness(
        "cli-case-list-first-only",
        "scenarios/case.py",
        "        return [Case.from_json(o) for o in objs]\n",
        "        return [Case.from_json(objs[0])]\n",
        "--case @file.json with a list runs its first case only",
        ("tests/harness/test_cli.py::test_a_case_file_may_hold_a_list_of_cases",),
    ),
    _harness(
        "forkserver-orphans-its-runs",
        "conformance/mutations/launcher.py",
        "                        os.killpg(pid, 9)\n",
        "                        pass\n",
        "a fork server whose parent died lets its runs go on, orphaned, to their end",
        (_MUTATION + "test_a_fork_server_whose_parent_is_gone_kills_the_runs_it_started[started]",),
    ),
    _harness(
        "standin-warms-vml-at-import",
        "kernels/standins/_kernels.py",
        "NON_CAUSAL, CAUSAL, CUSTOM = 0, 1, 2  # MaskMode values\n",
        (
            "NON_CAUSAL, CAUSAL, CUSTOM = 0, 1, 2  # MaskMode values\n"
            "from kernels._env import warm_mkl_vml\n"
            "\n"
            "warm_mkl_vml()\n"
        ),
        "the stand-ins' kernels warm oneMKL at import: work an import does, which the entry points own",
        (_ENV + "test_no_module_warms_vml_when_imported",),
    ),
    _harness(
        "records-editable",
        "reports/records.py",
        "@dataclass(frozen=True)\n",
        "@dataclass\n",
        "a parity record can be edited after it was built (and written)",
        ("tests/reports/test_records.py::test_a_record_cannot_be_edited_only_replaced",),
    ),
    _harness(
        "fault-catalogue-renamed",
        "kernels/standins/faults.py",
        '            "reason_collision",\n',
        '            "reason_collisions",\n',
        "a fault is renamed in the catalogue while its seed sequence keeps the old name: it is never checked",
        (_FAULTS + "test_the_catalogue_names_every_sequence",),
    ),
    _harness(
        "fault-unknown-name-keyerror",
        "kernels/standins/faults.py",
        "    if name not in FAULTS:\n",
        "    if False:\n",
        "an unknown fault name ends in a KeyError, not an error naming the faults there are",
        (_FAULTS + "test_an_unknown_fault_is_refused_naming_the_choices",),
    ),
    _harness(
        "upstream-module-unlabelled",
        "kernels/standins/upstream_flashinfer/utils.py",
        '__attncheck_standin__ = "flashinfer-upstream"\n',
        '__attncheck_standin__ = ""\n',
        "a module of the upstream model carries no stand-in label",
        (_UPSTREAM + "test_every_module_of_the_model_is_marked_and_says_it_is_a_standin",),
    ),
    _harness(
        "upstream-sm90-probe-ignored",
        "kernels/standins/upstream.py",
        '    mp.setattr(utils, "is_sm90a_supported", lambda device: sm90)\n',
        "",
        "install(sm90=False) still offers fa3: the model answers for a Hopper whatever it is asked",
        (_UPSTREAM + "test_installed_points_flashinfer_at_the_model_labels_it_and_undoes_it",),
    ),
    _harness(
        "upstream-call-log-kept",
        "kernels/standins/upstream.py",
        "    STATE.clear()\n",
        "",
        "installing the model keeps the previous install's call log: a test reads calls it did not make",
        (_UPSTREAM + "test_the_model_logs_every_call_and_installing_clears_the_log",),
    ),
    _harness(
        "fork-packbits-its-own",
        "kernels/standins/rocm_flashinfer/quantization.py",
        "from kernels.standins.upstream_flashinfer.quantization import packbits, segment_packbits\n",
        "from kernels.standins._kernels import pack_bits as packbits, segment_pack_bits as segment_packbits\n",
        "the fork stand-in packs masks with code of its own beside the upstream model's",
        (_UPSTREAM + "test_the_fork_is_layered_on_the_model",),
    ),
    _harness(
        "case-json-number-refuses-integers",
        "scenarios/case.py",
        '    "number": (lambda v: _is_int(v) or isinstance(v, float), "30.0"),\n',
        '    "number": (lambda v: isinstance(v, float), "30.0"),\n',
        '"logits_soft_cap": 30 is refused: a JSON number written without a fraction is a number too',
        ("tests/harness/test_case.py::test_every_case_field_has_its_json_type_and_well_typed_json_is_taken",),
    ),
    _harness(
        "fault-mask-patch-noop",
        "kernels/standins/faults.py",
        '    mp.setattr(prefill._Wrapper, "_set_mask", keep)\n',
        "    del keep\n",
        "the mask_not_cleared fault switches nothing on: the stand-in stays correct under its name",
        (
            _FAULTS + "test_each_fault_differs_from_the_standin_at_the_end_of_its_seed_sequence[mask_not_cleared]",
            "tests/explore/test_scenario_machines.py::test_each_fault_is_caught_shrunk_and_reproduced"
            "[fault-mask_not_cleared]",
        ),
    ),
    _harness(
        "fault-not-labelled",
        "kernels/standins/rocm_fork.py",
        "        mp.setattr(package, MARKER, f\"{NAME}+fault:{'+'.join(d.name for d in defects)}\")\n",
        "        pass\n",
        "a stand-in with a fault switched on is labelled as the correct stand-in",
        (_FAULTS + "test_a_fault_is_named_by_the_label_and_undone_with_the_install",),
    ),
    _harness(
        "script-installs-stack",
        "kernels/standins/_install.py",
        "    uninstall()\n",
        "",
        "a script's second stand-in install stacks on the first, its fault included",
        (_FAULTS + "test_a_scripts_install_replaces_the_last_one",),
    ),
    _harness(
        "replan-outgrows-capture",
        "scenarios/strategies.py",
        "        qo.append(min(n, left))\n",
        "        qo.append(n)\n",
        "a re-plan of a captured graph wrapper may need more rows than its buffers hold",
        ("tests/scenarios/test_scenario_strategies.py::test_helpers_keep_a_case_valid",),
    ),
    _harness(
        "cli-vml-not-warmed",
        "conformance/cli.py",
        "    warm_mkl_vml()  # oneMKL picks its VML kernels in this one thread before any attention is computed\n",
        "    pass\n",
        "the command line computes without warming oneMKL's VML: a process's first exp may run "
        "one thread's chunk at "
        "1e-4 error (a first reference off, a false history_independent)",
        (_ENV + "test_every_entry_point_warms_vml_before_it_can_compute",),
    ),
    _harness(
        "cli-forwarded-commands-unlisted",
        "conformance/commands/common.py",
        '    sub.add_parser(name, help=f"{what} (its options: {prog(name)} --help)", add_help=False)\n',
        "    pass\n",
        "the tools with a parser of their own (explore, routes, threshold, prebuild) run as subcommands but "
        "`attncheck --help` does not list them",
        (_CLI + "test_every_subcommand_is_listed_in_the_help",),
    ),
    _harness(
        "cli-routes-prog-not-passed",
        "conformance/commands/routes.py",
        "    return main(list(argv), prog=prog(NAME))\n",
        "    return main(list(argv))\n",
        "`attncheck routes` answers under the name `python -m conformance.route_records`: its help and "
        "errors name a command the user did not type",
        (_CLI + "test_routes_answers_like_python_dash_m_route_records",),
    ),
    _harness(
        "cli-threshold-error-unnamed",
        "conformance/commands/threshold.py",
        '        print(f"{prog(NAME)}: error: {e}", file=sys.stderr)\n',
        '        print(f"error: {e}", file=sys.stderr)\n',
        "`attncheck threshold` refuses a bad name without saying which program refused it",
        (_CLI + "test_threshold_renders_a_table_and_refuses_an_unknown_name_in_one_line",),
    ),
    _harness(
        "cli-prebuild-name-dropped-twice",
        "conformance/commands/prebuild.py",
        "    a = p.parse_args(list(argv))\n",
        "    a = p.parse_args(list(argv)[1:])\n",
        "`attncheck prebuild` strips the subcommand name again from what follows it: its first option is lost",
        (_CLI + "test_prebuild_refuses_a_device_without_flashinfer_in_one_line",),
    ),
    _harness(
        "cli-routes-imported-eagerly",
        "conformance/commands/routes.py",
        "from conformance.commands.common import add_forwarded, prog\n",
        (
            "from conformance.commands.common import add_forwarded, prog\n"
            "from conformance.route_records import main as _check  # noqa: F401\n"
        ),
        "the record checker is imported with the CLI: every attncheck command loads the FlashInfer adapter",
        (_CLI + "test_importing_the_cli_imports_no_adapter_and_no_flashinfer",),
    ),
    _harness(
        "parity-run-vml-not-warmed",
        "conformance/parity_run.py",
        "    warm_mkl_vml()  # oneMKL picks its VML kernels in this one thread before any attention is computed\n",
        "    pass\n",
        "a parity run (the CLI's and the pytest grid's) computes without warming oneMKL's VML: "
        "a process's first exp may run one thread's chunk at "
        "1e-4 error (a first reference off, a false history_independent)",
        (_ENV + "test_every_entry_point_warms_vml_before_it_can_compute",),
    ),
    _harness(
        "explore-vml-not-warmed",
        "conformance/explore/loop.py",
        "    warm_mkl_vml()  # oneMKL picks its VML kernels in this one thread before any attention is computed\n",
        "    pass\n",
        "an exploration computes without warming oneMKL's VML: a process's first exp may run "
        "one thread's chunk at "
        "1e-4 error (a first reference off, a false history_independent)",
        (_ENV + "test_every_entry_point_warms_vml_before_it_can_compute",),
    ),
    _harness(
        "pytest-vml-not-warmed",
        "conformance/plugin.py",
        "    warm_mkl_vml()  # oneMKL picks its VML kernels in this one thread before any attention is computed\n",
        "    pass\n",
        "a pytest process computes without warming oneMKL's VML: a process's first exp may run "
        "one thread's chunk at "
        "1e-4 error (a first reference off, a false history_independent)",
        (_ENV + "test_every_entry_point_warms_vml_before_it_can_compute",),
    ),
    _harness(
        "library-script-vml-not-warmed",
        "conformance/explore/repro.py",
        "warm_mkl_vml()  # oneMKL picks its VML kernels in this one thread before any attention is computed\n",
        "",
        "a written library script computes without warming oneMKL's VML: it may reproduce a false "
        "history_independent, or miss a real one",
        (_ENV + "test_a_library_script_warms_vml_before_it_builds_an_adapter",),
    ),
    _harness(
        "layer-upward-import",
        "scenarios/case.py",
        "from __future__ import annotations\n",
        (
            "from __future__ import annotations\n"
            "\n"
            "\n"
            "def _gate():  # an upward import, made at call time\n"
            "    import conformance.gate\n"
            "\n"
            "    return conformance.gate\n"
            "\n"
        ),
        "the bottom layer imports the top one: a Case can no longer be read without the gate and its ledger",
        (_LAYERS + "test_lint_imports_keeps_every_contract",),
    ),
    _harness(
        "oracle-imports-kernels",
        "oracle/reference.py",
        "from __future__ import annotations\n",
        ("from __future__ import annotations\n\nimport kernels._env  # noqa: F401\n"),
        "the oracle imports the kernels layer beside it (as it once did to warm oneMKL at import)",
        (_LAYERS + "test_lint_imports_keeps_every_contract",),
    ),
    _harness(
        "sibling-import-cycle",
        "kernels/flashinfer/support.py",
        "from __future__ import annotations\n",
        (
            "from __future__ import annotations\n"
            "\n"
            "\n"
            "def _adapter():  # a sibling imported back, at call time\n"
            "    import kernels.flashinfer.adapter\n"
            "\n"
            "    return kernels.flashinfer.adapter\n"
            "\n"
        ),
        "two modules of one package import each other (support <- adapter -> support)",
        (_LAYERS + "test_lint_imports_keeps_every_contract",),
    ),
    # ---- the verdict cache (issue 20): a cached verdict must never outlive what it was measured on ----
    _harness(
        "deps-lazy-imports-missed",
        "conformance/mutations/deps.py",
        "                if contexts is None or measured is None or not contexts.isdisjoint(measured.get(line, ())):\n",
        "                if False:\n",
        "a lazy import the tests ran is not followed: an edit to the module it imports keeps their verdicts",
        (_CACHE + "test_a_test_files_dependencies_are_what_it_runs_imports_and_reads",),
    ),
    _harness(
        "deps-test-file-not-keyed",
        "conformance/mutations/deps.py",
        "            seeds = {test_file}.union(*(self._by_ctx.get(c, set()) for c in charged))\n",
        "            seeds = set().union(*(self._by_ctx.get(c, set()) for c in charged))\n",
        "a test file is not among its own dependencies: an edited test keeps the verdicts it proved",
        (_CACHE + "test_a_test_files_dependencies_are_what_it_runs_imports_and_reads",),
    ),
    _harness(
        "deps-spawns-ignored",
        "conformance/mutations/deps.py",
        "        self.opaque = frozenset(self._opaque(set(spawns)))\n",
        "        self.opaque = frozenset()\n",
        "a test that started a process is keyed on what the parent saw: an edit the process read goes unseen",
        (_CACHE + "test_a_test_files_dependencies_are_what_it_runs_imports_and_reads",),
    ),
    _harness(
        "verdict-file-a-dependency",
        "conformance/mutations/deps.py",
        "        kept = {k: {d for d in v if not d.removeprefix(DIR).startswith(VERDICT_DIR)} for k, v in reads.items()}\n",
        "        kept = {k: set(v) for k, v in reads.items()}\n",
        "the verdict file read by a test that copies the tree is a dependency: every refresh moves the keys "
        "holding it, and the committed file is never current",
        (_CACHE + "test_the_verdict_files_are_never_a_dependency",),
    ),
    _harness(
        "verdict-key-without-hashes",
        "conformance/mutations/verdicts.py",
        '            "deps": {d: self.hash(d) for d in sorted(set(deps))},\n',
        '            "deps": sorted(set(deps)),\n',
        "a key names its dependencies but not their contents: an edit changes no key",
        (_CACHE + "test_an_edit_invalidates_exactly_the_verdicts_whose_dependencies_it_touched",),
    ),
    _harness(
        "verdict-stale-entry-trusted",
        "conformance/mutations/verdicts.py",
        '            if e and e.get("status") == "killed" and keyer.mutant_key(m, self.deps_of(e)) == e["key"]:\n',
        '            if e and e.get("status") == "killed":\n',
        "a cached kill is taken without checking its key: a stale verdict stands",
        (
            _CACHE + "test_an_edit_invalidates_exactly_the_verdicts_whose_dependencies_it_touched",
            _CACHE + "test_a_stale_entry_or_an_unproven_test_makes_the_run_run",
        ),
    ),
    _harness(
        "verdict-stale-file-accepted",
        "conformance/mutations/verdicts.py",
        '            elif was[name]["key"] != now[name]["key"]:\n',
        "            elif False:\n",
        "CI compares the committed verdicts by name only: a file whose keys moved passes as current",
        (_CACHE + "test_a_stale_committed_file_fails_naming_the_command_that_refreshes_it",),
    ),
    _harness(
        "verdict-fresh-ignored",
        "conformance/mutations/engine.py",
        "        if s.verdicts is None or s.fresh or s.compare_whole_suite or not s.verdicts.is_file():\n",
        "        if s.verdicts is None or s.compare_whole_suite or not s.verdicts.is_file():\n",
        "`attncheck mutate --fresh` still takes cached verdicts: no run is ever uncached",
        (_CACHE + "test_a_run_whose_every_key_matches_runs_nothing_and_fresh_runs_everything",),
    ),
    _harness(
        "verdict-killing-pass-unkeyed",
        "conformance/mutations/engine.py",
        "        runs = ([(res.pass_tests, res.ran)] if res is not None and not res.cached else []) + self._covered.get(name, [])\n",
        "        runs = ([] if res is not None and not res.cached else []) + self._covered.get(name, [])\n",
        "a verdict is keyed on its covering runs only: an edit to the test that killed it keeps it",
        (_CACHE + "test_a_verdict_rests_on_the_runs_that_killed_it",),
    ),
    _harness(
        "verdict-unproven-tests-trusted",
        "conformance/mutations/engine.py",
        '        return all(r in killed for r in rows if valid_rows[r]["outcome"] != "skipped")\n',
        "        return True\n",
        "a cache whose kills leave a test unproven skips the run: a test that kills nothing passes CI",
        (_CACHE + "test_a_stale_entry_or_an_unproven_test_makes_the_run_run",),
    ),
    _harness(
        "verdict-refresh-drops-cached",
        "conformance/mutations/engine.py",
        "            elif m.name in valid and committed is not None:\n",
        "            elif False:\n",
        "the refreshed verdicts keep only what ran: a run with nothing changed reads as stale",
        (_CACHE + "test_a_run_whose_every_key_matches_runs_nothing_and_fresh_runs_everything",),
    ),
    _harness(
        "reads-imports-charged",
        "conformance/mutations/child.py",
        ("            if any(s in fn for s in _NOT_A_READ):\n                return None\n"),
        "",
        "an import's open counts as a read by whoever imported: every session depends on every module",
        (_CACHE + "test_the_audit_hook_charges_a_read_to_the_repository_file_that_read_it",),
    ),
    _harness(
        "reads-collection-not-a-context",
        "conformance/mutations/child.py",
        '            self._switch("collect:" + collector.nodeid)\n',
        "            pass\n",
        "a test file's collection is charged to the session: what one file imports keys every verdict",
        (_CACHE + "test_collecting_a_test_file_is_a_context_of_its_own",),
    ),
    _harness(
        "mutate-verdict-file-unchecked",
        "conformance/commands/mutate.py",
        "    if path.exists() and not (args.fresh or args.compare_whole_suite):\n",
        "    if False:\n",
        "a corrupt verdict file (a merge conflict) ends `attncheck mutate` in a traceback, not one line",
        (_CACHE + "test_a_verdict_file_that_cannot_serve_the_run_exits_2_in_one_line[argv2---verdicts]",),
    ),
    _harness(
        "upstream-graph-unmasked-plan-drops-paged-mask",
        "kernels/standins/upstream_flashinfer/prefill.py",
        "            # holding the last masked plan's bits (0.7.2 prefill.py:3509-3524, 0.7.4 :4068-4083: no else).\n",
        (
            "            if packed_custom_mask is None:\n"
            "                self._custom_mask_buf = self._mask_indptr_buf = None\n"
        ),
        "the model's paged graph plan drops the mask buffers on an unmasked plan, which FlashInfer keeps and reads",
        (
            "tests/kernels/test_flashinfer_adapter.py::test_an_unmasked_plan_on_a_shared_graph_wrapper_reads_its_mask_buffer[paged]",
        ),
    ),
    _harness(
        "upstream-graph-unmasked-plan-drops-ragged-mask",
        "kernels/standins/upstream_flashinfer/prefill.py",
        '            # 0.7.4 :6099-6109; its __init__ says of them "they may not be used", 0.7.4 :5706-5707).\n',
        (
            "            if packed_custom_mask is None:\n"
            "                self._custom_mask_buf = self._mask_indptr_buf = None\n"
        ),
        "the model's ragged graph plan drops the mask buffers on an unmasked plan, which FlashInfer keeps and reads",
        (
            "tests/kernels/test_flashinfer_adapter.py::test_an_unmasked_plan_on_a_shared_graph_wrapper_reads_its_mask_buffer[ragged]",
        ),
    ),
    _harness(
        "explore-mask-buffer-route-ignored",
        "conformance/explore/machines.py",
        "        return q.replace(custom_mask=True) if callable(held) and held(case) else q\n",
        "        return q\n",
        "a graph wrapper holding mask buffers is expected to route as its case says: a route the buffer decides fails",
        (
            _FI_SUBJ + "test_one_graph_wrapper_is_re_planned_across_mask_window_and_causal[paged]",
            _FI_SUBJ + "test_one_graph_wrapper_is_re_planned_across_mask_window_and_causal[ragged]",
        ),
    ),
    _harness(
        "explore-graph-directed-on-eager",
        "conformance/explore/directed.py",
        "    if seq.graph_only and not machine.graph:\n        return GRAPH_ONLY, None\n",
        "",
        "the graph-wrapper re-plans run on eager machines, which have no toggle rules to run them",
        (
            _FI_SUBJ + "test_one_graph_wrapper_is_re_planned_across_mask_window_and_causal[paged]",
            _FI_SUBJ + "test_one_graph_wrapper_is_re_planned_across_mask_window_and_causal[ragged]",
        ),
    ),
    _harness(
        "explore-toggle-causal-unchanged",
        "scenarios/strategies.py",
        "    return case.replace(causal=not case.causal)\n",
        "    return case\n",
        "toggle_causal re-plans the same case: a graph wrapper never meets causal on then off",
        (_FI_SUBJ + "test_the_graph_toggles_re_plan_the_same_wrapper",),
    ),
    _harness(
        "explore-toggle-window-never-off",
        "scenarios/strategies.py",
        "    return case.replace(window_left=-1 if case.window_left >= 0 else window)\n",
        "    return case.replace(window_left=window)\n",
        "toggle_window only ever switches the window on: a graph wrapper never meets a window then none",
        (_FI_SUBJ + "test_the_graph_toggles_re_plan_the_same_wrapper",),
    ),
    _harness(
        "explore-toggles-on-eager-machines",
        "conformance/explore/machines.py",
        '    if ns["graph"]:  # the same graph wrapper re-planned with the window or causal flipped (its key keeps both)\n',
        "    if True:\n",
        "eager machines get the graph toggles too: their rule set, and so what they draw, changes",
        (_FI_SUBJ + "test_the_graph_toggles_re_plan_the_same_wrapper",),
    ),
    _harness(
        "routes-mask-buffer-ignored",
        "conformance/route_records.py",
        "        queries.append(q.replace(custom_mask=True) if mask_buffer_held(c, graph, options) else q)\n",
        "        queries.append(q)\n",
        "attncheck routes expects a shared graph wrapper's unmasked plan to route unmasked, which the buffer prevents",
        ("tests/gate/test_route_records.py::test_a_shared_graph_wrapper_routes_every_plan_as_masked",),
    ),
    _harness(
        "vml-warmup-fp32-only",
        "kernels/_env.py",
        "    for dtype in (torch.float32, torch.float64):\n",
        "    for dtype in (torch.float32,):\n",
        "the VML warm-up leaves float64 out: the fp64 oracle's first exp may still run a low-accuracy chunk",
        (_ENV + "test_warming_calls_every_vml_function_once_per_float_dtype_on_one_element",),
    ),
    _harness(
        "report-entries-only-those-asked",
        "conformance/ledger_report.py",
        "        entries = [e for e in ledger if e.id in lf.FACTS and lf.FACTS[e.id].family == fid]\n",
        "        entries = [e for e in ledger if e.id in (ids or lf.FACTS) and lf.FACTS[e.id].family == fid]\n",
        "an entry id writes up that entry alone: one root cause is filed as several partial reports",
        (
            _REPORT + "test_a_report_carries_what_a_maintainer_needs[entry-selects-its-family]",
            _REPORT + "test_a_report_carries_what_a_maintainer_needs[family-id]",
        ),
    ),
    _harness(
        "report-unknown-id-ignored",
        "conformance/ledger_report.py",
        '            raise InvalidValue("ID", i, "a ledger entry or family id", fix)\n',
        "            continue\n",
        "an unknown id is passed over: a typo writes an empty report and exits 0",
        (
            _REPORT + "test_bad_usage_exits_2_in_one_line_and_writes_nothing[unknown-id]",
            _REPORT + "test_bad_usage_exits_2_in_one_line_and_writes_nothing[unknown-among-known]",
        ),
    ),
    _harness(
        "report-staleness-unchecked",
        "conformance/ledger_report.py",
        "    return PRINTED_TODAY if now == head[2] else PRINTED_EARLIER.format(then=head[2][:12], now=now[:12])\n",
        "    return PRINTED_TODAY\n",
        "an output printed by an earlier version of its script is filed as what today's script prints",
        (_REPORT + "test_an_observed_output_says_whether_todays_script_printed_it[script-edited-since]",),
    ),
    _harness(
        "report-versions-without-verify-runs",
        "conformance/ledger_report.py",
        "_version_cell(e, f, v, newest_run(e, v, runs, root), root)",
        "_version_cell(e, f, v, None, root)",
        "the versions table ignores the recorded verify runs: every version reads 'not run'",
        (_REPORT + "test_a_report_carries_what_a_maintainer_needs[versions-from-verify-runs]",),
    ),
    _harness(
        "report-beside-output-ignored",
        "conformance/ledger_report.py",
        "        status = SHOWN_BESIDE if _kept_beside(entry, version, root) else NOT_RUN\n",
        "        status = NOT_RUN\n",
        "a version shown only by the output kept beside the script (before verify runs) reads 'not run'",
        (_REPORT + "test_a_version_shown_only_by_the_output_kept_beside_the_script_says_so",),
    ),
    _harness(
        "report-recorder-lines-kept",
        "conformance/ledger_report.py",
        "        if RECORDER_LINE.match(ln) or JIT_LOG_LINE.search(ln):\n",
        "        if False:\n",
        "the observed output keeps verify's own lines (status trailer, command) and JIT build logs",
        (
            _REPORT + "test_an_observed_output_says_whether_todays_script_printed_it[same-script]",
            _REPORT + "test_an_observed_output_says_whether_todays_script_printed_it[script-edited-since]",
        ),
    ),
    _harness(
        "report-local-settings-kept",
        "conformance/ledger_report.py",
        "    versions = {k: v for k, v in env.versions.items() if k not in LOCAL_SETTINGS}\n",
        "    versions = dict(env.versions)\n",
        "the environment carries the runner's JIT cache path and job count, which no maintainer installs",
        (_REPORT + "test_a_report_carries_what_a_maintainer_needs[one-entry-family]",),
    ),
    _harness(
        "facts-cause-of-one-version",
        "conformance/ledger_facts.py",
        '    return (Cause("0.7.2.post1", v072), Cause("0.7.4", v074, differs074))\n',
        '    return (Cause("0.7.2.post1", v072),)\n',
        "the root cause names 0.7.2.post1's lines alone: 0.7.4's code path goes unread and unsaid",
        (
            _REPORT
            + "test_an_entrys_root_cause_names_source_lines_in_every_studied_version[flashinfer-empty-batch-plan]",
            _REPORT
            + "test_an_entrys_root_cause_names_source_lines_in_every_studied_version[flashinfer-sticky-paged-auto]",
        ),
    ),
    _harness(
        "facts-differs-on-a-listed-version",
        "conformance/ledger_facts.py",
        '    return (Cause("0.7.2.post1", v072), Cause("0.7.4", v074, differs074))\n',
        '    return (Cause("0.7.2.post1", v072, differs074), Cause("0.7.4", v074))\n',
        "a version the entry lists is said to have other code than the defect's",
        (
            _REPORT
            + "test_an_entrys_root_cause_names_source_lines_in_every_studied_version[flashinfer-sticky-paged-auto]",
        ),
    ),
    _harness(
        "facts-cudnn-0-7-4-said-to-differ",
        "conformance/ledger_facts.py",
        '                    "reproduces there: the script\'s decode batches, 2026-12-04)",\n'
        "                ),\n            ),\n",
        '                    "reproduces there: the script\'s decode batches, 2026-12-04)",\n'
        '                ),\n                differs074="not read further",\n            ),\n',
        "the root cause says 0.7.4's cuDNN hand-over is other code, where the entry lists 0.7.4 (it reproduces there)",
        (
            _REPORT + "test_an_entrys_root_cause_names_source_lines_in_every_studied_version"
            "[flashinfer-cudnn-paged-all-kv-empty-raises]",
        ),
    ),
    _harness(
        "facts-related-untitled",
        "conformance/ledger_facts.py",
        '                    "Fix: Add mask_indptr conversion in BatchPrefillWithPagedKVCacheWrapper.plan()",\n',
        '                    "",\n',
        "an upstream report is cited without its title",
        (_REPORT + "test_related_reports_are_cited_by_number_title_and_state",),
    ),
    _harness(
        "facts-family-left-empty",
        "conformance/ledger_facts.py",
        '            "flashinfer-graph-no-query-rows",\n            "graph-no-query-rows",\n',
        '            "flashinfer-graph-no-query-rows",\n            "empty-input",\n',
        "an entry filed under another family: its own family is left without an entry, two root causes share a report",
        (_REPORT + "test_every_entry_has_facts_in_a_family_and_every_family_an_entry",),
    ),
    _harness(
        "report-out-ignored",
        "conformance/commands/ledger.py",
        "    if args.out is None:\n",
        "    if True:\n",
        "`ledger report --out FILE` prints to standard output and writes no file",
        (_REPORT + "test_the_report_goes_to_out_or_to_standard_output",),
    ),
    _harness(
        "report-out-unchecked",
        "conformance/commands/ledger.py",
        '    writable_file("--out", args.out)\n',
        "",
        "an --out that cannot be written is tried anyway: a traceback, not one line and exit 2",
        (
            _REPORT + "test_bad_usage_exits_2_in_one_line_and_writes_nothing[out-a-directory]",
            _REPORT + "test_bad_usage_exits_2_in_one_line_and_writes_nothing[out-under-a-missing-folder]",
        ),
    ),
    _harness(
        "verify-script-run-plainly",
        "conformance/ledger_verify.py",
        '            [python, "-c", BOOTSTRAP, script, *args],\n',
        "            [python, script, *args],\n",
        "an evidence script run as plain `python SCRIPT`: an ImportError it lets escape (or an exit with a message) is exit 1, read as the defect reproducing",
        (
            _VERIFY + "test_a_script_is_classified_by_how_it_ends[import-error]",
            _VERIFY + "test_a_script_is_classified_by_how_it_ends[message-exit]",
        ),
    ),
    _harness(
        "verify-exit-0-read-as-the-defect",
        "conformance/ledger_verify.py",
        "    if code == 1:\n        return REPRODUCES",
        "    if code == 0:\n        return REPRODUCES",
        "exit statuses read the shell's way round: 0 reproduces, and exit 1 is no verdict",
        (
            _VERIFY + "test_a_script_is_classified_by_how_it_ends[exit-1]",
            _VERIFY + "test_a_script_is_classified_by_how_it_ends[exit-0]",
        ),
    ),
    _harness(
        "verify-own-exit-2-reproduces",
        "conformance/ledger_verify.py",
        "    if code == 1:\n",
        "    if code in (1, 2):\n",
        "a script's own 'could not judge' (exit 2: its control failed) read as the defect reproducing",
        (_VERIFY + "test_a_script_is_classified_by_how_it_ends[own-exit-2]",),
    ),
    _harness(
        "verify-signal-unnamed",
        "conformance/ledger_verify.py",
        "    if code < 0:\n",
        "    if False:\n",
        "a script killed by a signal is reported as an odd exit status, not by the signal that killed it",
        (_VERIFY + "test_a_script_is_classified_by_how_it_ends[signal]",),
    ),
    _harness(
        "verify-no-time-limit",
        "conformance/ledger_verify.py",
        "            code: Optional[int] = proc.wait(timeout=timeout_s)\n",
        "            code: Optional[int] = proc.wait()\n",
        "no wall-clock limit: a script that hangs holds the device session until it ends by itself",
        (_VERIFY + "test_a_script_is_classified_by_how_it_ends[timeout]",),
    ),
    _harness(
        "verify-timeout-kills-the-script-only",
        "conformance/ledger_verify.py",
        "        os.killpg(proc.pid, signal.SIGKILL)  # the group run_script started: the script and its children\n",
        "        proc.kill()\n",
        "a timed-out script is killed and the children it started run on (a GPU child keeps the device)",
        (_VERIFY + "test_a_timeout_kills_the_scripts_children_too",),
    ),
    _harness(
        "verify-listed-absence-passes",
        "conformance/ledger_verify.py",
        "    return (True, NOTE_DROP.format(version=installed)) if listed else (False, NOTE_ABSENT.format(version=installed))\n",
        "    return (False, NOTE_DROP.format(version=installed)) if listed else (False, NOTE_ABSENT.format(version=installed))\n",
        "an entry listed for the installed version whose defect no longer shows exits 0: the ledger keeps a fixed defect",
        (_VERIFY + "test_the_exit_status_is_1_only_where_the_ledger_is_contradicted_or_a_script_broke",),
    ),
    _harness(
        "verify-cpu-runs-gpu-scripts",
        "conformance/ledger_verify.py",
        "    if env.device is None:\n",
        "    if False:\n",
        "without a GPU the evidence scripts run anyway and fail: `ledger verify` on a CPU CI runner exits 1",
        (_VERIFY + "test_a_cpu_run_without_flashinfer_runs_nothing_and_exits_0",),
    ),
    _harness(
        "verify-written-only-at-the-end",
        "conformance/ledger_verify.py",
        "    for entry in entries:\n        try:\n            outcome = verify_one(entry, env, out_dir, timeout_s, root)\n        except KeyboardInterrupt:\n            report.outcomes.append(_interrupted(entry))\n            files.write(out_dir, report)\n            raise\n        report.outcomes.append(outcome)\n        files.write(out_dir, report)\n        if on_outcome is not None:\n            on_outcome(outcome)\n",
        "    for entry in entries:\n        report.outcomes.append(verify_one(entry, env, out_dir, timeout_s, root))\n",
        "results written only when every entry has run: an interrupt (or the session's time limit) loses what ran",
        (_VERIFY + "test_an_interrupt_keeps_what_ran",),
    ),
    _harness(
        "verify-output-hash-dropped",
        "conformance/ledger_verify_files.py",
        '        f"{HEADER}{o.script}{args} sha256 {o.sha256}; {versions_text(env.versions)}; "\n',
        '        f"{HEADER}{o.script}{args}; {versions_text(env.versions)}; "\n',
        "an evidence output does not name the sha256 of the script text that printed it (issue 18)",
        (
            _VERIFY + "test_the_json_markdown_and_outputs_say_what_ran_where",
            _VERIFY + "test_an_output_says_when_its_script_changed_since",
        ),
    ),
    _harness(
        "verify-stale-output-unchecked",
        "conformance/ledger_verify_files.py",
        "    if now != sha:\n",
        "    if False:\n",
        "an output printed by an earlier version of its script passes as the script's output today",
        (_VERIFY + "test_an_output_says_when_its_script_changed_since",),
    ),
    _harness(
        "verify-any-comment-is-a-header",
        "conformance/ledger_verify_files.py",
        "    if not first.startswith(HEADER):\n",
        '    if not first.startswith("# "):\n',
        "an evidence output's first comment (the H200 runs' '# 2026-12-01, ...') read as the verify header",
        (_VERIFY + "test_every_hashed_evidence_output_was_printed_by_its_script_as_it_is_today",),
    ),
    _harness(
        "verify-unknown-id-skipped",
        "conformance/ledger_verify.py",
        '            raise InvalidValue("ID", i, "a ledger entry id", hint)\n',
        "            continue\n",
        "an unknown entry id is skipped: beside other ids fewer entries are verified than asked, alone the refusal blames --target",
        (_VERIFY + "test_bad_usage_exits_2_in_one_line_and_writes_nothing[unknown-id]",),
    ),
    _harness(
        "verify-id-of-another-target-dropped",
        "conformance/ledger_verify.py",
        "        if target is not None and by_id[i].target != target:\n",
        "        if False:\n",
        "an id of another library than --target is dropped silently: the refusal blames --target, not the id",
        (_VERIFY + "test_bad_usage_exits_2_in_one_line_and_writes_nothing[id-of-another-target]",),
    ),
    _harness(
        "verify-timeout-unchecked",
        "conformance/commands/ledger.py",
        "    if not args.timeout > 0:\n",
        "    if False:\n",
        "--timeout 0 is taken: every script times out at once, files are written and the run exits 1",
        (_VERIFY + "test_bad_usage_exits_2_in_one_line_and_writes_nothing[timeout-0]",),
    ),
    _harness(
        "verify-python-not-found-unchecked",
        "conformance/ledger_verify.py",
        "    if found is None:\n",
        "    if False:\n",
        "a --python that does not exist ends in a traceback, not one line naming it",
        (_VERIFY + "test_bad_usage_exits_2_in_one_line_and_writes_nothing[python-missing]",),
    ),
    _harness(
        "verify-python-probe-falls-back",
        "conformance/ledger_env.py",
        '    raise InvalidValue(\n        "--python",\n',
        '    return environment_here()\n    raise InvalidValue(\n        "--python",\n',
        "an interpreter that cannot describe itself is verified with this one's versions: the report stamps the wrong library",
        (_VERIFY + "test_bad_usage_exits_2_in_one_line_and_writes_nothing[python-not-a-python]",),
    ),
    _harness(
        "verify-out-checked-when-made",
        "conformance/commands/ledger.py",
        '    usable_out_dir("--out", args.out)\n',
        "",
        "--out is checked only when it is made, after the environment probe, and the refusal names no file in the way",
        (_VERIFY + "test_bad_usage_exits_2_in_one_line_and_writes_nothing[out-under-a-file]",),
    ),
    _harness(
        "verify-earlier-run-dropped",
        "conformance/ledger_verify.py",
        "    before = files.earlier(out_dir, env)\n",
        "    before = None\n",
        "a run of a few ids replaces the directory's file: a ledger verified one device command at a time keeps only the last",
        (_VERIFY + "test_a_run_of_a_few_ids_keeps_the_earlier_runs_other_entries",),
    ),
    _harness(
        "verify-other-versions-entries-kept",
        "conformance/ledger_verify_files.py",
        "    return report if same_libraries(report.environment, env) else None\n",
        "    return report\n",
        "a run keeps the entries an earlier run measured on another library version: one file mixes two versions",
        (_VERIFY + "test_a_run_of_a_few_ids_keeps_the_earlier_runs_other_entries",),
    ),
    _harness(
        "diff-known-by-any-entry",
        "conformance/record_diff.py",
        "new.arch, options, n.resolved_backend, reproduced)",
        "new.arch, options, n.resolved_backend)",
        "the upgrade diff calls a newly failing record known by any entry that explains it, reproduced on NEW or not: a regression hides behind a fixed entry",
        (_DIFF + "test_with_verify_results_a_reproduced_entry_is_known_a_vanished_one_fixed_the_rest_regressions",),
    ),
    _harness(
        "diff-fixed-without-a-new-verdict",
        "conformance/record_diff.py",
        "        if now.get(i) == DOES_NOT_REPRODUCE\n",
        "        if now.get(i) != REPRODUCES\n",
        "an entry NEW's verify run could not run (or did not ask) is listed as fixed by the upgrade",
        (_DIFF + "test_with_verify_results_a_reproduced_entry_is_known_a_vanished_one_fixed_the_rest_regressions",),
    ),
    _harness(
        "diff-ledger-version-unchecked",
        "conformance/record_diff.py",
        "    if (theirs, report.environment.arch) != (ours, s.arch):\n",
        "    if report.environment.arch != s.arch:\n",
        "a verify run of another library version is taken as NEW's: its entries read as still present (or fixed) on NEW",
        (_DIFF + "test_a_verify_file_that_is_not_of_its_side_is_refused_in_one_line[verify-of-another-version]",),
    ),
    _harness(
        "diff-ledger-arch-unchecked",
        "conformance/record_diff.py",
        "    if (theirs, report.environment.arch) != (ours, s.arch):\n",
        "    if theirs != ours:\n",
        "a verify run on another architecture is taken as the side's (its sm90-only entries never ran there)",
        (_DIFF + "test_a_verify_file_that_is_not_of_its_side_is_refused_in_one_line[verify-of-another-arch]",),
    ),
    _harness(
        "diff-given-ledger-ignored",
        "conformance/commands/diff.py",
        "    if given:\n        return rd.with_ledger(",
        "    if False:\n        return rd.with_ledger(",
        "--new-ledger FILE is read only when NEW's directory holds a verify file too: the file given is ignored",
        (_DIFF + "test_a_verify_file_that_is_not_of_its_side_is_refused_in_one_line[not-a-verify-file]",),
    ),
    _harness(
        "explore-stops-at-first-defect",
        "conformance/explore/loop.py",
        "        if hunt and book.found:\n",
        "        if book.found:\n",
        "a subject that must hold ends at its first defect again: the rest of its budget looks for nothing",
        (_DEFECTS + "test_the_exploration_goes_past_its_first_defect_to_the_next",),
    ),
    _harness(
        "hunt-reports-what-its-rerun-does-not",
        "conformance/explore/loop.py",
        "            failures = _first_saved_failure(machine, budget, db, round_seed) or failures\n",
        "            failures = failures\n",
        "a hunt reports the failure it shrank first, where a rerun from its kept database replays another the shrinker saved: the run and its rerun name different sequences",
        (
            "tests/explore/test_scenario_machines.py::test_each_fault_is_caught_shrunk_and_reproduced[fault-mask_not_cleared]",
        ),
    ),
    _harness(
        "signature-kind-unparsed",
        "conformance/explore/defects.py",
        '    if invariant == "output_matches_oracle":\n',
        "    if False:\n",
        "an oracle failure's signature keeps its numbers: the same defect on other lengths counts as a new one",
        (_DEFECTS + "test_a_signature_is_the_same_for_the_same_defect_and_apart_for_another",),
    ),
    _harness(
        "flaky-script-not-verified",
        "conformance/explore/loop.py",
        "            found = _replay_flaky(machine, flaky, out, rnd, time.perf_counter() - t0, verify=True)\n",
        "            found = _replay_flaky(machine, flaky, out, rnd, time.perf_counter() - t0, verify=False)\n",
        "a flaky outcome's script is written but never run in a fresh process: nobody knows whether it reproduces",
        (_DEFECTS + "test_a_flaky_outcome_is_replayed_in_a_fresh_process_and_reported_with_its_script",),
    ),
    _harness(
        "failed-plan-not-in-history",
        "conformance/explore/machines.py",
        "            self.plans.setdefault(key, []).append(case)\n            if self._known(",
        "            if self._known(",
        "a plan that raised is left out of the wrapper's history: the mask it left behind is a new finding",
        (_FI_SUBJ + "test_a_lifecycle_entry_is_known_where_it_shows_and_the_exploration_goes_on",),
    ),
    _harness(
        "lifecycle-entry-ignored",
        "conformance/explore/machines.py",
        "        entry = self.subject.known_history(plans, graph_backend) if self.subject.known_history else None\n",
        "        entry = None\n",
        "the ledger's lifecycle entries are never asked: every stale-mask example is a new finding",
        (_FI_SUBJ + "test_a_lifecycle_entry_is_known_where_it_shows_and_the_exploration_goes_on",),
    ),
    # ---- the routing spec picked by the library version (issue 19 items 5 and 7) ----
    _harness(
        "explore-unmodelled-auto-checked",
        "conformance/explore/machines.py",
        "            if backend == self.subject.backend and self.subject.unmodelled:\n",
        "            if False:\n",
        "a FlashInfer version without routing rows: every run of auto fails for not running 'auto'",
        (_FI_SUBJ + "test_the_routing_spec_is_the_versions_and_an_unmodelled_version_checks_no_auto_route",),
    ),
    _harness(
        "explore-spec-version-ignored",
        "conformance/explore/subjects.py",
        "flashinfer_cuda_spec(spec_version or version)",
        "flashinfer_cuda_spec(version)",
        "the subjects' spec read from the installed version alone: the version the caller names is ignored",
        (_FI_SUBJ + "test_the_routing_spec_is_the_versions_and_an_unmodelled_version_checks_no_auto_route",),
    ),
    _harness(
        "script-auto-route-checked-without-spec",
        "conformance/explore/script_parts.py",
        '        return {"backend": ANY if step.backend == "auto" else step.backend, "reason": ANY, "raises": None}\n',
        '        return {"backend": step.backend, "reason": ANY, "raises": None}\n',
        "a script of a version without routing rows reports every auto run as a route problem",
        ("tests/explore/test_scenario_repro.py::test_a_script_leaves_auto_unchecked_where_no_spec_has_rows",),
    ),
    _harness(
        "report-routing-version-by-library-name",
        "conformance/route_records.py",
        "        version = run.header.versions.get(run.header.target)\n",
        "        version = run.header.versions.get(name)\n",
        "the merged report looks the version up by the spec's library name: every FlashInfer run unmodelled",
        ("tests/gate/test_route_records.py::test_the_merged_reports_routing_follows_each_runs_version",),
    ),
    _harness(
        "routes-unmodelled-judged-by-0-7-2",
        "conformance/route_records.py",
        "        spec = spec_for(library, version)\n",
        '        spec = spec_for(library, version) or spec_for(library, "0.7.2.post1")\n',
        "a version without rows judged by 0.7.2.post1's rows: its routing changes fail as wrong routes",
        ("tests/gate/test_route_records.py::test_a_version_without_rows_is_said_to_be_unchecked_not_failed",),
    ),
    _harness(
        "report-unmodelled-rendered-as-a-verdict",
        "reports/combined.py",
        '        if "error" in r or "unmodelled" in r:\n',
        '        if "error" in r:\n',
        "the merged report renders an unmodelled run's routing as a verdict it does not have",
        ("tests/gate/test_route_records.py::test_the_merged_reports_routing_follows_each_runs_version",),
    ),
    _harness(
        "ledger-auto-pick-of-0-7-4",
        "conformance/known_failures.py",
        "from routing.specs.flashinfer_cuda import SPEC_072, SPEC_074\n",
        "from routing.specs.flashinfer_cuda import SPEC_074 as SPEC_072, SPEC_074\n",
        "the ledger's auto-pick rules read 0.7.4's rows for entries seen in 0.7.2.post1",
        (_LEDGER + "test_the_rules_ask_0_7_2_post1s_auto_pick_and_only_its_entries_ask_it",),
    ),
    _harness(
        "ledger-0-7-4-entry-asks-0-7-2-pick",
        "conformance/known_failures.py",
        '        and (c["head_dim_qk"], c["head_dim_vo"]) == (192, 128)\n        and _runs_on_in_both(c, backend, "fa3")\n',
        '        and (c["head_dim_qk"], c["head_dim_vo"]) == (192, 128)\n        and _runs_on(c, backend, "fa3")\n',
        "an entry seen on both versions whose rule asks 0.7.2.post1's auto pick alone: 0.7.4's short paged batches, "
        "which auto sends to fa2, are claimed as this fa3 defect",
        (_LEDGER + "test_the_rules_ask_0_7_2_post1s_auto_pick_and_only_its_entries_ask_it",),
    ),
    # The lifecycle faults injected into upstream FlashInfer (kernels/flashinfer/lifecycle_faults.py), their subjects.
    _harness(
        "lifecycle-mask-kept-noop",
        "kernels/flashinfer/lifecycle_faults.py",
        "        w._custom_mask_buf, w._mask_indptr_buf = before\n",
        "        pass\n",
        "the paged_mask_kept fault switches nothing on: the library stays correct under the fault's name",
        (_CAUGHT + "[lifecycle-paged_mask_kept]",),
    ),
    _harness(
        "lifecycle-fault-state-on-class",
        "kernels/flashinfer/lifecycle_faults.py",
        "        setattr(w, attr, value)\n",
        "        setattr(type(w), attr, value)\n",
        "a fault keeps its first plan's value on the wrapper class: every fresh wrapper carries it",
        (_LIFECYCLE + "test_a_fault_lives_on_the_wrapper_it_planned_is_labelled_and_undone",),
    ),
    _harness(
        "unknown-fault-keyerror",
        "kernels/fault_patch.py",
        "    if name not in catalogue:\n",
        "    if False:\n",
        "an unknown fault name (of any catalogue) ends in a KeyError, not an error naming the faults there are",
        (
            _LIFECYCLE + "test_the_catalogue_covers_every_api_in_both_modes_and_refuses_an_unknown_name",
            _PRECISION + "test_a_fault_replaces_its_function_says_so_in_the_versions_and_is_undone",
            _BATCH_FAULTS + "test_a_batch_fault_says_so_in_the_versions_and_is_undone",
        ),
    ),
    _harness(
        "lifecycle-fault-unlabelled",
        "kernels/flashinfer/lib.py",
        '    fault = fault_of(sys.modules.get("flashinfer"))\n',
        "    fault = None\n",
        "a library with a lifecycle fault injected reports its plain version: records cannot tell it apart",
        (_LIFECYCLE + "test_a_fault_lives_on_the_wrapper_it_planned_is_labelled_and_undone",),
    ),
    _harness(
        "lifecycle-model-ledger-unread",
        "conformance/explore/subjects.py",
        "                known=_ledger_at(MODELLED_VERSION, MODEL_ARCH),\n",
        "                known=s.known,\n",
        "the lifecycle subjects on the CPU model read the ledger at the installed flashinfer's version: on a "
        "machine with another one, the defects the model copies from 0.7.2.post1 read as new findings",
        (_LIFECYCLE + "test_on_the_cpu_the_ledger_is_read_at_the_version_the_model_copies",),
    ),
    _harness(
        "lifecycle-limits-ignored",
        "conformance/explore/subjects.py",
        '        profile_limits={**FLASHINFER_LIMITS, **LIFECYCLE_LIMITS.get((api, graph), ({}, ""))[0]},\n',
        "        profile_limits=FLASHINFER_LIMITS,\n",
        "the lifecycle subjects draw masks where upstream's own mask defects show (ragged eager, paged graph): "
        "a hunt spends its examples on defects the ledger knows",
        (_LIFECYCLE + "test_the_subjects_draw_no_mask_where_upstream_has_a_mask_defect_of_its_own",),
    ),
    _harness(
        "repro-library-raised-run-unjudged",
        "conformance/explore/repro.py",
        '        if s.call == "run" and s.outcome in ("ok", "raise"):  # a run that raised here may not raise there: '
        "judged\n",
        '        if s.call == "run" and s.outcome == "ok":\n',
        "a library script keeps no reference for a run that raised in the machine: where that run holds "
        "(the same calls without the fault) the script ends in a KeyError, not a verdict",
        (_CAUGHT + "[lifecycle-ragged_kv_indptr_same_batch]",),
    ),
    _harness(
        "ledger-both-versions-pick-of-0-7-2",
        "conformance/known_failures.py",
        "expected_route(SPEC_072, q).backend == kernel == expected_route(SPEC_074, q).backend",
        "expected_route(SPEC_072, q).backend == kernel",
        "an entry seen in both versions claims a short paged auto record by 0.7.2.post1's pick alone (0.7.4 runs fa2)",
        (_LEDGER + "test_entries_of_both_versions_ask_auto_only_where_both_versions_pick_alike",),
    ),
    _harness(
        "oom-recorded-as-defect",
        "conformance/explore/machines.py",
        "        if not out_of_memory(e):\n            return\n",
        "        if True:\n            return\n",
        "a call that ran out of device memory is judged as the kernel's raise: a crowded device becomes a "
        "defect whose script does not reproduce",
        (_OOM + "test_out_of_memory_ends_the_subject_as_its_environment_not_a_defect[while-exploring]",),
    ),
    _harness(
        "oom-in-warm-up-recorded-as-finding",
        "conformance/explore/loop.py",
        "                if out_of_memory(e):\n",
        "                if False:\n",
        "running out of memory in the warm-up is reported as the library failing its plainest case",
        (_OOM + "test_out_of_memory_ends_the_subject_as_its_environment_not_a_defect[in-the-warm-up]",),
    ),
    _harness(
        "oom-text-not-read",
        "kernels/_env.py",
        '("out of memory" in text or "cudaerrormemoryallocation" in text)',
        '"cudaerrormemoryallocation" in text',
        'a CUDA "out of memory" a library raises as a RuntimeError is taken for the kernel\'s own error',
        (_OOM + "test_what_counts_as_running_out_of_memory[cuda-oom-text]",),
    ),
    _harness(
        "incomplete-run-exits-0",
        "conformance/explore/loop.py",
        "        return int(bool(self.escaped() if self.expects_failures else self.failed()) or bool(self.incomplete()))\n",
        "        return int(bool(self.escaped() if self.expects_failures else self.failed()))\n",
        "a run whose subject ran out of memory before its budget was spent exits 0, as if it had held",
        (_OOM + "test_out_of_memory_ends_the_subject_as_its_environment_not_a_defect[while-exploring]",),
    ),
    _harness(
        "merged-incomplete-run-exits-0",
        "conformance/explore/loop.py",
        "    return int(bool(next(iter(verdict.values()))) or bool(incomplete))\n",
        "    return int(bool(next(iter(verdict.values()))))\n",
        "a GPU run (a process per subject) whose subject ran out of memory exits 0, as if it had held",
        (_OOM + "test_out_of_memory_ends_the_subject_as_its_environment_not_a_defect[while-exploring]",),
    ),
    _harness(
        "merged-fault-run-judged-as-held",
        "conformance/explore/loop.py",
        "    faults = a.target in FAULT_TARGETS\n",
        "    faults = False\n",
        "a GPU run of a fault target (a process per subject) fails because its faults were caught, and never "
        "says which escaped",
        (_OOM + "test_a_merged_gpu_run_judges_fault_targets_by_what_escaped[faults-all-caught]",),
    ),
    _harness(
        "clean-comparison-expects-failures",
        "conformance/explore/subjects.py",
        'FAULT_TARGETS = frozenset({"faults", "lifecycle"})\n',
        'FAULT_TARGETS = frozenset({"faults", "lifecycle", "lifecycle-clean"})\n',
        "the lifecycle catalogue's clean subjects are judged as faults: a run where the library held exits 1",
        (_OOM + "test_a_merged_gpu_run_judges_fault_targets_by_what_escaped[clean-held]",),
    ),
    _harness(
        "fresh-control-ledger-ignored",
        "conformance/explore/machines.py",
        '            if entry is not None and entry[1] == "error":\n',
        "            if False:\n",
        "a fresh control that raises on a case the ledger says the library cannot run is judged as the "
        "wrapper's history: every graph run over zero query rows becomes a history defect",
        (_OOM + "test_a_fresh_control_that_raises_where_the_ledger_says_so_is_not_judged[known-to-raise]",),
    ),
    _harness(
        "record-jit-cache-after-timing-checks",
        "conformance/commands/record.py",
        "    if args.jit_cache:  # before the sweep's checks, which import the library on a GPU\n"
        "        set_jit_cache(args.jit_cache)\n",
        "",
        "`attncheck record --jit-cache DIR --time fa2` refuses its own option on a GPU: the timing checks "
        "import flashinfer before the parity run sets the cache",
        (
            "tests/harness/test_jit_cache.py::test_record_points_the_jit_cache_before_its_timing_checks_import_the_library",
        ),
    ),
    _harness(
        "jit-cache-repeat-refused",
        "conformance/commands/common.py",
        '    if os.environ.get("FLASHINFER_WORKSPACE_BASE") == os.path.abspath(path) and os.path.isdir(path):\n',
        "    if False:\n",
        "the same --jit-cache set twice (record, then its parity run) is refused once flashinfer is imported",
        (
            "tests/harness/test_jit_cache.py::test_record_points_the_jit_cache_before_its_timing_checks_import_the_library",
        ),
    ),
    _harness(
        "script-control-raise-is-a-traceback",
        "conformance/explore/repro_flashinfer.py",
        '                    f"        return reproduced({s.n}, [f\'a fresh wrapper raised {{type(e).__name__}}: {{e}} "\n',
        '                    f"        raise  # ({s.n}) [f\'a fresh wrapper raised {{type(e).__name__}}: {{e}} "\n',
        "a plain flashinfer script whose fresh control raises ends in a traceback: 'could not run', where the "
        "machine reported the raise as the defect",
        (
            "tests/explore/test_flashinfer_subjects.py::"
            "test_a_control_that_raises_in_the_script_is_its_verdict_not_a_traceback",
        ),
    ),
    _harness(
        "library-script-control-raise-is-a-traceback",
        "conformance/explore/repro.py",
        '        return problems + [f"a fresh adapter raised {type(e).__name__}: {e} on the same plan"]\n',
        "        raise\n",
        "a library script whose fresh control raises ends in a traceback: 'could not run', where the machine "
        "reported the raise as the defect",
        ("tests/explore/test_scenario_repro.py::test_a_library_scripts_control_that_raises_is_its_verdict",),
    ),
    _harness(
        "prebuild-misses-window-modules",
        "conformance/explore/prebuild.py",
        "                for window in (-1, WINDOW) if profile.window else (-1,):\n",
        "                for window in (-1,):\n",
        "the prebuild names no sliding-window module: the first windowed example builds it inside the run",
        ("tests/explore/test_explore_prebuild.py::test_one_case_per_module_axis_combination",),
    ),
    _harness(
        "prebuild-misses-packbits",
        "conformance/explore/prebuild.py",
        '                    out.append(base.replace(mask="custom"))\n',
        "                    pass\n",
        "the prebuild never names the packbits module: the first masked example builds it inside the run",
        ("tests/explore/test_explore_prebuild.py::test_the_lifecycle_subjects_name_every_window_module_they_can_load",),
    ),
    _harness(
        "prebuild-on-cpu-tries-to-build",
        "conformance/explore/loop.py",
        '    if device_type(device) != "cuda":\n        print(f"prebuild: nothing to build',
        '    if False:\n        print(f"prebuild: nothing to build',
        "explore --prebuild on a CPU goes looking for JIT modules instead of saying there is nothing to build",
        ("tests/explore/test_explore_prebuild.py::test_prebuild_on_a_cpu_says_there_is_nothing_to_build",),
    ),
    _harness(
        "ledger-segment-before-buffer-never-applies",
        "conformance/known_failures.py",
        "        if bits > 0 and start < 0:\n            return True\n",
        "        if False:\n            return True\n",
        "a masked paged batch whose empty request comes before others is launched as if only graph mode were "
        "wrong: the plan kills the CUDA context and every case after it in the process",
        (_LEDGER + "test_the_zero_pages_entries_split_on_the_packed_masks_size",),
    ),
    _harness(
        "ledger-empty-buffer-never-applies",
        "conformance/known_failures.py",
        "    return sum(sizes) == 0 and any(",
        "    return sum(sizes) == -1 and any(",
        "a masked paged batch whose empty requests bring the packed mask to 0 bytes is launched as if only graph "
        "mode were wrong: the plan kills the CUDA context and every case after it in the process",
        (_LEDGER + "test_the_zero_pages_entries_split_on_the_packed_masks_size",),
    ),
    _harness(
        "verify-combined-newest-even-if-unrun",
        "conformance/ledger_verify_files.py",
        "    return next((p for p in found if p[0].status != COULD_NOT_RUN), found[0])\n",
        "    return found[0]\n",
        "several verify runs combined, and the ledger report's versions table, take each entry from the newest run "
        "even where it could not run its script: a later timeout hides an earlier reproduction, and a known defect "
        "reads as a regression",
        (
            _DIFF + "test_several_verify_runs_of_a_side_count_per_entry_the_newest_that_ran",
            _REPORT + "test_a_run_cut_short_says_nothing_against_an_earlier_verdict",
            _REPORT + "test_a_report_carries_what_a_maintainer_needs[entry-selects-its-family]",
        ),
    ),
    _harness(
        "verify-combined-any-libraries",
        "conformance/ledger_verify_files.py",
        "        if not same_libraries(first.environment, r.environment):\n            raise InvalidValue(\n",
        "        if False:\n            raise InvalidValue(\n",
        "verify runs of another library version are combined into a side's ledger: one version's evidence speaks "
        "for another",
        (_DIFF + "test_several_verify_runs_of_a_side_count_per_entry_the_newest_that_ran",),
    ),
    _harness(
        "gate-history-entries-never-asked",
        "conformance/gate.py",
        '        if entry is None and rec.status in FAILING and (rec.fresh == "pass" or lost) and earlier:\n',
        "        if False:\n",
        "a run's failing record is never asked of the ledger's lifecycle entries: the stale ragged mask after a "
        "masked plan reads as an unexplained failure",
        (
            "tests/gate/test_pairs_history.py::test_an_unmasked_ragged_failure_after_a_masked_plan_is_the_stale_mask_entry",
        ),
    ),
    _harness(
        "gate-history-without-fresh-control",
        "conformance/gate.py",
        '        if entry is None and rec.status in FAILING and (rec.fresh == "pass" or lost) and earlier:\n',
        "        if entry is None and rec.status in FAILING and earlier:\n",
        "a failure a fresh adapter shares is blamed on the wrapper's history: a defect of the case alone is "
        "filed under a lifecycle entry",
        ("tests/gate/test_pairs_history.py::test_without_the_history_or_the_fresh_pass_no_lifecycle_entry_is_named",),
    ),
    _harness(
        "gate-history-one-wrapper-per-backend",
        "conformance/gate.py",
        '    return (backend,) + graph_wrapper_key(case, backend.endswith("+graph"), keying)\n',
        "    return (backend,)\n",
        "one history per adapter, not per library wrapper: a masked paged plan counts as the ragged wrapper's",
        ("tests/gate/test_pairs_history.py::test_without_the_history_or_the_fresh_pass_no_lifecycle_entry_is_named",),
    ),
    _harness(
        "pairs-history-survives-a-dead-process",
        "conformance/pairs.py",
        "        if restarted:\n            self.planned.clear()\n",
        "        if restarted:\n            pass\n",
        "the plans of a child process that died still count as the fresh child's wrappers' history",
        ("tests/gate/test_pairs_history.py::test_a_process_that_died_takes_its_wrappers_history_along",),
    ),
    _harness(
        "signature-keeps-fresh-answer",
        "conformance/explore/defects.py",
        '        detail = _FRESH_ANSWER.sub(r"a fresh adapter\'s\\1 other", detail)\n',
        "        pass\n",
        "a history defect's signature keeps what the fresh wrapper answered, which follows the case: one stale "
        "flag counts as a new defect for every case's reason",
        (_DEFECTS + "test_a_signature_is_the_same_for_the_same_defect_and_apart_for_another",),
    ),
    # What keeps the suite within its time on two cores (docs/test-times.md), each still a claim a test checks.
    _harness(
        "explore-never-shrinks",
        "conformance/explore/loop.py",
        "        phases=(Phase.explicit, Phase.reuse, Phase.generate) + ((Phase.shrink,) if budget.shrink else ()),\n",
        "        phases=(Phase.explicit, Phase.reuse, Phase.generate),\n",
        "no exploration shrinks its failures, whatever its budget says: a lifecycle fault is reported as the long "
        "example that first met it",
        (
            _LIFECYCLE + "test_a_caught_fault_is_shrunk_to_a_few_calls",
            _DEFECTS + "test_the_exploration_goes_past_its_first_defect_to_the_next",
        ),
    ),
    _harness(
        "pytest-workers-take-every-core",
        "conformance/plugin.py",
        "        share_cores(int(workers))\n",
        "        pass\n",
        "each pytest-xdist worker starts a torch thread per core: `pytest -n 2` on two cores runs four threads",
        (_WORKERS + "test_an_xdist_worker_takes_its_share_of_the_cores[2-2-1]",),
    ),
    _harness(
        "pytest-worker-threads-not-divided",
        "conformance/plugin.py",
        "    torch.set_num_threads(max(1, cores // max(1, workers)))\n",
        "    torch.set_num_threads(max(1, cores))\n",
        "a worker's share is every core this process may run on, not that divided among the workers",
        (_WORKERS + "test_an_xdist_worker_takes_its_share_of_the_cores[8-2-4]",),
    ),
    # The precision defects injected into torch (kernels/torch_precision_faults.py), issue 17: each disarmed.
    _harness(
        "precision-acc-in-half-disarmed",
        _PF,
        "            acc_in_input_dtype=True,\n            row_sum_in_input_dtype=True,\n",
        "",
        "the catalogue's half-precision accumulators are fp32 after all: the defect the tests hold is no defect",
        (_DEFECT_CAUGHT + "[acc_in_half]",),
    ),
    _harness(
        "precision-no-rescale-disarmed",
        _PF,
        "            rescale_output=False,\n",
        "",
        "the missing rescale of the running output is put back",
        (_DEFECT_CAUGHT + "[no_rescale]",),
    ),
    _harness(
        "precision-row-sum-in-half-disarmed",
        _PF,
        '            row_sum_in_input_dtype=True,\n        ),\n        Fault(\n            "p_coarser",\n',
        '        ),\n        Fault(\n            "p_coarser",\n',
        "the row sum said to be held in 16 bits is held in fp32",
        (_DEFECT_CAUGHT + "[row_sum_in_half]",),
    ),
    _harness(
        "precision-p-coarser-disarmed",
        _PF,
        "            p_coarser=True,\n",
        "",
        "P rounded to the input dtype after all, not one step coarser",
        (_DEFECT_CAUGHT + "[p_coarser]",),
    ),
    _harness(
        "precision-scores-in-half-disarmed",
        _PF,
        "            scores_in_input_dtype=True,\n",
        "",
        "the scores said to be rounded to 16 bits stay fp32",
        (_DEFECT_CAUGHT + "[scores_in_half]",),
    ),
    _harness(
        "precision-lse-in-half-disarmed",
        _PF,
        "            lse_in_input_dtype=True,\n",
        "",
        "FlexAttention's LSE is left as torch computes it",
        (_DEFECT_CAUGHT + "[lse_in_half]",),
    ),
    _harness(
        "precision-loop-row-sum-not-rescaled",
        _PF,
        "        row_sum = _accumulate(row_sum.to(f32) * alpha, ",
        "        row_sum = _accumulate(row_sum.to(f32), ",
        "the faultless loop forgets to rescale its row sum when the max grows: the control the defects are "
        "measured against is itself wrong",
        (_DEFECT_CAUGHT + "[acc_in_half]", _DEFECT_CAUGHT + "[p_coarser]"),
    ),
    _harness(
        "precision-fault-unlabelled",
        "kernels/fault_patch.py",
        "    setattr(home, FAULT_MARKER, name)\n",
        "",
        "a run with a fault injected (torch's precision and batch faults, FlashInfer's lifecycle faults) reports "
        "the library's plain version: its records read as the library's own",
        (
            _PRECISION + "test_a_fault_replaces_its_function_says_so_in_the_versions_and_is_undone",
            _LIFECYCLE + "test_a_fault_lives_on_the_wrapper_it_planned_is_labelled_and_undone",
            _BATCH_FAULTS + "test_a_batch_fault_says_so_in_the_versions_and_is_undone",
        ),
    ),
    _harness(
        "fault-patch-not-undone",
        "kernels/fault_patch.py",
        "        setattr(owner, attr, original)\n",
        "        pass\n",
        "switching an injected fault off leaves the library patched: every later run carries the fault",
        (
            _PRECISION + "test_a_fault_replaces_its_function_says_so_in_the_versions_and_is_undone",
            _LIFECYCLE + "test_a_fault_lives_on_the_wrapper_it_planned_is_labelled_and_undone",
            _BATCH_FAULTS + "test_a_batch_fault_says_so_in_the_versions_and_is_undone",
        ),
    ),
    _harness(
        "precision-catalogue-entry-dropped",
        _PF,
        '        Fault(\n            "scores_in_half",\n',
        '        Fault(\n            "scores_in_half_unlisted",\n',
        "a defect of the catalogue has no catching case in the tests: nothing shows it is still caught",
        (_PRECISION + "test_every_defect_names_the_case_that_caught_it",),
    ),
    _harness(
        "batch-padding-keys-leak-disarmed",
        _BF,
        '    "padding_keys_leak": _padding_keys_leak,\n',
        "",
        "the padding-leak defect leaves the mask as it is: the defect the tests hold is no defect",
        (_BATCH_CAUGHT + "[padding_keys_leak]",),
    ),
    _harness(
        "batch-mask-of-request-0-disarmed",
        _BF,
        '    "mask_of_request_0": _mask_of_request_0,\n',
        "",
        "request 0's mask is not broadcast after all",
        (_BATCH_CAUGHT + "[mask_of_request_0]",),
    ),
    _harness(
        "batch-kv-len-short-disarmed",
        _BF,
        '    "kv_len_short_after_first": _kv_len_short_after_first,\n',
        "",
        "the later requests keep their last key",
        (_BATCH_CAUGHT + "[kv_len_short_after_first]",),
    ),
    _harness(
        "batch-outputs-rolled-disarmed",
        _BF,
        '        return out.roll(1, dims=0) if f.name == "outputs_rolled" else out\n',
        "        return out\n",
        "the padded output is not shifted along the batch",
        (_BATCH_CAUGHT + "[outputs_rolled]",),
    ),
    _harness(
        "batch-jagged-rows-shifted-disarmed",
        _BF,
        '            return _jagged_rows_shifted(out) if f.name == "jagged_rows_shifted" else out\n',
        "            return out\n",
        "the jagged output's rows are read where they are",
        (_BATCH_CAUGHT + "[jagged_rows_shifted]",),
    ),
    _harness(
        "batch-block-mask-of-request-0-disarmed",
        _BF,
        '        if f.name == "block_mask_of_request_0" and block_mask is not None:\n',
        "        if False:\n",
        "flex's block mask is evaluated per request after all",
        (_BATCH_CAUGHT + "[block_mask_of_request_0]",),
    ),
    _harness(
        "batch-lse-of-request-0-disarmed",
        _BF,
        '        if f.name == "lse_of_request_0":\n',
        "        if False:\n",
        "each request keeps its own LSE",
        (_BATCH_CAUGHT + "[lse_of_request_0]",),
    ),
    _harness(
        "batch-catalogue-entry-dropped",
        _BF,
        '        BatchFault(\n            "lse_of_request_0",\n',
        '        BatchFault(\n            "lse_of_request_0_unlisted",\n',
        "a defect of the batch catalogue has no catching case in the tests: nothing shows it is still caught",
        (_BATCH_FAULTS + "test_every_batch_fault_names_the_case_that_caught_it",),
    ),
    _harness(
        "ledger-nested-scores-rule-narrowed",
        "conformance/known_failures.py",
        "NESTED_LONG_KV = 300\n",
        "NESTED_LONG_KV = 3000\n",
        "the ledger's rule for jagged SDPA's bf16 scores no longer covers the quick records that fail",
        (
            "tests/kernels/test_torch_batched.py::test_batched_backend_agrees_with_the_oracle_on_the_quick_matrix[nested-math]",
        ),
    ),
    _harness(
        "quick-slice-ignores-backend-groups",
        "conformance/mutations/targets.py",
        '    groups = getattr(lib, "backend_groups", None)\n',
        "    groups = None\n",
        "the quick slice takes a case every backend runs, torch's per-request and batched alike: whole layouts "
        "(single: batches of one) drop out of it",
        ("tests/mutation/test_quick_rows.py::test_the_quick_slice_takes_a_case_per_layout_for_each_backend_group",),
    ),
    _harness(
        "matrix-long-cases-dropped",
        "scenarios/matrix.py",
        "    long = [c for kv in b.long_lengths(device) for c in long_cases(kv)]\n",
        "    long: list[Case] = []\n",
        "the matrix drops its long cases: no budget goes past kv 1031, where a 16-bit accumulator still passes",
        (
            _MATRIX + "test_standard_reaches_8192_keys_where_accumulation_error_grows",
            _MATRIX + "test_32k_and_128k_keys_only_where_the_device_is_cuda[cuda]",
            _MATRIX + "test_32k_and_128k_keys_only_where_the_device_is_cuda[cuda:1]",
            _PRECISION + "test_a_16_bit_accumulator_fails_the_standard_long_context_and_the_faultless_loop_passes"
            "[acc_in_half]",
            _PRECISION + "test_a_16_bit_accumulator_fails_the_standard_long_context_and_the_faultless_loop_passes"
            "[row_sum_in_half]",
        ),
    ),
    _harness(
        "matrix-cuda-long-cases-on-cpu",
        "scenarios/matrix.py",
        "        return self.long_kv + (self.cuda_long_kv if is_cuda(device) else ())\n",
        "        return self.long_kv + self.cuda_long_kv\n",
        "the 32k and 128k cases join every device's matrix: a CPU run spends minutes on them",
        (
            _MATRIX + "test_standard_reaches_8192_keys_where_accumulation_error_grows",
            _MATRIX + "test_32k_and_128k_keys_only_where_the_device_is_cuda[cuda]",
            _MATRIX + "test_32k_and_128k_keys_only_where_the_device_is_cuda[cuda:1]",
            _MATRIX + "test_a_run_builds_the_matrix_of_its_device",
        ),
    ),
    _harness(
        "run-matrix-device-dropped",
        "conformance/parity_run.py",
        "    return own(budget, seed, device=device) if callable(own) else matrix.build(budget, seed, device)\n",
        "    return own(budget, seed) if callable(own) else matrix.build(budget, seed)\n",
        "a run builds its matrix without its device: a GPU run never reaches 32k or 128k keys",
        (_MATRIX + "test_a_run_builds_the_matrix_of_its_device",),
    ),
    _harness(
        "draws-never-long",
        "scenarios/strategies.py",
        "    if kv and profile.long_kv and draw(rarely(axes.SCENARIO_LONG_ODDS)):\n",
        "    if kv and profile.long_kv and draw(rarely(axes.SCENARIO_LONG_ODDS)) and False:\n",
        "the machines never draw a long context: they stop at 48 keys again",
        (_DRAWS + "test_a_plan_may_carry_an_explicit_scale_and_a_long_context_and_shrinks_without_them",),
    ),
    _harness(
        "draws-scale-ignores-profile",
        "scenarios/strategies.py",
        "        sm_scale=draw(mostly(None, *axes.SCENARIO_SM_SCALES)) if profile.sm_scale else None,\n",
        "        sm_scale=draw(mostly(None, *axes.SCENARIO_SM_SCALES)),\n",
        "a profile that switches explicit scales off still draws them (the stand-in fault hunts slow tenfold)",
        (_DRAWS + "test_a_profile_without_them_never_draws_them",),
    ),
    _harness(
        "explore-flex-subject-on-sdpa-profile",
        "conformance/explore/subjects.py",
        '            backend="flex",\n',
        '            backend="auto",\n',
        "the flex subject explores SDPA auto's profile: no machine ever draws a soft cap",
        (
            _DRAWS + "test_flexattention_is_explored_on_its_own_profile_with_soft_caps",
            "tests/explore/test_scenario_machines.py::test_torch_target_holds_through_the_cli",
        ),
    ),
    _harness(
        "explore-replan-and-run-never-applies",
        "conformance/explore/machines.py",
        "    return m.current is not None and m.current.total_qo > 0 and m.current.total_kv > 0\n",
        "    return False\n",
        "the re-plan-and-run rule never applies: a CI budget checks a re-plan by a run a few times at most",
        ("tests/explore/test_scenario_machines.py::test_torch_target_holds_through_the_cli",),
    ),
    _harness(
        "explore-constants-not-pinned",
        "conformance/explore/loop.py",
        "        stack.enter_context(pinned_constants())\n",
        "        pass\n",
        "Hypothesis draws constants from whatever source is loaded: attncheck explore and python -m "
        "conformance.explore.loop draw different sequences for the same arguments",
        (_DRAWS + "test_a_subject_draws_from_the_pinned_constants_and_gives_them_back",),
    ),
    _harness(
        "nested-causal-top-left-accepted",
        "kernels/torch_nested.py",
        "        if case.causal and unequal:",
        "        if False and unequal:",
        "jagged SDPA's top-left is_causal is served as the bottom-right causal of the case",
        (
            "tests/kernels/test_torch_batched.py::test_nested_declines_causal_where_top_left_and_bottom_right_differ"
            "[nested-math]",
        ),
    ),
    _harness(
        "supports-raise-ends-the-run",
        "conformance/evaluate.py",
        "    except Exception as e:  # a probe that calls the library met its defect: a record, not the run's end\n",
        "    except ArithmeticError as e:  # a probe that calls the library met its defect: a record, not the run's end\n",
        "a supports() probe that meets a library defect raises out of the run: every later case is lost",
        ("tests/harness/test_fresh_control.py::test_a_supports_probe_that_raises_is_an_error_record_not_the_runs_end",),
    ),
    _harness(
        "ledger-batched-auto-not-resolved",
        "conformance/known_failures.py",
        "    elif base in BATCHED_AUTO and resolved in RESOLVED_KERNELS:\n",
        "    elif base in () and resolved in RESOLVED_KERNELS:\n",
        "a padded-auto record is asked about auto, not the kernel it ran: cuDNN's empty rows read as unexplained",
        (
            "tests/harness/test_known_failures.py::test_every_recorded_batched_cuda_failure_is_the_empty_rows_entry_or_declined_now",
        ),
    ),
    _harness(
        "ledger-padded-prefix-kept",
        "conformance/known_failures.py",
        '    kernels = set(backend.removeprefix(PADDED).split("+"))\n',
        '    kernels = set(backend.split("+"))\n',
        "padded-cudnn is not cuDNN to the empty-rows rule: a known defect through a padded batch reads as new",
        (
            "tests/harness/test_known_failures.py::test_every_recorded_batched_cuda_failure_is_the_empty_rows_entry_or_declined_now",
        ),
    ),
    _harness(
        "plot-ratio-by-feature-dropped",
        "reports/html.py",
        '(plots.ratio_by_feature(model["parity"]), plots.ratio_by_kv_len(model["parity"]))',
        '(plots.ratio_by_kv_len(model["parity"]),)',
        "the HTML report loses its err/bound by backend and feature plot",
        (_PLOTS_SVG, _PLOTS_BROWSER),
    ),
    _harness(
        "plot-err-not-over-bound",
        "reports/parity.py",
        '            out[(f"{r.target}/{r.backend}", f)].append(w)\n',
        '            out[(f"{r.target}/{r.backend}", f)].append(float(r.out["max_abs"]) if r.out else w)\n',
        "the err/bound plot draws each record's error, not its error over the bound: a failure sits under the line",
        (_PLOTS_MODEL, _PLOTS_BROWSER),
    ),
    _harness(
        "plot-kv-length-first-request",
        "reports/parity.py",
        '    return int(max(r.case.get("kv_lens") or [0]))\n',
        '    return int((r.case.get("kv_lens") or [0])[0])\n',
        "the error against KV length plot reads a batch's first request's length, not its longest",
        (_PLOTS_MODEL,),
    ),
    _harness(
        "plot-threshold-next-column",
        "reports/plots.py",
        "ax.axvline(q_star, color=THRESHOLD_COLOR",
        "ax.axvline(cols[min(cols.index(q_star) + 1, len(cols) - 1)], color=THRESHOLD_COLOR",
        "the sweep plot marks the threshold at the column after q*",
        (_PLOTS_GEOMETRY, _PLOTS_BROWSER),
    ),
    _harness(
        "plot-interval-collapsed",
        "reports/plots.py",
        "yerr=[lo, hi]",
        "yerr=[[0.0] * len(lo), [0.0] * len(hi)]",
        "the sweep plot draws each ratio without its interval",
        (_PLOTS_GEOMETRY,),
    ),
    _harness(
        "usage-error-prints-the-whole-usage",
        "conformance/usage.py",
        '        sys.stderr.write(f"{self.prog}: error: {message}. Fix: {fix} (`{self.prog} --help` lists the options)\\n")\n',
        "        super().error(message)\n",
        "argparse's own refusals (a number that is not one, an unknown choice or option, a missing argument) "
        "print the whole usage before the error, with no fix",
        (
            _BAD_ROW + "[run-seed-not-an-integer]",
            _BAD_ROW + "[explore-target]",
            _BAD_ROW + "[routes-spec-missing]",
            _BAD_ROW + "[prebuild-unknown-option]",
        ),
    ),
    _harness(
        "out-empty-path-taken",
        "conformance/usage.py",
        "    if not path.strip():\n",
        "    if False:\n",
        "--out '' is taken for the working folder: run and sweep end in makedirs' traceback, mutate and explore "
        "write into the folder they were started in",
        (_BAD_ROW + "[run-out-empty]", _BAD_ROW + "[sweep-out-empty]"),
    ),
    _harness(
        "sweep-out-not-checked",
        "conformance/commands/sweep.py",
        '    usable_out_dir("--out", args.out)  # a file, or a path under one: refused before anything is timed\n',
        "    pass  # a file, or a path under one: refused before anything is timed\n",
        "`attncheck sweep --out FILE` ends in makedirs' traceback once the adapters are made",
        (_BAD_ROW + "[sweep-out-a-file]",),
    ),
    _harness(
        "explore-out-not-checked",
        "conformance/explore/loop.py",
        '        usable_out_dir("--out", a.out)  # a file, or a path under one: refused before anything is written\n',
        "        pass  # a file, or a path under one: refused before anything is written\n",
        "`attncheck explore --out FILE` ends in mkdir's traceback",
        (_BAD_ROW + "[explore-out-a-file]",),
    ),
    _harness(
        "explore-device-not-checked",
        "conformance/explore/loop.py",
        "        checked_device(a.device)\n",
        "",
        "`attncheck explore --device tpu` ends in torch's traceback about device strings",
        (_BAD_ROW + "[explore-device]",),
    ),
    _harness(
        "device-not-checked",
        "conformance/commands/common.py",
        "    return checked_device(given) if given else default_device()\n",
        "    return given or default_device()\n",
        "run, record and sweep take --device tpu: torch's traceback about device strings, not one line",
        (_BAD_ROW + "[sweep-device]", _BAD_ROW + "[run-device]"),
    ),
    _harness(
        "routes-undecodable-results-traceback",
        "conformance/route_records.py",
        "    except (IncompatibleRecord, ValueError, TypeError) as e:  # ValueError: bad JSON, bytes that are not text\n",
        "    except (IncompatibleRecord, json.JSONDecodeError, TypeError) as e:  # ValueError: bad JSON, bytes that are not text\n",
        "`attncheck routes` on a file of random bytes ends in a UnicodeDecodeError traceback",
        (_BAD_ROW + "[routes-garbage]",),
    ),
    _harness(
        "routes-empty-results-misnamed",
        "conformance/route_records.py",
        "    if not records:\n",
        "    if False:\n",
        "an empty results file is refused as one holding no auto record: the fix named is another run with --backend auto",
        (_BAD_ROW + "[routes-empty]",),
    ),
    _harness(
        "prebuild-budget-checked-after-the-device",
        "conformance/commands/prebuild.py",
        "        parse_budget(a.budget)\n",
        "        pass\n",
        "`attncheck prebuild --budget huge` is refused for its device: the bad budget is named only on the GPU runner",
        (_BAD_ROW + "[prebuild-budget]",),
    ),
    _harness(
        "diff-floor-fix-says-2",
        "conformance/commands/diff.py",
        '            raise InvalidValue(flag, v, "a positive number", f"pass e.g. {flag} {DEFAULTS[flag]}")\n',
        '            raise InvalidValue(flag, v, "a positive number", f"pass e.g. {flag} 2")\n',
        "--error-floor 0 is refused with the fix --error-floor 2: eight times its default, a floor no regression reaches",
        (_BAD_ROW + "[diff-error-floor-zero]",),
    ),
    _harness(
        "heartbeat-negative-taken",
        "conformance/usage.py",
        "    if not value >= 0:\n",
        "    if False:\n",
        "--heartbeat -1 is taken (as no heartbeat): a typo runs a whole matrix silently",
        (_BAD_ROW + "[run-heartbeat-negative]",),
    ),
    _harness(
        "heartbeat-silent",
        "conformance/progress.py",
        '                self._say(f"  still on {self._label}, {duration(time.monotonic() - self._since)}")\n',
        "                pass\n",
        "the heartbeat says nothing: a single large case prints nothing for minutes",
        (
            _PROGRESS + "test_the_heartbeat_beats_while_its_item_runs_and_stops_when_it_ends",
            _LONG_ITEM + "[run]",
            _LONG_ITEM + "[explore]",
        ),
    ),
    _harness(
        "progress-time-left-dropped",
        "conformance/progress.py",
        '    return f"{duration(elapsed_s)} elapsed, about {duration(elapsed_s / done * (total - done))} left"\n',
        '    return f"{duration(elapsed_s)} elapsed"\n',
        "progress lines give the time spent and no time left",
        (_PROGRESS + "test_the_time_left_is_the_time_per_item_so_far_times_the_items_left", _LONG_ITEM + "[run]"),
    ),
    _harness(
        "run-heartbeat-never-begun",
        "conformance/commands/run.py",
        '            on_pair=lambda case, backend: beat.begin(f"case {case.id} on {backend}"),\n',
        "",
        "`attncheck run` never starts the heartbeat: a long case is silent",
        (_LONG_ITEM + "[run]",),
    ),
    _harness(
        "sweep-heartbeat-never-begun",
        "conformance/sweep.py",
        "                    on_config(rec.config_id)\n",
        "",
        "`attncheck sweep` never starts the heartbeat: a long configuration is silent",
        (_LONG_ITEM + "[sweep]",),
    ),
    _harness(
        "explore-subject-start-unsaid",
        "conformance/explore/loop.py",
        "            on_start(s, len(chosen))\n",
        "",
        "`attncheck explore` never says a subject started: no heartbeat while it runs",
        (_LONG_ITEM + "[explore]",),
    ),
    _harness(
        "repro-checkout-not-searched-upward",
        "conformance/explore/repro.py",
        '    ROOT = next((p for p in (HERE, *HERE.parents) if (p / "scenarios" / "case.py").is_file()), None)\n',
        '    ROOT = HERE if (HERE / "scenarios" / "case.py").is_file() else None\n',
        "a library script, attncheck not installed, finds the checkout only in its own folder: one written "
        "under attncheck-out/ inside the checkout does not run",
        (
            "tests/explore/test_scenario_repro.py::"
            "test_a_library_script_holds_no_path_of_the_checkout_and_runs_from_anywhere",
        ),
    ),
    _harness(
        "case-file-name-cut",
        "scenarios/case.py",
        '    shown = text if text.startswith("@") else text[:80]  # a file is named whole: its name ends the path\n',
        "    shown = text[:80]  # a file is named whole: its name ends the path\n",
        "a --case @file that is not JSON is named by its path's first 80 characters: a long path loses the file name",
        (_BAD + "test_every_bad_input_exits_2_in_one_line_and_writes_nothing[run-case-file-long-name]",),
    ),
    _harness(
        "precision-lse-rounding-compiled",
        "kernels/torch_precision_faults.py",
        "@torch.compiler.disable\ndef _round_in_place(",
        "def _round_in_place(",
        "the LSE fault's rounding is traced into the compiled flex_attention on CUDA, where inductor drops it: "
        "the fault injected is no fault",
        ("tests/kernels/test_torch_precision_faults.py::test_the_lse_fault_rounds_outside_a_compiled_graph",),
    ),
    _harness(
        "isolate-fault-not-passed-on",
        "scripts/fault_command.py",
        '    os.environ[INJECTED_ENV] = f"{injected.__module__}:{argv[0]}"\n',
        "",
        "a fault script run with --isolate names no fault to its children: they evaluate the library without it",
        ("tests/kernels/test_torch_precision_faults.py::test_an_isolated_run_injects_the_fault_in_its_children_too",),
    ),
    _harness(
        "run-case-timeout-dropped",
        "conformance/parity_run.py",
        "IsolatedEvaluator(target_name, device, seed, adapter_options, case_timeout_s)",
        "IsolatedEvaluator(target_name, device, seed, adapter_options)",
        "`attncheck run --isolate --case-timeout` waits on a hung case for ever: one hung kernel holds the whole run",
        ("tests/gate/test_isolated_run.py::test_a_case_that_aborts_or_hangs_is_named_and_the_run_finishes",),
    ),
    _harness(
        "run-case-timeout-unchecked",
        "conformance/commands/run.py",
        "    if args.case_timeout is not None and not (args.isolate and args.case_timeout > 0):\n",
        "    if False:\n",
        "`--case-timeout` without --isolate is silently ignored, and 0 records every case as a crash",
        (
            "tests/harness/test_bad_input.py::test_every_bad_input_exits_2_in_one_line_and_writes_nothing"
            "[run-case-timeout-without-isolate]",
        ),
    ),
    _harness(
        "isolate-child-start-unbounded",
        "conformance/isolate.py",
        "        if self._read_line(proc, limit) is None:",
        "        if proc.stdout.readline() is None:",
        "`--case-timeout` does not bound a child's start: one that hangs before it is ready holds the run for ever",
        ("tests/gate/test_isolated_run.py::test_a_child_that_never_becomes_ready_is_stopped_at_the_case_timeout",),
    ),
    _harness(
        "isolate-child-not-ready",
        "conformance/isolate.py",
        '    answers.write(json.dumps(READY) + "\\n")\n',
        "",
        "an --isolate child never says it is ready: its parent reads the first record as the READY line",
        ("tests/gate/test_isolated_run.py::test_the_child_clears_the_pending_error_its_fresh_control_leaves",),
    ),
    _harness(
        "isolate-child-ignores-fault",
        "conformance/isolate.py",
        "    with injected_from_environment():\n        _serve(",
        "    with contextlib.nullcontext():\n        _serve(",
        "an --isolate child ignores the fault its parent runs under: records say +fault:NAME of a library without it",
        ("tests/kernels/test_torch_precision_faults.py::test_an_isolated_run_injects_the_fault_in_its_children_too",),
    ),
    _harness(
        "ledger-faulted-version-unknown",
        "conformance/known_failures.py",
        "        and (version is None or version.split(FAULT_SUFFIX)[0] in e.versions)\n",
        "        and (version is None or version in e.versions)\n",
        "a library with one of attncheck's faults injected loses its ledger: its known defects read as the fault's "
        "catches",
        ("tests/harness/test_known_failures.py::test_a_library_with_a_fault_injected_keeps_its_known_defects",),
    ),
    _harness(
        "ledger-flex-no-choices-main-template-too",
        "conformance/known_failures.py",
        "    return 0 < rows < FLEX_DECODING_ROWS and rows * group > FLEX_DECODING_ROWS  # group > 1 follows\n",
        "    return rows * group > FLEX_DECODING_ROWS\n",
        "the compiled-flex entry claims GQA calls of 128 rows or more, which the main template runs: records that "
        "ran would read as unexpected passes",
        (
            "tests/harness/test_known_failures.py::"
            "test_the_compiled_flex_entry_claims_the_h200_errors_and_no_record_that_ran",
        ),
    ),
    _harness(
        "ledger-flex-no-choices-at-the-tile",
        "conformance/known_failures.py",
        "    return 0 < rows < FLEX_DECODING_ROWS and rows * group > FLEX_DECODING_ROWS  # group > 1 follows\n",
        "    return 0 < rows < FLEX_DECODING_ROWS and rows * group >= FLEX_DECODING_ROWS\n",
        "the compiled-flex entry claims rows x group of exactly 128, whose tile fits: the probe's calls that ran",
        (_KNOWN + "test_the_flex_decoding_rule_is_the_probes_sweep_on_the_h200",),
    ),
    _harness(
        "ledger-nested-cudnn-hang-one-request",
        "conformance/known_failures.py",
        '        and len(c["qo_lens"]) > 1\n        and max(c["qo_lens"]) == 1\n',
        '        and len(c["qo_lens"]) > 0\n        and max(c["qo_lens"]) == 1\n',
        "the nested cuDNN hang entry keeps one request of one row from running, which returns on the H200",
        (_KNOWN + "test_the_nested_cudnn_hang_entry_is_its_scripts_h200_table",),
    ),
    _harness(
        "ledger-flex-fp32-d192-any-rows",
        "conformance/known_failures.py",
        '    return (sum(c["qo_lens"]) if backend == "flex" else max(c["qo_lens"], default=0)) >= FLEX_DECODING_ROWS\n',
        "    return True\n",
        "the fp32 d192 entry claims calls of fewer than 128 rows, which the decoding template compiles",
        (_KNOWN + "test_every_failure_of_the_torch_standard_run_on_the_h200_is_an_entry_or_listed",),
    ),
    _harness(
        "ledger-nested-empty-query-auto-alone",
        "conformance/known_failures.py",
        '        backend in (NESTED + "auto", NESTED + "cudnn")\n',
        '        backend in (NESTED + "auto",)\n',
        "the nested empty-query entry for nested-auto alone: forced cuDNN's same TypeError unexplained",
        (_KNOWN + "test_every_failure_of_the_torch_standard_run_on_the_h200_is_an_entry_or_listed",),
    ),
    _harness(
        "ledger-nested-cudnn-keyless-first-request",
        "conformance/known_failures.py",
        "    return len(qo) > 1 and max(qo) > 1 and any(q > 0 and k == 0 for q, k in zip(qo, kv))\n",
        "    return len(qo) > 1 and max(qo) > 1 and qo[0] > 0 and kv[0] == 0\n",
        "jagged cuDNN's keyless-request entry looks at the first request: the recorded last one unexplained",
        (
            _KNOWN + "test_every_failure_of_the_torch_standard_run_on_the_h200_is_an_entry_or_listed",
            _KNOWN + "test_the_nested_cudnn_keyless_entry_is_its_probes_h200_table",
        ),
    ),
    _harness(
        "ledger-nested-cudnn-keyless-last-request-only",
        "conformance/known_failures.py",
        "    return len(qo) > 1 and max(qo) > 1 and any(q > 0 and k == 0 for q, k in zip(qo, kv))\n",
        "    return len(qo) > 1 and max(qo) > 1 and qo[-1] > 0 and kv[-1] == 0\n",
        "jagged cuDNN's keyless-request entry claims the last request only, as first seen: the probe's first and "
        "middle ones, unwritten alike, unexplained",
        (_KNOWN + "test_the_nested_cudnn_keyless_entry_is_its_probes_h200_table",),
    ),
    _harness(
        "ledger-nested-cudnn-keyless-repeatable",
        "conformance/known_failures.py",
        '        unrepeatable="the rows are never written: they hold what the output\'s memory held",\n',
        "",
        "jagged cuDNN's unwritten rows read as a function of the case: a pass on memory that happened to read 0 is "
        "an unexpected pass, and a pristine control's 0 rows read as history",
        (_KNOWN + "test_only_entries_whose_output_is_not_the_cases_alone_spare_the_controls",),
    ),
    _harness(
        "fi-cpu-workspace-shared-across-fork",
        "kernels/flashinfer/adapter.py",
        "flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS",
        "flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS",
        "the CPU workspace mapped shared: a forked run's writes reach the parent's wrapper",
        (
            "tests/kernels/test_flashinfer_adapter.py::test_a_cpu_workspace_is_zeroed_and_its_writes_stay_in_its_process",
        ),
    ),
    _harness(
        "suite-cpu-children-dropped",
        "scripts/suite_cpu.py",
        "            b.children_user - a.children_user,\n",
        "            0.0,\n",
        "the suite's CPU table loses what the tests' child processes spent (a third of the suite's CPU)",
        ("tests/harness/test_suite_cpu.py::test_each_test_gets_its_wall_its_own_cpu_and_its_childrens",),
    ),
    _harness(
        "honest-distribution-pairs-twice",
        "scripts/honest_distribution.py",
        "            last[(r.backend, r.case_id)] = replace(r, known=known)\n",
        "            last[(r.backend, r.case_id, len(last))] = replace(r, known=known)\n",
        "a pair recorded in two calls is counted twice in the recorded runs' distribution",
        (
            "tests/reports/test_honest_distribution.py::"
            "test_each_pair_counts_once_and_the_ledgers_failures_stay_out_of_the_honest_groups",
        ),
    ),
    _harness(
        "honest-distribution-keeps-known-failures",
        "scripts/precision_baseline.py",
        '        if not p["known"]:\n            groups.setdefault(',
        "        if True:\n            groups.setdefault(",
        "the recorded runs' honest groups take in the failures the ledger explains (library defects)",
        (
            "tests/reports/test_honest_distribution.py::"
            "test_each_pair_counts_once_and_the_ledgers_failures_stay_out_of_the_honest_groups",
        ),
    ),
    _harness(
        "ledger-cudnn-all-kv-empty-paged-only",
        "conformance/known_failures.py",
        '            and c["layout"] in ("paged", "decode")\n',
        '            and c["layout"] == "paged"\n',
        "the cuDNN no-keys entry for paged prefill alone: the decode wrapper's same raise unexplained",
        (_KNOWN + "test_the_cudnn_all_kv_empty_entry_claims_the_decode_raise_of_0_7_4s_standard_run",),
    ),
    _harness(
        "ledger-flex-no-choices-flex-alone",
        "conformance/known_failures.py",
        '    if backend not in ("flex", "flex-padded"):\n        return False\n    group = ',
        '    if backend != "flex":\n        return False\n    group = ',
        "the compiled-flex entry for the flex backend alone: the batched flex-padded backend's same errors unexplained",
        (_KNOWN + "test_the_flex_entry_claims_the_standard_runs_three_flex_errors_and_no_record_that_ran",),
    ),
    _harness(
        "ledger-flex-no-choices-padded-rows-summed",
        "conformance/known_failures.py",
        '    rows = sum(c["qo_lens"]) if backend == "flex" else max(c["qo_lens"], default=0)\n',
        '    rows = sum(c["qo_lens"])\n',
        "flex-padded's query length read as the batch's rows together: it pads each request to the longest instead",
        (_KNOWN + "test_the_flex_entry_claims_the_standard_runs_three_flex_errors_and_no_record_that_ran",),
    ),
    _harness(
        "source-fault-edit-count-unchecked",
        "kernels/flashinfer/source_faults.py",
        "        if n != 1:\n",
        "        if n == 0:\n",
        "a FlashInfer source fault whose text occurs twice in the header edits both places (or the wrong one) "
        "instead of saying it does not apply",
        (_SOURCE + "test_an_edit_whose_text_is_not_there_once_does_not_apply_and_says_how_often[2]",),
    ),
    _harness(
        "source-fault-header-left-linked",
        "kernels/flashinfer/source_faults.py",
        "        (pkg / INCLUDE / h).write_text(text)\n",
        "        pass\n",
        "the fault's copy keeps the installed header instead of writing the edited one: it builds an honest kernel "
        "under the fault's name",
        (_SOURCE + "test_a_copy_links_what_it_does_not_edit_and_writes_the_edited_header",),
    ),
    _harness(
        "source-fault-python-linked",
        "kernels/flashinfer/source_faults.py",
        '            if fn.endswith(".py") or rel.parts[:2] == INCLUDE.parts:\n',
        "            if rel.parts[:2] == INCLUDE.parts:\n",
        "the copy links the package's Python files too: flashinfer.jit.env resolves its path to the installed "
        "package and builds from its unedited headers",
        (
            _SOURCE + "test_a_copy_links_what_it_does_not_edit_and_writes_the_edited_header",
            _SOURCE + "test_the_installed_copy_is_what_imports_with_its_own_jit_cache_and_label",
        ),
    ),
    _harness(
        "source-fault-headers-linked",
        "kernels/flashinfer/source_faults.py",
        '            if fn.endswith(".py") or rel.parts[:2] == INCLUDE.parts:\n',
        '            if fn.endswith(".py"):\n',
        "the copy links the headers it does not edit: gcc reads a linked header under its real path, so its relative "
        "includes reach the installed headers and an edit included that way (fa3's) is never built",
        (_SOURCE + "test_a_copy_links_what_it_does_not_edit_and_writes_the_edited_header",),
    ),
    _harness(
        "source-fault-copy-reused-across-faults",
        "kernels/flashinfer/source_faults.py",
        '    stamp = f"{f.name} {src}"\n',
        '    stamp = f"{src}"\n',
        "a copy made for one fault is reused for another: the second fault's runs build the first one's kernels",
        (_SOURCE + "test_a_copy_is_reused_for_its_own_fault_and_source_only",),
    ),
    _harness(
        "source-fault-half-written-copy",
        "kernels/flashinfer/source_faults.py",
        "    texts = {h: edited((src / INCLUDE / h).read_text(), f.edits, h) for h in headers}  # fails before writing\n",
        '    texts = {}\n    (root_p / "flashinfer").mkdir(parents=True, exist_ok=True)\n'
        "    texts = {h: edited((src / INCLUDE / h).read_text(), f.edits, h) for h in headers}\n",
        "a fault that does not apply to the installed version leaves a half-made copy behind",
        (_SOURCE + "test_a_fault_that_does_not_apply_writes_nothing",),
    ),
    _harness(
        "source-fault-shared-jit-cache",
        "kernels/flashinfer/source_faults.py",
        '    os.environ["FLASHINFER_WORKSPACE_BASE"] = str(root_p / "jit")\n',
        "",
        "a fault's copy builds into the JIT cache the honest runs use: an honest run can load a faulty kernel",
        (_SOURCE + "test_the_installed_copy_is_what_imports_with_its_own_jit_cache_and_label",),
    ),
    _harness(
        "source-fault-unlabelled",
        "kernels/flashinfer/source_faults.py",
        "    setattr(flashinfer, FAULT_MARKER, name)\n",
        "",
        "records of a run with a source fault carry the plain FlashInfer version: they pass for honest ones",
        (_SOURCE + "test_the_installed_copy_is_what_imports_with_its_own_jit_cache_and_label",),
    ),
    _harness(
        "source-fault-no-rescale-noop",
        "kernels/flashinfer/source_faults.py",
        "            (Edit(FA2, _FA2_RESCALE_LINES + _FA2_RESCALE_TAIL, _FA2_RESCALE_TAIL),),\n",
        "            (Edit(FA2, _FA2_RESCALE_LINES + _FA2_RESCALE_TAIL, _FA2_RESCALE_LINES + _FA2_RESCALE_TAIL),),\n",
        "the fa2_no_rescale fault edits the header into itself: the kernel it builds is honest",
        (
            _SOURCE + "test_each_edit_lands_once_in_both_versions_and_changes_the_kernel[fa2_no_rescale-0.7.4]",
            _SOURCE + "test_each_fault_makes_its_own_mistake[0.7.4]",
        ),
    ),
    # The control from untouched library state (conformance/explore/pristine.py, docs/scenario-machines.md).
    _harness(
        "pristine-control-not-asked",
        "conformance/explore/machines.py",
        "        if v and not history:\n",
        "        if False:\n",
        "a failure kept in library state outside the wrappers is judged the case's: the in-process control shares "
        "the state, and nothing else is asked",
        (
            _PRISTINE + "test_a_defect_kept_in_library_state_is_the_historys_not_the_cases",
            _PRISTINE + "test_the_pristine_control_is_asked_after_a_failure_unless_its_entrys_output_is_not_the_cases",
        ),
    ),
    _harness(
        "pristine-control-asked-on-known-cases",
        "conformance/explore/machines.py",
        "        if entry is not None and not repeats(entry[0]):\n            return []\n",
        "",
        "a case whose entry's output is not the case's alone (a race, unwritten rows) is asked of the pristine "
        "control, whose other answer is then called history",
        (_PRISTINE + "test_the_pristine_control_is_asked_after_a_failure_unless_its_entrys_output_is_not_the_cases",),
    ),
    _harness(
        "pristine-control-in-the-server",
        "conformance/explore/pristine.py",
        "        r, w = os.pipe()\n        pid = os.fork()\n",
        "        r, w = os.pipe()\n        pid = 0\n",
        "the server computes its first control itself, so it is gone after one answer (and a second would start "
        "from the state the first left)",
        (_PRISTINE + "test_the_control_answers_from_the_state_the_server_was_forked_in",),
    ),
    _harness(
        "pristine-death-read-as-raise",
        "conformance/explore/pristine.py",
        "            return Answer(error=f\"the pristine control could not run: {reply['failed']}\")\n",
        "            return Answer(error=f\"the pristine control could not run: {reply['failed']}\", raised=True)\n",
        "a control whose process died is taken for the library raising: a history violation with no evidence",
        (_PRISTINE + "test_a_raise_is_an_observation_and_a_death_is_no_answer",),
    ),
    _harness(
        "pristine-forked-after-cuda",
        "conformance/explore/pristine.py",
        '        if device.startswith("cuda") and torch.cuda.is_initialized():\n',
        "        if False:\n",
        "the server is forked from a process with a CUDA context: every control's child fails to create its own",
        (_PRISTINE + "test_no_server_where_cuda_was_initialised_first",),
    ),
    _harness(
        "signature-keeps-pristine-answer",
        "conformance/explore/defects.py",
        '(r"""a fresh adapter\'s( in a pristine process)? (None|',
        '(r"""a fresh adapter\'s()? (None|',
        "a history defect seen by the pristine control keeps the control's answer in its signature: one defect per case",
        (_DEFECTS + "test_a_signature_is_the_same_for_the_same_defect_and_apart_for_another",),
    ),
    _harness(
        "verify-ignores-injected-fault",
        "conformance/explore/repro.py",
        "    if os.environ.get(INJECTED_ENV):\n",
        "    if False:\n",
        "a script written under one of attncheck's faults is verified in a process without it: it never reproduces",
        (_PRISTINE + "test_a_script_is_verified_under_the_fault_the_exploration_ran_under",),
    ),
    _harness(
        "state-mask-kept-disarmed",
        "kernels/torch_state_faults.py",
        '            elif not kw.get("is_causal") and shape in kept:\n',
        "            elif False:\n",
        "the kept-mask fault keeps nothing: the tests of the pristine control would pass with no defect to see",
        (
            _PRISTINE + "test_a_defect_kept_in_library_state_is_the_historys_not_the_cases",
            _PRISTINE + "test_a_script_is_verified_under_the_fault_the_exploration_ran_under",
        ),
    ),
    # The batched torch backends' rows, checked from records (attncheck routes).
    _harness(
        "route-records-batched-unchecked",
        "conformance/route_records.py",
        "    return library in EXPLICIT_ROWS or requested == AUTO or requested in WHOLE_BATCH.get(library, ())\n",
        "    return library in EXPLICIT_ROWS or requested == AUTO\n",
        "attncheck routes checks torch's auto records only: the padded, jagged and flex batches' rows are never met",
        (
            "tests/routing/test_torch_batched_spec.py::test_the_recorded_h200_batched_calls_pass_their_rows_through_attncheck_routes",
        ),
    ),
    _harness(
        "per-request-batched-split",
        "routing/per_request.py",
        "    if query.requested in WHOLE_BATCH.get(spec.library, ()):\n",
        "    if False:\n",
        "a padded or jagged batch, one SDPA call, is expected to route as its requests would one by one",
        (
            "tests/routing/test_torch_batched_spec.py::test_the_recorded_h200_batched_calls_pass_their_rows_through_attncheck_routes",
        ),
    ),
    # The torch subjects' ledger (conformance/explore/subjects.py) and the kernel a failed run reported.
    _harness(
        "ledger-resolved-kernel-not-asked",
        "conformance/explore/machines.py",
        "        if entry is None and resolved and resolved != backend:\n",
        "        if False:\n",
        "a failed auto run is asked about auto only: a defect of the kernel it ran, in the ledger, is a new finding",
        (
            "tests/explore/test_torch_subject_ledger.py::test_a_failed_auto_run_is_explained_by_the_entry_of_the_kernel_it_ran",
        ),
    ),
    _harness(
        "torch-subjects-without-ledger",
        "conformance/explore/subjects.py",
        '        e = entry_for("torch", case.to_json(), backend, version, arch)\n',
        "        e = None\n",
        "the torch subjects know no ledger entry: torch's own known defects come back as findings on every run",
        ("tests/explore/test_torch_subject_ledger.py::test_a_torch_subject_knows_the_ledger_at_the_installed_torch",),
    ),
    _harness(
        "pristine-errors-not-kept",
        "conformance/explore/pristine.py",
        "        elif len(self.errors) < ERRORS_KEPT:\n            self.errors.append(answer.error[:500])\n",
        "        elif False:\n            pass\n",
        "the summary says nothing of controls that could not run: a CUDA run without a working control reads as checked",
        (_PRISTINE + "test_a_raise_is_an_observation_and_a_death_is_no_answer",),
    ),
    # Progress lines with the time spent and left (issue 20, item 7).
    _harness(
        "mutate-progress-without-pace",
        "conformance/mutations/engine.py",
        '                            + f"  [{done}/{len(todo)}, {pace(done, len(todo), time.monotonic() - t1)}]"\n',
        '                            + ""\n',
        "attncheck mutate's line per mutant says neither how far it is nor how long is left (a 25-minute run)",
        (_MUTATION + "test_the_cli_runs_mutate_and_exits_1_on_a_survivor",),
    ),
    _harness(
        "ledger-verify-progress-without-pace",
        "conformance/commands/ledger.py",
        '            f"{pace(done[0], len(entries), time.monotonic() - started)}",\n',
        '            "",\n',
        "attncheck ledger verify's line per entry says nothing of the time spent and left (minutes per entry)",
        (_LEDGER_VERIFY + "test_the_exit_status_is_1_only_where_the_ledger_is_contradicted_or_a_script_broke",),
    ),
    _harness(
        "run-prepare-without-heartbeat",
        "conformance/commands/run.py",
        "            on_wait=beat.begin,\n",
        "            on_wait=lambda what: None,\n",
        "attncheck run sits silent while its first stage's JIT modules build (minutes on a cold cache)",
        ("tests/harness/test_progress.py::test_a_stage_whose_preparation_runs_long_gets_the_heartbeat",),
    ),
    _harness(
        "whole-batch-misses-nested-auto",
        "routing/specs/torch_sdpa.py",
        "BATCHED_REQUESTS: frozenset[str] = frozenset(FORCED_BATCHED + (PADDED_AUTO, NESTED_AUTO))\n",
        "BATCHED_REQUESTS: frozenset[str] = frozenset(FORCED_BATCHED + (PADDED_AUTO,))\n",
        "a jagged batch left out of the whole-batch backends: nested-auto is expected to route request by request",
        ("tests/routing/test_torch_batched_spec.py::test_the_whole_batch_backends_are_the_batched_backends",),
    ),
    _harness(
        "sweep-page-not-written",
        "conformance/commands/sweep.py",
        "        f.write(page)\n",
        "        f.write(md)\n",
        "attncheck sweep's report.html holds its markdown, not the page with the ratio plot",
        ("tests/gate/test_sweep.py::test_sweep_on_the_cpu_writes_tables_and_a_recommendation",),
    ),
    _harness(
        "fault-lookup-names-no-choices",
        "kernels/fault_patch.py",
        "        raise ValueError(f\"{kind} fault {name!r}: expected one of {', '.join(catalogue)}\")\n",
        '        raise ValueError(f"{kind} fault {name!r}")\n',
        "an unknown fault name (a typo in --fault or ATTNCHECK_INJECTED) is refused without the names to choose from",
        (
            _PRECISION + "test_a_fault_replaces_its_function_says_so_in_the_versions_and_is_undone",
            _BATCH_FAULTS + "test_a_batch_fault_says_so_in_the_versions_and_is_undone",
            _LIFECYCLE + "test_the_catalogue_covers_every_api_in_both_modes_and_refuses_an_unknown_name",
        ),
    ),
    _harness(
        "capability-asked-with-a-context-here",
        "kernels/_env.py",
        '    if torch.cuda.is_initialized() or not hasattr(os, "fork"):\n',
        "    if True:\n",
        "the architecture is asked of torch in the exploring process: CUDA is initialised before the pristine "
        "control's server forks, and on a GPU that control is never available",
        ("tests/kernels/test_kernels_env.py::test_the_architecture_is_asked_without_making_a_cuda_context_here",),
    ),
    _harness(
        "cuda-counted-by-the-runtime",
        "kernels/_env.py",
        "    if not torch.cuda.is_initialized():\n        return torch.cuda.device_count() > 0\n",
        "",
        "the device is counted by cudaGetDeviceCount before any context: the driver is initialised and the "
        "pristine control's forked children cannot use the GPU",
        ("tests/kernels/test_kernels_env.py::test_the_architecture_is_asked_without_making_a_cuda_context_here",),
    ),
    _harness(
        "fa2-keyless-tile-any-kv",
        "conformance/known_failures.py",
        '        and any(q > k >= FA2_KEYLESS_TILE_KV for q, k in zip(c["qo_lens"], c["kv_lens"]))\n',
        '        and any(q > k for q, k in zip(c["qo_lens"], c["kv_lens"]))\n',
        "the fa2 keyless-tile entry claims requests of any length with more rows than keys: a kv of 33, which fa2 "
        "gets right, would be an unexpected pass",
        (
            "tests/harness/test_known_failures.py::"
            "test_the_fa2_keyless_tile_entry_claims_causal_requests_with_more_rows_than_keys_of_a_kv_tile_or_more",
        ),
    ),
    _harness(
        "capability-of-device-0-not-current",
        "kernels/_env.py",
        "        index = torch.cuda.current_device() if torch.cuda.is_initialized() else 0\n",
        "        index = 0\n",
        "device_capability('cuda') reads device 0, not the current device torch.cuda.get_device_capability reads",
        ("tests/kernels/test_kernels_env.py::test_the_architecture_is_asked_without_making_a_cuda_context_here",),
    ),
    _harness(
        "pristine-spared-by-any-entry",
        "conformance/explore/machines.py",
        "        if entry is not None and not repeats(entry[0]):\n",
        "        if entry is not None:\n",
        "the pristine control is not asked where any ledger entry explains the case: on CUDA a kept mask was logged "
        "as torch's empty-rows defect and the fault went unseen",
        (_PRISTINE + "test_the_pristine_control_is_asked_after_a_failure_unless_its_entrys_output_is_not_the_cases",),
    ),
    _harness(
        "case-entry-excuses-history",
        "conformance/explore/machines.py",
        "                entry = None if history and repeats(case_entry[0]) else case_entry[0]\n",
        "                entry = case_entry[0]\n",
        "a case-level entry excuses a control's other answer too: history the entry does not explain is logged known",
        (_PRISTINE + "test_the_pristine_control_is_asked_after_a_failure_unless_its_entrys_output_is_not_the_cases",),
    ),
    _harness(
        "unwritten-cudnn-rows-repeatable",
        "conformance/known_failures.py",
        '        unrepeatable="the rows are never written: they hold what the output buffer held",\n',
        "",
        "cuDNN's unwritten rows are taken for the case's output: a control from other memory would be called history",
        (
            "tests/harness/test_known_failures.py::"
            "test_only_entries_whose_output_is_not_the_cases_alone_spare_the_controls",
        ),
    ),
    _harness(
        "every-entry-repeats",
        "conformance/known_failures.py",
        "    return not entry.unrepeatable\n",
        "    return True\n",
        "every entry is taken for one whose output is the case's: a race's other answer would be called history",
        (
            _PRISTINE + "test_the_pristine_control_is_asked_after_a_failure_unless_its_entrys_output_is_not_the_cases",
            "tests/harness/test_known_failures.py::"
            "test_only_entries_whose_output_is_not_the_cases_alone_spare_the_controls",
        ),
    ),
    _harness(
        "shifted-mask-after-any-zero-kv",
        "conformance/known_failures.py",
        "        seen_empty = seen_empty or (q > 0 and k == 0)\n",
        "        seen_empty = seen_empty or k == 0\n",
        "the shifted zero-page entry claims masked requests after one with no queries and no keys (0 mask bits), "
        "which read their own bits: an unexpected pass",
        (
            "tests/harness/test_known_failures.py::"
            "test_the_shifted_zero_pages_entry_claims_masked_requests_after_an_empty_one_eager_too",
        ),
    ),
    _harness(
        "single-merge-any-heads",
        "conformance/known_failures.py",
        '    if bdx * c["num_qo_heads"] <= CUDA_MAX_THREADS_PER_BLOCK or kv <= FA2_SINGLE_MIN_CHUNK_KV:\n',
        "    if kv <= FA2_SINGLE_MIN_CHUNK_KV:\n",
        "the single-prefill merge entry claims every head count: 32/8 heads at head dim 256, which ran on the "
        "H200, would be an unexpected pass",
        (_KNOWN + "test_the_single_prefill_merge_entry_claims_the_shapes_the_h200_raised_on",),
    ),
    _harness(
        "single-merge-any-row-count",
        "conformance/known_failures.py",
        "    return fewest >= 2 and most < qo\n",
        "    return fewest >= 2\n",
        "the single-prefill merge entry forgets the merge's other branch (as many chunks as rows or more: 128 "
        "threads): qo 2 over 3 chunks, which ran on the H200, would be an unexpected pass",
        (_KNOWN + "test_the_single_prefill_merge_entry_claims_the_shapes_the_h200_raised_on",),
    ),
    _harness(
        "single-merge-any-occupancy",
        "conformance/known_failures.py",
        '    max_chunks = FA2_SINGLE_SMS // (c["num_kv_heads"] * tiles) if tiles else 0\n',
        "    max_chunks = kv if tiles else 0\n",
        "the split read as made whatever the occupancy: qo 4096 over kv 8192 at 64/8 heads, which fills the GPU "
        "unsplit and ran on the H200, would be an unexpected pass",
        (_KNOWN + "test_the_single_prefill_merge_entry_claims_the_shapes_the_h200_raised_on",),
    ),
    _harness(
        "nested-cuda-flash-any-head-dims",
        "routing/specs/torch_sdpa.py",
        "        _nested_cuda(lambda q, c: _nested_fused(q) and _flash_takes(q, masked=False) and q.head_dim_qk % 8 == 0),\n",
        "        _nested_cuda(lambda q, c: _nested_fused(q)),\n",
        "jagged SDPA on CUDA read as flash whatever the head dims and dtype: the H200's efficient calls (head dims "
        "192/128, fp32) would be unexplained",
        (
            "tests/routing/test_torch_batched_spec.py::test_cuda_nested_auto_reads_jagged_sdpas_own_order",
            "tests/routing/test_torch_batched_spec.py::test_the_recorded_h200_jagged_calls_pass_the_nested_cuda_rows",
        ),
    ),
    _harness(
        "nested-cuda-fused-with-zero-lengths",
        "routing/specs/torch_sdpa.py",
        "    return min(q.qo_lens) > 0 and min(q.kv_lens) > 0 and not _gqa(q)\n",
        "    return not _gqa(q)\n",
        "the jagged seq-len-0 check dropped: a batch holding a request of length 0 read as a fused kernel's, where "
        "the H200 ran math",
        (
            "tests/routing/test_torch_batched_spec.py::test_cuda_nested_auto_reads_jagged_sdpas_own_order",
            "tests/routing/test_torch_batched_spec.py::test_the_recorded_h200_jagged_calls_pass_the_nested_cuda_rows",
        ),
    ),
    _harness(
        "history-lost-context-ignored",
        "conformance/gate.py",
        '        if entry is None and rec.status in FAILING and (rec.fresh == "pass" or lost) and earlier:\n',
        '        if entry is None and rec.status in FAILING and rec.fresh == "pass" and earlier:\n',
        "an error that lost the CUDA context is never asked of the lifecycle entries: the stale mask's illegal "
        "address after a masked plan stays unexplained",
        (
            "tests/gate/test_pairs_history.py::"
            "test_an_illegal_address_that_lost_the_context_after_a_masked_plan_is_the_stale_mask_entry",
        ),
    ),
    _harness(
        "history-any-entry-loses-context",
        "conformance/gate.py",
        '            if found is not None and (rec.fresh == "pass" or found.loses_context):\n',
        "            if found is not None:\n",
        "any lifecycle entry whose history matches names an error that lost the context, though its evidence never "
        "showed that history end the context",
        ("tests/gate/test_pairs_history.py::test_a_lost_context_is_named_only_by_a_history_known_to_lose_it",),
    ),
    _harness(
        "nested-empty-query-any-causal",
        "conformance/known_failures.py",
        '        backend in (NESTED + "auto", NESTED + "cudnn")\n        and c["causal"]\n',
        '        backend in (NESTED + "auto", NESTED + "cudnn")\n',
        "the nested empty-query entry claims a batch without query rows whether causal or not: the non-causal "
        "call is math's, which the H200 did not see raise",
        (_KNOWN + "test_the_nested_empty_query_entry_claims_causal_jagged_batches_without_query_rows_on_cuda",),
    ),
    _harness(
        "race-pass-is-unexpected",
        "conformance/gate.py",
        '    if rec.status == "pass" and entry is not None and entry.unrepeatable:\n',
        '    if rec.status == "pass" and entry is not None and entry.unrepeatable and False:\n',
        "a pass where a race entry predicts a failure fails the gate as an unexpected pass: fa3's LSE store race "
        "that did not show on two windowed cases would fail the H200 run",
        (
            "tests/gate/test_gate_decisions.py::"
            "test_a_pass_under_an_entry_whose_failure_is_a_race_is_a_pass_not_an_unexpected_one",
        ),
    ),
    _harness(
        "nested-cuda-causal-to-math",
        "routing/specs/torch_sdpa.py",
        "        _nested_cuda(lambda q, c: q.causal),\n",
        "        _nested_cuda(lambda q, c: False),\n",
        "a causal jagged call no fused kernel takes read as math's, which refuses is_causal: the H200 chose cuDNN",
        ("tests/routing/test_torch_batched_spec.py::test_cuda_nested_auto_reads_jagged_sdpas_own_order",),
    ),
    _harness(
        "collector-exit-walks-the-heap",
        "conformance/collector.py",
        "        atexit.register(gc.freeze)\n",
        "        atexit.register(gc.collect)\n",
        "the entry points' exit handler collects instead of freezing: the interpreter's last collection walks the whole heap again",
        ("tests/harness/test_collector.py::test_each_entry_point_freezes_the_heap_at_exit_once[attncheck]",),
    ),
    _harness(
        "collector-loaded-heap-not-frozen",
        "conformance/collector.py",
        "    gc.freeze()\n",
        "    pass\n",
        "a pytest worker leaves what collection loaded in the collector's generations: every full collection walks it",
        (
            "tests/harness/test_collector.py::test_a_pytest_process_freezes_what_collection_loaded_and_collects_it_less_often",
        ),
    ),
    _harness(
        "collector-full-collections-as-often",
        "conformance/collector.py",
        "        gc.set_threshold(young, middle, FULL_COLLECTION_EVERY)\n",
        "        gc.set_threshold(young, middle, middle)\n",
        "after the freeze a pytest worker runs a full collection every 10 middle ones, as the emptied long-lived count asks",
        (
            "tests/harness/test_collector.py::test_a_pytest_process_freezes_what_collection_loaded_and_collects_it_less_often",
        ),
    ),
    _harness(
        "cli-exit-walks-the-heap",
        "conformance/cli.py",
        "    skip_final_collection()\n    warm_mkl_vml()",
        "    warm_mkl_vml()",
        "`attncheck` exits through the interpreter's last collection over everything torch and the run left alive",
        ("tests/harness/test_collector.py::test_each_entry_point_freezes_the_heap_at_exit_once[attncheck]",),
    ),
    _harness(
        "explore-loop-exit-walks-the-heap",
        "conformance/explore/loop.py",
        "    skip_final_collection()\n    p = Parser(prog=prog",
        "    p = Parser(prog=prog",
        "an exploration's child process exits through the interpreter's last collection over the whole heap",
        ("tests/harness/test_collector.py::test_each_entry_point_freezes_the_heap_at_exit_once[explore-loop]",),
    ),
    _harness(
        "route-records-exit-walks-the-heap",
        "conformance/route_records.py",
        "    skip_final_collection()\n    p = Parser(",
        "    p = Parser(",
        "`python -m conformance.route_records` exits through the interpreter's last collection over the whole heap",
        ("tests/harness/test_collector.py::test_each_entry_point_freezes_the_heap_at_exit_once[route-records]",),
    ),
    _harness(
        "isolate-child-exit-walks-the-heap",
        "conformance/isolate.py",
        "    skip_final_collection()\n    answers =",
        "    answers =",
        "an isolated case's child exits through the interpreter's last collection over the whole heap",
        ("tests/harness/test_collector.py::test_each_entry_point_freezes_the_heap_at_exit_once[isolate-child]",),
    ),
    _harness(
        "pytest-exit-walks-the-heap",
        "conformance/plugin.py",
        "    skip_final_collection()\n    warm_mkl_vml()",
        "    warm_mkl_vml()",
        "a pytest process (a worker, a mutation run, a test's own pytest) exits through a last collection of its whole heap",
        ("tests/harness/test_collector.py::test_each_entry_point_freezes_the_heap_at_exit_once[pytest]",),
    ),
    _harness(
        "pytest-collection-not-frozen",
        "conformance/plugin.py",
        '    freeze_what_is_loaded(session.config.getoption("--device"))\n',
        "    pass\n",
        "a pytest worker's full collections walk everything collection loaded, torch included",
        (
            "tests/harness/test_collector.py::test_a_pytest_process_freezes_what_collection_loaded_and_collects_it_less_often",
        ),
    ),
    _harness(
        "kernels-import-pulls-torch",
        "kernels/__init__.py",
        "if TYPE_CHECKING:  # the protocol",
        "if True:  # the protocol",
        "`import kernels` imports torch through the protocol's annotation: listing a fault catalogue pays 1.5 s for it",
        ("tests/kernels/test_kernels_registry.py::test_importing_kernels_imports_no_torch",),
    ),
    _harness(
        "fault-command-list-imports-the-cli",
        "scripts/fault_command.py",
        '    if argv[:1] == ["--list"]:\n',
        '    import conformance.cli  # noqa: F401\n\n    if argv[:1] == ["--list"]:\n',
        "listing a fault catalogue imports the CLI, and torch with it, before printing a name",
        (
            "tests/kernels/test_flashinfer_source_faults.py::test_the_script_lists_the_catalogue_and_refuses_an_unknown_fault",
        ),
    ),
    _harness(
        "suite-cpu-rows-shared-by-sessions",
        "scripts/suite_cpu.py",
        "def pytest_configure(config: pytest.Config) -> None:\n    config.stash[_ROWS] = []\n",
        "def pytest_configure(config: pytest.Config, _every_session: list = []) -> None:\n    config.stash[_ROWS] = _every_session\n",
        "a pytest session run inside another writes the outer session's rows as its own",
        ("tests/harness/test_suite_cpu.py::test_each_test_gets_its_wall_its_own_cpu_and_its_childrens",),
    ),
    _harness(
        "mutate-copies-share-the-code",
        "conformance/mutations/runner.py",
        'SHARED = ("docs",)\n',
        'SHARED = ("docs", "oracle")\n',
        "the mutation copies link one shared oracle/: a mutant of the oracle is refused, or would edit every copy",
        (
            "tests/mutation/test_oracle_mutants.py::test_copies_link_one_shared_copy_of_docs_and_a_mutant_may_not_edit_it",
        ),
    ),
    _harness(
        "mutate-shared-docs-editable",
        "conformance/mutations/runner.py",
        "    if (copy_root / Path(mutant.path).parts[0]).is_symlink():\n",
        "    if False:\n",
        "a mutant of a file under docs/ edits the one copy every mutant's run links to",
        (
            "tests/mutation/test_oracle_mutants.py::test_copies_link_one_shared_copy_of_docs_and_a_mutant_may_not_edit_it",
        ),
    ),
    _harness(
        "fork-server-group-set-by-the-run-only",
        "conformance/mutations/launcher.py",
        "                    os.setpgid(pid, pid)\n",
        "                    pass\n",
        "only the forked run makes its process group: a run not yet scheduled when the parent dies escapes the kill and runs on",
        (
            "tests/mutation/test_mutation_matrix.py::test_a_fork_server_whose_parent_is_gone_kills_the_runs_it_started[not-yet-scheduled]",
        ),
    ),
    _harness(
        "collector-gpu-collects-less-often",
        "conformance/collector.py",
        '    if device_type(device) == "cpu":\n',
        "    if True:\n",
        "a GPU pytest run collects its oldest generation ten times less often: device memory held by cyclic garbage waits",
        ("tests/harness/test_collector.py::test_only_a_cpu_run_collects_the_oldest_generation_less_often[cuda]",),
    ),
    _harness(
        "flex-eager-traces-dynamic-shapes",
        "kernels/torch_flex.py",
        '        wanted: dict[str, Any] = {"automatic_dynamic_shapes": False}\n',
        "        wanted: dict[str, Any] = {}\n",
        "eager flex keeps dynamo's automatic dynamic shapes: every new length after the first is traced symbolically",
        (
            "tests/kernels/test_torch_target.py::test_eager_flex_is_traced_with_static_shapes[flex]",
            "tests/kernels/test_torch_target.py::test_eager_flex_is_traced_with_static_shapes[flex-padded]",
        ),
    ),
    _harness(
        "flex-padded-calls-without-dynamo-settings",
        "kernels/torch_flex_padded.py",
        "            with dynamo_settings(self.device):\n",
        '            with dynamo_settings("cuda"):\n',
        "the padded flex backend calls eager flex under the compiled call's settings: new lengths traced symbolically",
        ("tests/kernels/test_torch_target.py::test_eager_flex_is_traced_with_static_shapes[flex-padded]",),
    ),
    _harness(
        "torch-sdpa-output-on-fresh-memory",
        "kernels/torch_sdpa.py",
        "                hand_back_poisoned(inputs.device, q.dtype, out.numel())\n",
        "",
        "per-request SDPA's call gets its output from whatever the allocator holds: on fresh CUDA memory a row it never writes reads 0",
        (
            "tests/kernels/test_torch_target.py::test_each_call_that_allocates_its_output_first_hands_back_poisoned_memory[math]",
        ),
    ),
    _harness(
        "torch-padded-output-on-fresh-memory",
        "kernels/torch_padded.py",
        "            hand_back_poisoned(inputs.device, t.q.dtype, t.q.numel() // t.q.shape[-1] * t.v.shape[-1])\n",
        "",
        "padded SDPA's call gets its output from whatever the allocator holds: on fresh CUDA memory a row it never writes reads 0",
        (
            "tests/kernels/test_torch_target.py::test_each_call_that_allocates_its_output_first_hands_back_poisoned_memory[padded-math]",
        ),
    ),
    _harness(
        "torch-nested-output-on-fresh-memory",
        "kernels/torch_nested.py",
        "                hand_back_poisoned(inputs.device, inputs.q.dtype, out.numel())\n",
        "",
        "jagged SDPA's call gets its output from whatever the allocator holds: on fresh CUDA memory a row it never writes reads 0",
        (
            "tests/kernels/test_torch_target.py::test_each_call_that_allocates_its_output_first_hands_back_poisoned_memory[nested-math]",
        ),
    ),
    _harness(
        "torch-flex-output-on-fresh-memory",
        "kernels/torch_flex.py",
        "            hand_back_poisoned(dev, q.dtype, out.numel())\n",
        "",
        "flex's call gets its output from whatever the allocator holds: on fresh CUDA memory a row it never writes reads 0",
        (
            "tests/kernels/test_torch_target.py::test_each_call_that_allocates_its_output_first_hands_back_poisoned_memory[flex]",
        ),
    ),
    _harness(
        "torch-flex-padded-output-on-fresh-memory",
        "kernels/torch_flex_padded.py",
        "            hand_back_poisoned(dev, t.q.dtype, t.q.numel() // t.q.shape[-1] * v.shape[-1])\n",
        "",
        "padded flex's call gets its output from whatever the allocator holds: on fresh CUDA memory a row it never writes reads 0",
        (
            "tests/kernels/test_torch_target.py::test_each_call_that_allocates_its_output_first_hands_back_poisoned_memory[flex-padded]",
        ),
    ),
    _harness(
        "torch-poisoned-blocks-left-unpoisoned",
        "kernels/_torch_common.py",
        "    return [poison(torch.empty(n, dtype=dtype, device=device)) for n in sizes]\n",
        "    return [torch.empty(n, dtype=dtype, device=device) for n in sizes]\n",
        "the blocks handed back hold what the allocator gave them: an unwritten row reads stale values, not the poison",
        ("tests/kernels/test_torch_target.py::test_poisoned_memory_is_handed_back_on_cuda_alone",),
    ),
    _harness(
        "torch-poisoned-blocks-on-every-device",
        "kernels/_torch_common.py",
        '    if device.type == "cuda":\n        poisoned_blocks(',
        "    if True:\n        poisoned_blocks(",
        "poisoned blocks allocated and dropped before every CPU call too: work for nothing where no allocator reuse is arranged",
        ("tests/kernels/test_torch_target.py::test_poisoned_memory_is_handed_back_on_cuda_alone",),
    ),
    _harness(
        "torch-poisoned-blocks-never",
        "kernels/_torch_common.py",
        '    if device.type == "cuda":\n        poisoned_blocks(',
        "    if False:\n        poisoned_blocks(",
        "no poisoned block handed back on CUDA either: every torch output on fresh memory again",
        ("tests/kernels/test_torch_target.py::test_poisoned_memory_is_handed_back_on_cuda_alone",),
    ),
)

check_unique(HARNESS_MUTANTS)
