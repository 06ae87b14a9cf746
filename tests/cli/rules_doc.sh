#!/usr/bin/env bash
# docs/rules.md must document every diagnostic rule id the code can emit (and no stale ones).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
root=$SOURCE_DIR
pattern='"(model|graph|node|tensor|value|function|shape)\.[a-z0-9-]+"'
code_ids=$(grep -ohE "$pattern" "$root"/checker/*.cpp "$root"/ir/*.cpp "$root"/ir/ops/*.cpp | tr -d '"' | sort -u)
doc_ids=$(grep -oE '`(model|graph|node|tensor|value|function|shape)\.[a-z0-9-]+`' "$root/docs/rules.md" | tr -d '`' | sort -u)
missing=$(comm -23 <(echo "$code_ids") <(echo "$doc_ids"))
stale=$(comm -13 <(echo "$code_ids") <(echo "$doc_ids"))
[[ -z $missing ]] && ok || fail "undocumented rule ids:" $missing
[[ -z $stale ]] && ok || fail "documented but never emitted:" $stale
finish
