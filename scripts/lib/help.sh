# Sourced by every script under scripts/ before it does anything else: with
# -h, --help or help as its first argument the script prints its header
# comment (what it does, its usage, its environment) and exits 0 without
# running anything. scripts/docs TestEveryScriptAnswersHelp checks it.
case "${1:-}" in
-h | --help | help)
	awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"
	exit 0
	;;
esac
