#!/usr/bin/env bash
# kubeslow audit next to jq on the same audit log, in the same run (a benchmark: kept out of CI).
#
#   hack/bench-jq.sh                 # 200 MB inputs, 3 rounds
#   SIZE_MB=500 ROUNDS=5 INPUTS=lab hack/bench-jq.sh
#
# Inputs (each SIZE_MB, page-cached before timing):
#   lab        the real kube-apiserver 1.36 audit log of the lab's conflict-storm scenario
#              (internal/source/auditlog/testdata), repeated
#   synthetic  the Go benchmarks' generated log (controllers, a LIST-storming agent, a conflicting writer)
#
# Each round runs, in this order (alternating the order between rounds):
#   jq-aggregate  jq computing kubeslow audit's aggregation (the same work: each request counted once, per
#                 client requests/LISTs/409s/429s, LISTs and 409s by resource, 409s by object, per-minute
#                 series, the window, then the top clients); the jq program is below
#   jq-extract    jq extracting the fields only (less work than kubeslow: jq's best case)
#   kubeslow-1    `kubeslow audit FILE -o json` on one core (GOMAXPROCS=1)
#   kubeslow      the same on every core (the default)
# and prints wall-clock throughput (file MB / elapsed s) per tool and round, the same from CPU time (user +
# sys: steadier on a shared machine), and each round's ratios to jq; then the median of each. Before timing,
# the total request count of kubeslow and of jq-aggregate must agree.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH

