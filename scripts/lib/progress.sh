# Sourced by scripts/test.sh: its progress lines.
#
# phase TEXT prints one line with the time since T0 (the start).
# progress WHAT LOG CMD... runs CMD in the background with its output
# appended to LOG ("-": a log of its own, and the output shown as it comes).
# Every PROGRESS_EVERY seconds (default 20) that nothing was shown it prints
# what the phase is doing, the time so far and the latest output line (for
# a `go ... -x` log, the package last compiled), so a long compile or run
# is never silent. It returns CMD's exit status. LOGDIR must be set.
T0=${T0:-$SECONDS}
phase() {
	local s=$((SECONDS - T0))
	printf '== [%2dm%02ds] %s\n' $((s / 60)) $((s % 60)) "$*"
}

progress() {
	local what=$1 log=$2 show=
	shift 2
	if [ "$log" = - ]; then
		log=$(mktemp "$LOGDIR/progress.XXXXXX")
		show=1
		"$@" > >(tee -a "$log") 2>&1 &
	else
		"$@" >>"$log" 2>&1 &
	fi
	local pid=$! t=$SECONDS mark=$SECONDS size=-1 now last rc=0
	while kill -0 "$pid" 2>/dev/null; do
		sleep 1
		now=$(wc -c <"$log")
		if [ -n "$show" ] && [ "$now" != "$size" ]; then
			size=$now mark=$SECONDS
		fi
		if [ $((SECONDS - mark)) -ge "${PROGRESS_EVERY:-20}" ]; then
			mark=$SECONDS
			# "|| true": a log without -p lines (go test's) makes grep fail,
			# and test.sh runs with set -e and pipefail.
			last=$(tail -n 400 "$log" | grep -o -- ' -p [^ ]*' | tail -n 1 | sed 's/^ -p /compiling /' || true)
			[ -n "$last" ] || last=$(tail -n 1 "$log" | cut -c1-110 || true)
			phase "  ... $what: $((SECONDS - t))s in this phase; latest: $last"
		fi
	done
	wait "$pid" || rc=$?
	return "$rc"
}
