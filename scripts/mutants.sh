#!/usr/bin/env bash
# Mutation testing with mutmut (not part of CI; see tests/README.md for the scores and how to read them).
#
#   scripts/mutants.sh                  list the modules
#   scripts/mutants.sh pooling recipe   mutation-test those modules, one after the other
#   scripts/mutants.sh all              every module (hours on 2 cores)
#
# Each module is mutated in its own work copy, .mutants/<module>/, against a fast selection of the tests that
# exercise it (the table below); mutmut runs, for each mutant, only the selected tests that reach the mutated
# function. At the end it prints the score and the surviving mutants; `cd .mutants/<module> && mutmut show <name>`
# prints a mutant's diff.
#
# MUTANTS_JOBS: mutants tested at once (default 1: the machine is usually shared).
# MUTANTS_ONLY: mutmut's names (wildcards allowed) of the only mutants to test, with MUTANTS_KEEP=1 to keep the other
# verdicts: e.g. the survivors of the last run after new tests, or 'bertfeat.embedder.x*_check_same_columns*'.
# MUTANTS_TESTS: test paths to use instead of the module's selection, for a fast first pass over mutants whose every
# selected test is slow (a mutant a subset of the selection kills, the whole selection kills too; run the survivors
# again without it), e.g. MUTANTS_TESTS="tests/test_ray_optional.py tests/test_ray_worker.py" before the cluster tests.
# MUTANTS_DEBUG=1: mutmut prints every pytest run's output (what to read when it says "Failed to run clean test").
# Mutants that no selected test can run (mutmut's trampoline adds a stack frame): scripts/plant_mutants.py.
# The whole script is one block, read before it runs: editing this file while a run is going on (to change a
# selection for the next run) does not change or break the running one.
{
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PY=${PYTHON:-$ROOT/.venv/bin/python}
JOBS=${MUTANTS_JOBS:-1}

# module | files mutated | tests selected (the fast ones that pin its values)
# (files deselects the kill tests: they run bertfeat in a child process, where mutmut does not see which functions
# they reach, so they would only add minutes to its first pass.)
# (embedder, cache, counts, load_checks and batch_runner deselect the tests of warnings' stacklevel: under mutmut every
# call goes through a trampoline frame outside bertfeat, so the warning points one frame off for every mutant; mutmut's
# clean run fails on it; tests/README.md says how it is checked.)
MODULES="
pooling  | bertfeat/pooling.py  | tests/test_pooling.py tests/test_all_layers.py
recipe   | bertfeat/recipe.py   | tests/test_recipe.py tests/test_encode.py
batching | bertfeat/batching.py | tests/test_batching.py tests/test_encode.py
tokens   | bertfeat/tokens.py   | tests/test_tokens.py
encode   | bertfeat/encode.py   | tests/test_encode.py tests/test_all_layers.py tests/test_cache_embedder.py tests/test_prompts.py tests/test_gpu_logic.py tests/test_perf_paths.py tests/test_checkpoints.py
journal  | bertfeat/journal.py  | tests/test_checkpoints.py
embedder | bertfeat/embedder.py bertfeat/prompts.py bertfeat/inputs.py bertfeat/exceptions.py | tests/test_embedder.py tests/test_inputs.py tests/test_prompts.py --deselect tests/test_embedder.py::test_truncation_warning_points_at_the_callers_line --deselect tests/test_prompts.py::test_the_prompts_note_points_at_the_callers_line
arrow    | bertfeat/arrow.py    | tests/test_arrow_batches.py tests/test_arrow.py
cache    | bertfeat/cache.py    | tests/test_cache.py tests/test_cache_values.py tests/test_cli_cache.py --deselect tests/test_cache_values.py::test_cache_warnings_point_at_the_callers_line
files    | bertfeat/files.py bertfeat/resume.py | tests/test_files.py tests/test_files_job.py tests/test_arrow.py tests/test_cli.py tests/test_cli_files.py tests/test_checkpoints.py --deselect tests/test_cli.py::test_killed_run_resumes_without_redoing_finished_chunks --deselect tests/test_checkpoints.py::test_sigkill_loses_at_most_the_batches_since_the_last_checkpoint
readers  | bertfeat/readers.py bertfeat/csv_stream.py bertfeat/csv_problems.py bertfeat/quotes.py bertfeat/utf8.py bertfeat/sniff.py bertfeat/joined.py | tests/test_readers_scale.py tests/test_readers_values.py tests/test_readers.py tests/test_joined.py tests/test_cli_inputs.py tests/test_cli.py::test_reading_parquet_streams_with_bounded_arrow_memory tests/test_files_job.py::test_an_input_that_is_no_path_is_refused_saying_so
sources  | bertfeat/sources.py  | tests/test_readers.py tests/test_readers_values.py tests/test_cli_inputs.py tests/test_output.py tests/test_cli_files.py::test_a_name_that_is_not_utf8_is_refused_early_for_the_output_and_a_parquet_input_and_read_as_csv
schemas  | bertfeat/schemas.py  | tests/test_schemas.py
worker_recipe | bertfeat/worker_recipe.py | tests/test_worker_recipe.py
output   | bertfeat/output.py   | tests/test_output.py tests/test_cli_files.py tests/test_cli.py tests/test_inputs.py
probe    | bertfeat/probe.py bertfeat/probe_labels.py bertfeat/union.py | tests/test_probe.py
probe_ridge | bertfeat/probe_ridge.py | tests/test_probe.py::test_distinct_rows_ridge_is_ridgecv_fitted_on_all_rows_with_copies_left_out_together tests/test_probe.py::test_distinct_rows_ridge_of_rows_all_alike_warns_nothing_and_predicts_the_mean tests/test_probe.py::test_distinct_rows_ridge_leaves_copies_out_as_many_rows_as_features_and_reads_labels_as_numbers
ray      | bertfeat/ray.py bertfeat/ray_plan.py bertfeat/ray_actor.py bertfeat/ray_dataset.py bertfeat/ray_files.py bertfeat/ray_session.py | tests/test_ray_optional.py tests/test_ray_worker.py tests/test_ray.py
spark    | bertfeat/spark.py    | tests/test_spark_optional.py tests/test_spark_worker.py tests/test_spark_driver.py tests/test_spark.py
spark_input | bertfeat/spark_input.py | tests/test_spark_driver.py tests/test_spark_worker.py tests/test_spark.py
st_folder | bertfeat/st_folder.py | tests/test_models.py tests/test_prompts.py
architectures | bertfeat/architectures.py | tests/test_architectures.py::test_supports_reads_each_setting_with_transformers_defaults_where_a_config_lacks_it tests/test_architectures.py::test_bert_and_roberta_weights_are_read_from_their_modules tests/test_architectures.py::test_distilbert_and_mpnet_weights_are_read_from_their_modules tests/test_architectures.py::test_a_model_not_laid_out_as_its_family_has_no_weights_for_the_fused_pass tests/test_architectures.py::test_mpnet_buckets_are_transformers_own_past_max_distance tests/test_architectures.py::test_supports_only_what_it_reimplements tests/test_architectures.py::test_family_matches_transformers tests/test_architectures.py::test_fused_pass_matches_every_hidden_state
counts   | bertfeat/counts.py   | tests/test_counts.py tests/test_ray_worker.py tests/test_files_job.py --deselect tests/test_counts.py::test_slow_dtype_notes_point_at_the_callers_line
shards   | bertfeat/shards.py   | tests/test_cache.py tests/test_cache_values.py --deselect tests/test_cache_values.py::test_cache_warnings_point_at_the_callers_line
compaction | bertfeat/compaction.py | tests/test_cache.py tests/test_cache_values.py tests/test_cli_cache.py --deselect tests/test_cache_values.py::test_cache_warnings_point_at_the_callers_line
namespace | bertfeat/namespace.py | tests/test_cache.py tests/test_cache_values.py tests/test_cli_cache.py --deselect tests/test_cache_values.py::test_cache_warnings_point_at_the_callers_line
models   | bertfeat/models.py   | tests/test_models_values.py tests/test_models.py tests/test_prompts.py tests/test_worker_recipe.py
devices  | bertfeat/devices.py  | tests/test_gpu_logic.py tests/test_embedder.py tests/test_ladder.py::test_every_device_a_user_can_pass_is_run_or_refused_in_one_line
model_files | bertfeat/model_files.py | tests/test_models.py tests/test_worker_recipe.py tests/test_cli_options.py tests/test_ladder.py::test_two_loads_at_once_leave_transformers_logging_as_the_user_set_it tests/test_ladder.py::test_a_child_forked_during_a_load_logs_as_the_user_set_it
fastbert | bertfeat/fastbert.py | tests/test_fastbert.py tests/test_architectures.py::test_fused_pass_matches_every_hidden_state tests/test_architectures.py::test_fused_families_run_in_bfloat16 tests/test_architectures.py::test_supports_only_what_it_reimplements tests/test_perf_paths.py::test_self_check_rejects_a_model_the_fast_path_does_not_reproduce tests/test_perf_paths.py::test_fast_path_runs_only_the_layers_it_needs tests/test_ladder.py::test_float32_takes_the_first_rung_in_this_cpus_order tests/test_ladder.py::test_the_order_is_a_property_of_the_cpu tests/test_ladder.py::test_the_order_can_be_set_for_a_machine_measured_otherwise tests/test_ladder.py::test_an_unknown_order_setting_is_refused_with_the_choices tests/test_ladder.py::test_bf16_packing_refused_as_on_avx2_falls_to_plain_torch_bf16 tests/test_ladder.py::test_without_onednn_ops_every_dtype_uses_plain_torch tests/test_ladder.py::test_a_rung_that_disagrees_falls_to_the_next tests/test_ladder.py::test_a_low_precision_rung_that_disagrees_falls_to_the_next tests/test_ladder.py::test_no_memory_while_a_rung_is_built_fails_the_load_not_the_rung tests/test_ladder.py::test_when_every_rung_fails_the_transformers_forward_runs
hardware | bertfeat/hardware.py bertfeat/os_cpu.py | tests/test_hardware.py tests/test_perf_paths.py::test_allotted_cores_is_within_the_affinity tests/test_perf_paths.py::test_allotted_cores_reads_the_cpu_quota_of_cgroup_v1_and_v2 tests/test_perf_paths.py::test_a_child_forked_while_threads_were_shared_out_sets_them_back_after_its_own_calls tests/test_ladder.py::test_cpu_flags_and_native_dtypes tests/test_ladder.py::test_cpu_id_tells_generations_apart tests/test_ladder.py::test_machine_report_has_the_facts_a_bug_report_needs tests/test_ladder.py::test_slow_dtype_message_only_when_slower tests/test_ladder.py::test_a_slow_rate_under_one_gflops_is_shown_not_rounded_to_zero
escapes  | bertfeat/escapes.py  | tests/test_exports.py tests/test_readers_values.py
exports  | bertfeat/exports.py  | tests/test_exports.py tests/test_readers_values.py
recent   | bertfeat/recent.py   | tests/test_docs.py::test_docstring_examples[bertfeat.recent] tests/test_cache.py::test_a_long_life_keeps_the_caches_used_last_not_every_cache_ever_opened tests/test_embedder.py::test_a_long_life_keeps_the_two_models_used_last_not_every_model_ever_used tests/test_embedder.py::test_a_model_whose_files_changed_frees_the_model_loaded_from_the_old_files tests/test_embedder.py::test_a_fitted_estimator_keeps_its_model_loaded
spelling | bertfeat/spelling.py | tests/test_spelling.py tests/test_docs.py::test_docstring_examples[bertfeat.spelling] tests/test_r_bridge.py::test_python_advice_reaches_r_users_in_r_syntax tests/test_r_bridge.py::test_the_command_lines_errors_reach_bf_embed_file_in_r_syntax tests/test_r_bridge.py::test_argparses_refusals_reach_bf_embed_file_naming_its_arguments_in_r_syntax tests/test_r_bridge.py::test_the_cache_refusals_reach_r_without_the_pickled_pipelines_advice
os_cpu   | bertfeat/os_cpu.py   | tests/test_hardware.py tests/test_gpu_logic.py::test_the_apple_gpu_asked_for_under_rosetta_is_refused_saying_why
csv_problems | bertfeat/csv_problems.py | tests/test_exports.py tests/test_joined.py tests/test_readers_values.py tests/test_readers.py
locks    | bertfeat/locks.py    | tests/test_locks.py tests/test_output.py tests/test_cache_values.py
links    | bertfeat/links.py    | tests/test_links.py
ray_plan | bertfeat/ray_plan.py | tests/test_ray_optional.py tests/test_ray_worker.py
batch_runner | bertfeat/batch_runner.py | tests/test_perf_paths.py tests/test_ladder.py tests/test_gpu_logic.py tests/test_fork_safe.py --deselect tests/test_ladder.py::test_the_slow_dtype_warning_points_at_the_callers_line
load_checks | bertfeat/load_checks.py | tests/test_architectures.py tests/test_ladder.py tests/test_perf_paths.py --deselect tests/test_ladder.py::test_the_slow_dtype_warning_points_at_the_callers_line
cli      | bertfeat/cli/*.py    | tests/test_cli_options.py tests/test_cli_help.py tests/test_cli.py tests/test_cli_cache.py tests/test_cli_inputs.py tests/test_cli_files.py tests/test_probe.py::test_probe_command tests/test_probe.py::test_probe_command_with_missing_texts tests/test_prompts.py::test_cli_prefix_prompt_name_and_info tests/test_ladder.py::test_bertfeat_info_reports_this_machine tests/test_ladder.py::test_cli_prints_a_slow_dtype_warning_as_one_line tests/test_ladder.py::test_every_device_a_user_can_pass_is_run_or_refused_in_one_line tests/test_ladder.py::test_the_cli_manifest_records_the_machine_it_ran_on --deselect tests/test_cli.py::test_killed_run_resumes_without_redoing_finished_chunks
"

field() { echo "$MODULES" | awk -F'|' -v m="$1" -v f="$2" '{gsub(/^ +| +$/, "", $1)} $1 == m {gsub(/^ +| +$/, "", $f); print $f}'; }
names=$(echo "$MODULES" | awk -F'|' 'NF == 3 {gsub(/ /, "", $1); print $1}')

if [ $# -eq 0 ]; then
  echo "usage: scripts/mutants.sh MODULE... | all"
  echo "modules: $(echo $names)"
  exit 2
fi
[ "$1" = all ] && set -- $names

if ! "$PY" -c "import mutmut" 2>/dev/null; then
  echo "mutmut is missing from $PY: install the dev extra (pip install -e '.[dev]')" >&2
  exit 2
fi

for module in "$@"; do
  sources=$(field "$module" 2)
  tests=${MUTANTS_TESTS:-$(field "$module" 3)}
  if [ -z "$sources" ]; then
    echo "unknown module '$module'; modules: $(echo $names)" >&2
    exit 2
  fi
  work="$ROOT/.mutants/$module"
  mkdir -p "$work"
  # a fresh copy of the code and tests. mutmut's cached verdicts (work/mutants/) are dropped too: mutmut 3.8 keeps a
  # survivor's verdict after a new test is added, so a rerun would report mutants the new test kills as surviving.
  # MUTANTS_KEEP=1 keeps them (quicker when only the source changed).
  rm -rf "$work/bertfeat" "$work/tests" "$work/docs" "$work/README.md"
  [ "${MUTANTS_KEEP:-0}" = 1 ] || rm -rf "$work/mutants"
  cp -r bertfeat tests docs README.md pyproject.toml "$work/"
  {
    echo "[mutmut]"
    [ "${MUTANTS_DEBUG:-0}" = 1 ] && echo "debug = true"
    echo "source_paths = bertfeat"
    echo "only_mutate ="
    for s in $sources; do echo "    $s"; done
    echo "pytest_add_cli_args_test_selection ="
    for t in $tests; do echo "    $t"; done
    # -x: one failing test is enough to kill a mutant; no cache provider: the copies would all write one
    echo "pytest_add_cli_args ="
    echo "    -x"
    echo "    -p"
    echo "    no:cacheprovider"
    # torch's thread pools are not fork-safe: fork workers from a clean server, not from the process that ran pytest
    echo "process_isolation = forkserver"
    echo "use_git_change_detection = false"
    # what the tests read besides the code: docs/cli-help.md, the reference test_cli_help checks the help against;
    # README.md, whose cache-key table test_cache.py checks against the recipe
    echo "also_copy ="
    echo "    docs"
    echo "    README.md"
  } > "$work/setup.cfg"
  echo "== mutants: $module ($sources) against $tests"
  (
    cd "$work"
    env -u PYTHONPATH HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false \
      OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" "$PY" -m mutmut run --max-children "$JOBS" ${MUTANTS_ONLY:-} || true
    "$PY" -m mutmut export-cicd-stats >/dev/null
    "$PY" - "$module" <<'EOF'
import json, sys
s = json.load(open("mutants/mutmut-cicd-stats.json"))
tested = s["killed"] + s["survived"] + s["timeout"] + s["suspicious"] + s["segfault"]
score = 100 * (tested - s["survived"]) / max(1, tested)
print(f"{sys.argv[1]}: {s['total']} mutants, {s['killed']} killed, {s['timeout']} timed out, {s['survived']} survived, "
      f"{s['no_tests']} not reached by the selected tests: {score:.1f}% of tested mutants killed")
EOF
    "$PY" -m mutmut results 2>/dev/null | grep -v ": killed" || true
  )
done
exit
}