SIZE_MB=${SIZE_MB:-200}
ROUNDS=${ROUNDS:-3}
INPUTS=${INPUTS:-"lab synthetic"}
command -v jq >/dev/null || { echo "jq is not installed (apt-get install jq)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "/usr/bin/time is not installed (apt-get install time)" >&2; exit 2; }

WORK=$(mktemp -d /tmp/kubeslow-bench-jq.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
echo "# building kubeslow" >&2
CGO_ENABLED=0 go build -trimpath -o "$WORK/kubeslow" ./cmd/kubeslow

cat >"$WORK/aggregate.jq" <<'EOF'
def agent: if (. // "") == "" then "(none)" else (index(" ") as $i | if $i != null and $i > 0 then .[:$i] else . end) end;
def counted: if .verb == "watch" then .stage == "ResponseStarted" else (.stage == "ResponseComplete" or .stage == "Panic") end;
reduce (inputs | select(counted)) as $e ({total: 0, clients: {}, objects: {}, minutes: {}};
  ($e.objectRef.resource // "") as $r0
  | (if ($e.objectRef.subresource // "") != "" then $r0 + "/" + $e.objectRef.subresource else $r0 end) as $res
  | (($e.user.username // "") + " | " + ($e.userAgent | agent)) as $c
  | ($e.requestReceivedTimestamp // "") as $t
  | $t[0:16] as $m
  | .total += 1
  | (if .first == null or $t < .first then .first = $t else . end)
  | (if .last == null or $t > .last then .last = $t else . end)
  | .clients[$c].requests += 1
  | .minutes[$m].requests += 1
  | (if $e.verb == "list" then .clients[$c].lists += 1 | .clients[$c].listsBy[$res] += 1 | .minutes[$m].lists += 1 else . end)
  | ($e.responseStatus.code) as $code
  | (if $code == 409 then
       .clients[$c].conflicts += 1 | .clients[$c].conflictsBy[$res] += 1 | .minutes[$m].conflicts += 1
       | .objects[$res + " " + (if ($e.objectRef.namespace // "") != "" then $e.objectRef.namespace + "/" else "" end) + ($e.objectRef.name // "")] += 1
     elif $code == 429 then .clients[$c].throttled += 1
     else . end))
| {requests: .total, first, last,
   lists: ([.clients[].lists // 0] | add),
   top: (.clients | to_entries | sort_by(-.value.requests) | .[:10]
         | map({client: .key, requests: .value.requests, lists: (.value.lists // 0), conflicts: (.value.conflicts // 0),
                throttled: (.value.throttled // 0),
                top_list_resource: ((.value.listsBy // {}) | to_entries | sort_by(-.value) | .[0].key),
                conflicts_by_resource: (.value.conflictsBy // {})})),
   conflicts_by_object: (.objects | to_entries | sort_by(-.value) | .[:10] | from_entries),
   per_minute: (.minutes | to_entries | sort_by(.key) | map({minute: .key} + .value))}
EOF
EXTRACT='[.user.username, .userAgent, .verb, .objectRef.resource, .objectRef.subresource, .objectRef.namespace, .objectRef.name, .responseStatus.code, .stage, .requestReceivedTimestamp]'

make_input() {
	local name=$1 out=$2 want=$((SIZE_MB << 20))
	case $name in
	lab)
		gzip -dc internal/source/auditlog/testdata/lab-conflict-storm.log.gz >"$WORK/lab-one.log"
		: >"$out"
		while [ "$(stat -c %s "$out")" -lt "$want" ]; do cat "$WORK/lab-one.log" >>"$out"; done
		;;
	synthetic)
		KUBESLOW_AUDIT_BENCH_LOG=$out KUBESLOW_AUDIT_BENCH_MB=$SIZE_MB \
			go test -count=1 -run '^TestWriteBenchLog$' ./internal/source/auditlog >/dev/null
		;;
	*) echo "unknown input $name (lab, synthetic)" >&2; exit 2 ;;
	esac
}

# run TOOL FILE: prints "wall_s cpu_s" of one run, its output to $WORK/out.
run() {
	local tool=$1 file=$2 rc=0
	case $tool in
	jq-aggregate) /usr/bin/time -f '%e %U %S' -o "$WORK/t" jq -n -f "$WORK/aggregate.jq" "$file" >"$WORK/out" ;;
	jq-extract) /usr/bin/time -f '%e %U %S' -o "$WORK/t" jq -c "$EXTRACT" "$file" >"$WORK/out" ;;
	kubeslow-1) GOMAXPROCS=1 /usr/bin/time -f '%e %U %S' -o "$WORK/t" "$WORK/kubeslow" audit "$file" -o json >"$WORK/out" 2>/dev/null || rc=$? ;;
	kubeslow) /usr/bin/time -f '%e %U %S' -o "$WORK/t" "$WORK/kubeslow" audit "$file" -o json >"$WORK/out" 2>/dev/null || rc=$? ;;
	esac
	# kubeslow audit exits 1 when it has findings (the storms in these logs): both are a completed run.
	if [ "$rc" -gt 1 ]; then echo "$tool failed (exit $rc)" >&2; exit 1; fi
	tail -1 "$WORK/t" | awk '{print $1, $2 + $3}'
}

median() { sort -g | awk '{a[NR]=$1} END {if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2] + a[NR/2+1]) / 2}'; }

TOOLS=(jq-aggregate jq-extract kubeslow-1 kubeslow)
echo "# kubeslow audit vs $(jq --version) — $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at start, ${SIZE_MB} MB inputs, $ROUNDS rounds"
for input in $INPUTS; do
	file="$WORK/$input.log"
	make_input "$input" "$file"
	bytes=$(stat -c %s "$file")
	mb=$(awk -v b="$bytes" 'BEGIN {printf "%.1f", b / 1e6}')
	cat "$file" >/dev/null # page cache: every tool reads it from memory

	# Both did the same work: the same number of requests counted.
	run kubeslow "$file" >/dev/null
	ks_requests=$(jq '.results[0].metrics[] | select(.name == "requests") | .value' "$WORK/out")
	run jq-aggregate "$file" >/dev/null
	jq_requests=$(jq '.requests' "$WORK/out")
	if [ "$ks_requests" != "$jq_requests" ]; then
		echo "$input: kubeslow counted $ks_requests requests, jq $jq_requests: not the same work" >&2
		exit 1
	fi
	echo
	echo "## input $input: $mb MB, $(wc -l <"$file") lines, $ks_requests requests counted by both"
	printf '%-6s %-13s %10s %12s %10s\n' round tool wall-MB/s cpu-MB/s wall-s
	: >"$WORK/rows"
	for r in $(seq 1 "$ROUNDS"); do
		order=("${TOOLS[@]}")
		if [ $((r % 2)) -eq 0 ]; then order=(kubeslow kubeslow-1 jq-extract jq-aggregate); fi
		for tool in "${order[@]}"; do
			read -r wall cpu < <(run "$tool" "$file")
			awk -v r="$r" -v t="$tool" -v w="$wall" -v c="$cpu" -v mb="$mb" 'BEGIN {
				if (w < 0.01) w = 0.01; if (c < 0.01) c = 0.01
				printf "%-6s %-13s %10.1f %12.1f %10.2f\n", r, t, mb / w, mb / c, w }'
			echo "$r $tool $wall $cpu" >>"$WORK/rows"
		done
	done
	echo
	echo "### $input: medians over $ROUNDS rounds (ratios are per round, then the median)"
	for tool in "${TOOLS[@]}"; do
		w=$(awk -v t="$tool" -v mb="$mb" '$2 == t {print mb / ($3 < 0.01 ? 0.01 : $3)}' "$WORK/rows" | median)
		c=$(awk -v t="$tool" -v mb="$mb" '$2 == t {print mb / ($4 < 0.01 ? 0.01 : $4)}' "$WORK/rows" | median)
		printf '%-13s %8.1f MB/s wall %8.1f MB/s cpu\n' "$tool" "$w" "$c"
	done
	for pair in "kubeslow-1 jq-aggregate" "kubeslow jq-aggregate" "kubeslow-1 jq-extract" "kubeslow jq-extract"; do
		read -r ours theirs <<<"$pair"
		w=$(awk -v a="$ours" -v b="$theirs" '$2 == a {o[$1] = $3} $2 == b {t[$1] = $3} END {for (r in o) print t[r] / o[r]}' "$WORK/rows" | median)
		c=$(awk -v a="$ours" -v b="$theirs" '$2 == a {o[$1] = $4} $2 == b {t[$1] = $4} END {for (r in o) print t[r] / o[r]}' "$WORK/rows" | median)
		printf 'ratio %-11s / %-13s %6.1fx wall %6.1fx cpu\n' "$ours" "$theirs" "$w" "$c"
	done
done
echo
echo "# load average $(cut -d' ' -f1-3 /proc/loadavg) at end"
