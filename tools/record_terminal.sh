#!/usr/bin/env bash
# Records enroll, compress and roc on the sample data in a real terminal (tmux, 100
# columns) and writes what the screen showed to docs/sessions/terminal.txt: the whole
# scroll-back at the end, then the snapshots taken while compress and roc were running
# (the live bars with their rate and ETA). Nothing is edited. Needs tmux
# (apt-get install tmux) and the project's venv (make .venv/.installed).
#
#     tools/record_terminal.sh            # about 2 minutes on 2 idle cores
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
session="ssgallery-record-$$"
trap 'tmux kill-session -t "$session" 2>/dev/null || true; rm -rf "$work"' EXIT
ln -s "$repo/sample_data" "$work/sample_data"
mkdir "$work/demo_out"
tmux new-session -d -s "$session" -x 100 -y 60 -c "$work/demo_out" \
    "env -i HOME=$work TERM=xterm-256color PATH=$repo/.venv/bin:/usr/bin:/bin \
     OMP_NUM_THREADS=1 PS1='\$ ' bash --norc --noprofile"
tmux set -t "$session" history-limit 10000 >/dev/null
sleep 1

snapshots="$work/snapshots.txt"
: > "$snapshots"
# run one command; while it runs, keep the screen's last line when it shows an ETA
run() {
    tmux send-keys -t "$session" "$1" Enter
    local seen=""
    while sleep 0.5; do
        local screen
        screen=$(tmux capture-pane -p -t "$session")
        local bar
        bar=$(printf '%s\n' "$screen" | grep -E '\[#*-+\].*[0-9]:[0-9]{2}:[0-9]{2}' | tail -1 || true)
        if [ -n "$bar" ] && [ "${bar%%[*}" != "$seen" ]; then  # one snapshot per phase
            seen="${bar%%[*}"
            printf '%s\n' "$bar" >> "$snapshots"
        fi
        # done when the last non-empty line is the prompt again
        [ "$(printf '%s\n' "$screen" | grep -v '^$' | tail -1)" = '$' ] && break
    done
}
run "ssgallery enroll ../sample_data/faces"
run "ssgallery compress --m 2"
run "ssgallery roc ../sample_data/faces --repetitions 2 -o report"

out="$repo/docs/sessions/terminal.txt"
mkdir -p "$(dirname "$out")"
{
    tmux capture-pane -p -S - -t "$session" | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}'
    printf '\n# while it ran (the bars as they were drawn, with the rate and ETA):\n'
    cat "$snapshots"
} > "$out"
echo "wrote $out"
