# Shared by the H200 pipelines (scripts/h200_session.sh, scripts/h200_explore_session.sh): pack what a
# sitting measured into $OUT, follow the background pipeline, run one logged step, install wheels.
# The sourcing script sets A (what the pipeline owns on the runner) and R (its results, packed by `wait`).

pack() {  # what exists now -> $OUT: steps, the pipeline log's tail, and $R as tar parts of 15 MiB
  [ -n "${OUT:-}" ] || return 0
  cp "$R/steps.txt" "$OUT/steps.txt" 2>/dev/null
  tail -n 400 "$A/pipeline.log" > "$OUT/pipeline-tail.log" 2>/dev/null
  tar -C "$A" --exclude='hypothesis-db' -czf - R $(cd "$A" && ls ./*.log 2>/dev/null | grep -v pipeline.log) 2>/dev/null \
    | split -b 15m -d - "$OUT/results.tgz."
  tar -C "$A" -czf "$OUT/hypothesis-db.tgz" $(cd "$A" && find R -type d -name hypothesis-db) 2>/dev/null
  ls -la "$OUT"
}

follow() {  # follow SECONDS: wait for the pipeline, printing each step as it ends; then pack
  local until=$((SECONDS + $1)) seen=0
  if [ ! -d "$A" ]; then  # a fresh machine: the one that ran `start` was given back, and its pipeline with it
    echo "no pipeline on this machine ($A is missing): the machine was released; start again" >&2
    return 3
  fi
  while [ $SECONDS -lt "$until" ] && [ ! -e "$A/DONE" ]; do
    sleep 5
    local n; n=$(wc -l < "$R/steps.txt" 2>/dev/null || echo 0)
    if [ "$n" -gt "$seen" ]; then sed -n "$((seen + 1)),${n}p" "$R/steps.txt"; seen=$n; fi
  done
  [ -e "$A/DONE" ] && echo "pipeline DONE" || echo "pipeline still running: $(tail -n 1 "$A/pipeline.log")"
  pack
}

step() {  # step NAME TIMEOUT CMD...: run it, log to $R/NAME.log, note rc and seconds
  local name=$1 limit=$2; shift 2; local t0=$SECONDS
  echo "== $name (limit ${limit}s) $(date -u +%T)"
  timeout -s INT -k 20 "$limit" "$@" > "$R/$name.log" 2>&1
  local rc=$?
  echo "${LANE:+$LANE/}$name rc=$rc $((SECONDS - t0)) s" | tee -a "$R/steps.txt" ${ALL_STEPS:+"$ALL_STEPS"}
  tail -n 25 "$R/$name.log"
}

site_for() {  # site_for DIR WHEEL...: install wheels into DIR (no registry on the runner)
  local dir=$1; shift
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$dir" "$@"
}

install_sites() {  # install_sites DIR: DIR/site-common (apache-tvm-ffi, nvidia-cudnn-frontend where carried) and
  # DIR/site-VERSION per FlashInfer version carried: .whlx/ (scripts/pack_flashinfer_sites.sh), else the older
  # .whl/ (0.7.2.post1's wheels) and .whl074x/ (0.7.4's site archive).
  local dir=$1 a v w common
  common=$(ls .whlx/*.whl .whl/apache_tvm_ffi-*.whl .whl/nvidia_cudnn_frontend-*.whl 2>/dev/null \
    | awk -F/ '!seen[$NF]++')
  # shellcheck disable=SC2086 # the wheels are words
  [ -d "$dir/site-common" ] || { [ -n "$common" ] && site_for "$dir/site-common" $common; } || return 2
  if [ -f .whlx/cudnn-frontend-site.tar.xz ] && [ ! -d "$dir/site-common/cudnn" ]; then
    tar -C "$dir/site-common" -xJf .whlx/cudnn-frontend-site.tar.xz || return 2
  fi
  for a in .whlx/flashinfer-*-site.tar.xz .whl074x/flashinfer-*-site.tar.xz; do
    [ -f "$a" ] || continue
    v=$(basename "$a" -site.tar.xz); v=${v#flashinfer-}
    [ -d "$dir/site-$v" ] && continue
    mkdir -p "$dir/site-$v" && tar -C "$dir/site-$v" -xJf "$a" || return 2
  done
  for w in .whl/flashinfer_python-*.whl; do
    [ -f "$w" ] || continue
    v=$(basename "$w" | cut -d- -f2)
    [ -d "$dir/site-$v" ] || site_for "$dir/site-$v" "$w" || return 2
  done
}
