#!/usr/bin/env bash
# Short libFuzzer run of one target: smoke.sh BINARY SEED_CORPUS_DIR WORK_DIR
# The seed corpus (committed) is read, new inputs go to the work dir only.
set -euo pipefail
bin=$1 seeds=$2 work=$3
mkdir -p "$work"
dirs=("$work"); [[ -d "$seeds" ]] && dirs+=("$seeds")
exec "$bin" -max_total_time="${CF_FUZZ_SECONDS:-15}" -rss_limit_mb=2048 -timeout=10 \
  -print_final_stats=1 "${dirs[@]}"
