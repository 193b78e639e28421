#!/usr/bin/env bash
# stack_traps.sh REPO: a test that starts a stack (tests/lib/stack.sh's
# stack_start sets `trap stack_stop EXIT`) and sets an EXIT trap of its own
# replaces that one, and its daemons and PostgreSQL outlive it unless its
# trap calls stack_stop too (rebind_browser.sh left a whole stack running
# after every CI run). Fails naming each such trap.
set -euo pipefail
repo=${1:?usage: stack_traps.sh REPO}
bad=0
while IFS= read -r f; do
  grep -q 'stack_start' "$f" || continue
  while IFS= read -r hit; do
    case $hit in
      *stack_stop*) ;;
      *) echo "FAIL: $f:${hit%%:*}: an EXIT trap without stack_stop: ${hit#*:}"; bad=1 ;;
    esac
  done < <(grep -n -E "^[[:space:]]*trap .*(EXIT|0)[[:space:]]*$" "$f" || true)
done < <(find "$repo/tests" -name '*.sh' -not -path '*/lib/*' | sort)
[ "$bad" -eq 0 ] && echo "every EXIT trap of a test with a stack stops it"
exit "$bad"
