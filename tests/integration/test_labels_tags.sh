#!/usr/bin/env bash
# test-labels: slow
# test_labels_tags.sh: labels reach go tool pprof. A thread alternates
# work=heavy and work=light in a 3:1 CPU ratio while another runs
# unlabeled; over a CPU profile with 10.5 s of labeled CPU,
# `go tool pprof -tags` shows both values in a 3:1 ratio within 10%,
# -tagfocus keeps only labeled samples, and the unlabeled work carries no
# label (-tagignore=work leaves exactly unlabeled_work's samples).
# Usage: test_labels_tags.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"

pp_check "labeled program ran" timeout 120 "$BUILD/tests/prog_labels_linked" "$TMP/p.pb.gz" 10.5
pp_check "profile written" test -s "$TMP/p.pb.gz"

pp_pprof -tags "$TMP/p.pb.gz" > "$TMP/tags.txt" 2>&1
cat "$TMP/tags.txt"
# lines like "  7.52s (74.90%): heavy"
heavy=$(awk '/: heavy$/ { print $1 }' "$TMP/tags.txt")
light=$(awk '/: light$/ { print $1 }' "$TMP/tags.txt")
to_ms() { awk -v v="$1" 'BEGIN { if (v ~ /ms$/) { sub(/ms$/, "", v); print v } else if (v ~ /s$/) { sub(/s$/, "", v); print v * 1000 } else print -1 }'; }
hms=$(to_ms "${heavy:-x}")
lms=$(to_ms "${light:-x}")
echo "heavy ${hms} ms, light ${lms} ms"
pp_check "both label values present" awk -v h="$hms" -v l="$lms" 'BEGIN { exit !(h > 0 && l > 0) }'
pp_check "labeled CPU >= 10 s" awk -v h="$hms" -v l="$lms" 'BEGIN { exit !(h + l >= 10000) }'
pp_check "heavy:light = 3:1 within 10%" awk -v h="$hms" -v l="$lms" 'BEGIN { r = h / l; print "ratio", r; exit !(r > 2.7 && r < 3.3) }'

# Unlabeled work carries no label: ignoring every sample with a "work" label
# leaves unlabeled_work, and focusing on work= leaves none of it.
pp_pprof -top -tagignore=work=heavy,light "$TMP/p.pb.gz" > "$TMP/ignored.txt" 2>&1
pp_check "unlabeled work remains without labels" grep -q "unlabeled_work" "$TMP/ignored.txt"
pp_pprof -top -tagfocus=work=heavy,light "$TMP/p.pb.gz" > "$TMP/focused.txt" 2>&1
pp_check "labeled samples do not include unlabeled_work" bash -c "! grep -q unlabeled_work '$TMP/focused.txt'"
pp_check "labeled samples include burn" grep -q "burn" "$TMP/focused.txt"
pp_finish
