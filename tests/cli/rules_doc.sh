#!/usr/bin/env bash
# docs/rules.md must document every diagnostic rule id the code can emit (and no stale ones).
set -u
root=${ONNXTOOL_SOURCE_DIR:?}
source "$root/tests/skip_lib.sh"
pattern='"(model|graph|node|tensor|value|function|shape)\.[a-z0-9-]+"'
code_ids=$(grep -ohE "$pattern" "$root"/checker/*.cpp "$root"/ir/*.cpp "$root"/ir/ops/*.cpp | tr -d '"' | sort -u)
doc_ids=$(grep -oE '`(model|graph|node|tensor|value|function|shape)\.[a-z0-9-]+`' "$root/docs/rules.md" | tr -d '`' | sort -u)
missing=$(comm -23 <(echo "$code_ids") <(echo "$doc_ids"))
stale=$(comm -13 <(echo "$code_ids") <(echo "$doc_ids"))
passed=0 failed=0
if [[ -z $missing ]]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "undocumented rule ids:" $missing; fi
if [[ -z $stale ]]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "documented but never emitted:" $stale; fi
echo "$passed passed, $failed failed"
finish "$failed"
