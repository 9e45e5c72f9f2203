#!/usr/bin/env bash
# compare.sh BEFORE.tsv AFTER.tsv: how many configurations are identical, and which differ or are
# in one snapshot only (diff their OUT.sass/<label>.sass to see how). Exit status 1 if any differ.
set -euo pipefail
join -t $'\t' -a1 -a2 -e MISSING -o 0,1.2,2.2 <(sort "$1") <(sort "$2") | awk -F'\t' '
    $2 == $3 { same++; next }
    $2 == "MISSING" { print "only after:  " $1; other++; next }
    $3 == "MISSING" { print "only before: " $1; other++; next }
    { print "differs:     " $1; other++ }
    END { printf "%d identical, %d not\n", same, other; exit other > 0 }'
