#!/bin/bash
# Profiles a pull with --git-commit by git's own trace: the time of each git command the agent
# ran, summed by command, beside a plain pull of the same documents (BENCHMARKS.md, "Where the
# time goes"). Usage: scripts/profile-git-pull.sh [DOCS] (default 100000; a release build).
# Leave a minute after another large run: ext4 makes files slowly for a while after many were
# deleted (BENCHMARKS.md, "Measurement hazards").
set -euo pipefail
N=${1:-100000}
. "$(dirname "$0")/serve-for-profile.sh" gitprof
put 0 "$N" 0
pull() {  # pull FOLDER [--git-commit]: seconds until every document (and commit) is in
  local dir=$1 flag=${2:-} t0 done
  t0=$(date +%s.%N)
  GIT_TRACE2_EVENT=${TRACE:-} "$BIN" watch "$dir" --endpoint "$URL" --token-file "$W/token" $flag --log-level warning 2> "$dir.err" &
  local pid=$!
  while :; do
    done=$(sqlite3 "file:$dir/.docsync/index.sqlite?mode=ro" \
      "select (select count(*) from document) >= $N and (select count(*) from git_change) = 0" 2>/dev/null || echo 0)
    if [ "$done" = 1 ] && { [ -z "$flag" ] || [ -n "$(git -C "$dir" log -1 --format=%H -- bench 2>/dev/null)" ]; }; then break; fi
    sleep 0.1
  done
  echo "$(echo "$(date +%s.%N) - $t0" | bc) s"
  kill $pid; wait $pid 2>/dev/null || true
}
mkdir "$W/plain"; echo "plain pull of $N: $(pull "$W/plain")"
mkdir "$W/git"; git -C "$W/git" init -q -b main; echo ".docsync/" > "$W/git/.gitignore"
git -C "$W/git" add .gitignore; git -C "$W/git" -c user.name=p -c user.email=p@localhost commit -qm start
TRACE="$W/trace.json" && export TRACE
echo "pull of $N with --git-commit: $(pull "$W/git" --git-commit), $(git -C "$W/git" rev-list --count HEAD) commits"
python3 "$(dirname "$0")/git-trace-summary.py" < "$W/trace.json"
