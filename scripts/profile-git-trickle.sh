#!/bin/bash
# Profiles a steady trickle into a large git history (issue 61, item 3): N documents of one
# docType pulled with --git-commit, then CHANGES edits on the server, one at a time, each waited
# for until committed. Prints the agent's CPU and its git children's a commit (from /proc), and
# git's own trace of the trickle summed by command, and git's floor beside it: the CPU any
# commit of one changed file into this folder costs git itself (the file added to a copy of the
# index, the tree written from it). Usage:
#   scripts/profile-git-trickle.sh [N] [CHANGES]   (default 100000 10; a release build)
# GIT_FLAG= (empty) runs the same trickle without git history: the pull's own share.
# TRICKLE=new makes each change a new document (a file added), TRICKLE=delete a deletion (a file
# removed), instead of an edit.
set -euo pipefail
N=${1:-100000}
CHANGES=${2:-10}
. "$(dirname "$0")/serve-for-profile.sh" gittrickle
put 0 "$N" 0
D="$W/git"
mkdir "$D"; git -C "$D" init -q -b main; echo ".docsync/" > "$D/.gitignore"
git -C "$D" add .gitignore; git -C "$D" -c user.name=p -c user.email=p@localhost commit -qm start
FLAG=${GIT_FLAG---git-commit}
PULL_START=$(date +%s.%N)
GIT_TRACE2_EVENT="$W/trace.json" "$BIN" watch "$D" --endpoint "$URL" --token-file "$W/token" $FLAG --log-level warning 2> "$D.err" &
PID=$!
settled() {  # every document recorded, no pulled change waiting for its commit
  [ "$(sqlite3 "file:$D/.docsync/index.sqlite?mode=ro" \
    "select (select count(*) from document) >= $N and (select count(*) from git_change) = 0" 2>/dev/null || echo 0)" = 1 ]
}
committed() { [ -z "$FLAG" ] || [ "$(git -C "$D" rev-list --count HEAD)" -gt "$1" ]; }
until settled && committed 1; do sleep 0.2; done
echo "pull of $N ${FLAG:-without git}: $(echo "$(date +%s.%N) - $PULL_START" | bc | cut -c1-5) s, $(git -C "$D" rev-list --count HEAD 2>/dev/null || echo 0) commits"
cpu() { awk '{ print $14 + $15 + $16 + $17 }' "/proc/$PID/stat"; }  # ticks: the agent and its waited-for children
git_cpu() { awk '{ print $16 + $17 }' "/proc/$PID/stat"; }  # ticks: its git children alone
sleep 2
touch "$W/trace.json"
FROM=$(wc -l < "$W/trace.json")
BEFORE=$(cpu)
GIT_BEFORE=$(git_cpu)
COMMITS=$(git -C "$D" rev-list --count HEAD)
OBJECTS_BEFORE=$(du -sb "$D/.git/objects" | cut -f1)
arrived() {  # the change n is in the folder
  case "${TRICKLE:-edit}" in
    new) grep -qs "trickle-$1" "$D/bench/d$((N + $1)).json" ;;
    delete) [ ! -e "$D/bench/d$(($1 * 7)).json" ] ;;
    *) grep -q "trickle-$1" "$D/bench/d$(($1 * 7)).json" ;;
  esac
}
for n in $(seq 1 "$CHANGES"); do
  case "${TRICKLE:-edit}" in
    new) put $((N + n)) 1 "trickle-$n" ;;
    delete) delete $((n * 7)) ;;
    *) put $((n * 7)) 1 "trickle-$n" ;;
  esac
  until committed "$COMMITS" && settled && arrived "$n"; do sleep 0.05; done
  COMMITS=$(git -C "$D" rev-list --count HEAD)
  sleep 1
done
AFTER=$(cpu)
echo "git objects written a change: $(( ($(du -sb "$D/.git/objects" | cut -f1) - OBJECTS_BEFORE) / CHANGES / 1024 )) KiB"
echo "agent peak RSS: $(awk '/VmHWM/ { printf "%d MiB", $2 / 1024 }' "/proc/$PID/status")"
GIT_AFTER=$(git_cpu)
HZ=$(getconf CLK_TCK)
echo "trickle (${TRICKLE:-edit}) into $N files ${FLAG:-without git}: $CHANGES changes, $(echo "scale=1; ($AFTER - $BEFORE) * 1000 / $HZ / $CHANGES" | bc) ms CPU a change (agent and git)"
tail -n +"$((FROM + 1))" "$W/trace.json" | python3 "$(dirname "$0")/git-trace-summary.py" "$CHANGES"
[ -n "$FLAG" ] || exit 0
# Git's floor: a new version of one file added to a fresh copy of the folder's index, and the tree
# written from it; the CPU of the two commands, ten times over. Every commit of one change into
# this folder needs at least these (commit-tree and the ref are small beside them).
floor_ms() {  # CPU of ten such commits' git commands (copies of the index made first), over ten
  local blob
  blob=$(echo '{"id":"d7","docType":"bench","edit":"floor"}' | git -C "$D" hash-object -w --stdin)
  for n in $(seq 1 10); do cp "$D/.git/index" "$W/floor-index-$n"; done
  /usr/bin/time -f "%U %S" -o "$W/floor-time" sh -c "for n in \$(seq 1 10); do
      GIT_INDEX_FILE='$W/floor-index-'\$n git -C '$D' update-index --add --cacheinfo '100644,$blob,bench/d7.json' &&
      GIT_INDEX_FILE='$W/floor-index-'\$n git -C '$D' write-tree > /dev/null; done"
  awk '{ printf "%.0f\n", ($1 + $2) * 100 }' "$W/floor-time"
}
FLOOR=$(floor_ms)
GIT_MS=$(echo "scale=1; ($GIT_AFTER - $GIT_BEFORE) * 1000 / $HZ / $CHANGES" | bc)
echo "git's CPU a change: $GIT_MS ms; git's floor for one changed file (update-index and write-tree): $FLOOR ms; $(echo "scale=2; $GIT_MS / $FLOOR" | bc)x the floor"
