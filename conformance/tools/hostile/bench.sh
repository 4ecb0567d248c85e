#!/usr/bin/env bash
# Resource benchmark on hostile inputs: peak RSS, wall time, output size and
# exit code of gguf-validate on the files of gen.py, for one or two builds
# side by side (a run that outlives the limit is killed and marked).
#
#   bash conformance/tools/hostile/bench.sh DIR BIN [OLD_BIN]
#
# DIR holds (or receives) the generated files: about 400 MB of disk, plus
# 200 GiB of sparse extents that take no space.
set -uo pipefail
dir=$1; shift
limit=${LIMIT:-60}
here=$(cd "$(dirname "$0")" && pwd)
python3 "$here/gen.py" "$dir" >/dev/null

cases=(
  "tensors-sparse|--check-data"
  "tensors-dense|--check-data"
  "tensors-empty|--check-data --format json"
  "keys-10m|"
  "sparse-100g|--no-mmap"
)
printf '%-16s %-28s %-8s %6s %10s %12s %s\n' case flags build exit seconds peak_rss_MB stdout_bytes
for c in "${cases[@]}"; do
  name=${c%%|*}; flags=${c#*|}
  for bin in "$@"; do
    out=$(mktemp); err=$(mktemp)
    start=$(date +%s.%N)
    # shellcheck disable=SC2086
    timeout -s KILL "$limit" /usr/bin/time -f 'rss_kb=%M' "$bin" $flags "$dir/$name.gguf" >"$out" 2>"$err"
    rc=$?
    secs=$(echo "$(date +%s.%N) - $start" | bc)
    rss=$(grep -o 'rss_kb=[0-9]*' "$err" | cut -d= -f2)
    [ $rc -eq 137 ] && rc="killed"
    [ -z "$rss" ] && rss=0
    printf '%-16s %-28s %-8s %6s %10.2f %12.1f %s\n' "$name" "${flags:--}" "$(basename "$(dirname "$(dirname "$bin")")")" \
      "$rc" "$secs" "$(echo "$rss / 1024" | bc -l)" "$(stat -c %s "$out")"
    rm -f "$out" "$err"
  done
done
