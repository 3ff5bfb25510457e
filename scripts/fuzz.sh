#!/usr/bin/env bash
# Fuzzes the parsers that read bytes from outside with libFuzzer: the JSON parser (files and
# every reply), the multipart splitter (uploads), the HTTP-date parser (a clock header), the
# .docsyncignore matcher, the JSON Schema compiler and validator (schemas are documents any
# writer can send), and the reader of the user's git index (a file any program may have written). Each target is compiled straight from its sources with
# `swiftc -sanitize=fuzzer,address` (no package dependencies needed), starts from the committed
# corpus in Fuzz/corpus/NAME, and runs for SECONDS.
#   scripts/fuzz.sh [SECONDS] [NAME...]     NAME: json multipart httpdate ignore schema gitindex (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("${@:-json multipart httpdate ignore schema gitindex}")
read -r -a targets <<< "${targets[*]}"
out=.build-fuzz
mkdir -p "$out"
flags=(-O -sanitize=fuzzer,address -parse-as-library -swift-version 6)
model=$(ls Sources/DocsyncModel/*.swift | grep -v ContentHash.swift)  # the rest needs no package
if [ ! -f "$out/libDocsyncModel.a" ] || [ -n "$(find Sources/DocsyncModel -newer "$out/libDocsyncModel.a" -name '*.swift')" ]; then
  swiftc "${flags[@]}" -module-name DocsyncModel -emit-module -emit-module-path "$out/DocsyncModel.swiftmodule" \
    -emit-library -static -o "$out/libDocsyncModel.a" $model
fi
build() {
  local name=$1; shift
  # The linker warns about every sanitizer symbol it cannot export: noise, kept in the log.
  swiftc "${flags[@]}" -module-name "Fuzz_$name" -I "$out" -L "$out" -lDocsyncModel "$@" -o "$out/fuzz-$name" > "$out/build-$name.log" 2>&1 || { cat "$out/build-$name.log" >&2; return 1; }
}
status=0
for name in "${targets[@]}"; do
  case $name in
    json) build json Fuzz/JSONParserFuzz.swift ;;
    httpdate) build httpdate Fuzz/HTTPDateFuzz.swift Sources/DocsyncClock/HTTPDate.swift ;;
    multipart) build multipart Fuzz/MultipartFuzz.swift Sources/DocsyncServer/MultipartStream.swift ;;
    ignore) build ignore Fuzz/IgnoreRulesFuzz.swift ;;
    # FolderSchemaCheck reads folders (DocsyncFiles): the validator alone is fuzzed.
    schema) build schema -I Sources/CPCRE2 -lpcre2-8 Fuzz/SchemaFuzz.swift $(ls Sources/DocsyncSchema/*.swift | grep -v FolderSchemaCheck.swift) ;;
    gitindex) build gitindex Fuzz/GitIndexFuzz.swift Sources/DocsyncGit/{GitIndexFile,IndexEntries,IndexCacheTree,DescriptorReader}.swift ;;
    *) echo "unknown fuzz target $name" >&2; exit 2 ;;
  esac
  work="$out/corpus-$name"
  mkdir -p "$work"
  echo "+ fuzz $name for ${seconds}s"
  # New inputs go to a scratch corpus; the committed one is only read. A finding is written as
  # $out/crash-* and fails the run.
  if ! "$out/fuzz-$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
      -artifact_prefix="$out/" -print_final_stats=1 "$work" "Fuzz/corpus/$name" > "$out/fuzz-$name.log" 2>&1; then
    echo "fuzz $name found a problem:" >&2
    tail -40 "$out/fuzz-$name.log" >&2
    status=1
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$out/fuzz-$name.log" | sed "s/^/  $name: /" || true
done
exit $status
