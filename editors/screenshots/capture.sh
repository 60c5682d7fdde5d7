#!/bin/sh
# Captures the screenshots of docs/editors.md from a real session: Neovim's
# built-in LSP client talking to `mutatis lsp` on examples/sidecar-injection
# (one field misspelt, for the diagnostic), in a tmux pane of 100x28
# cells, each screen read back with its colours (tmux capture-pane -e) and
# written as SVG by ansi2svg.go. `make screenshots` runs it; it needs nvim
# (0.7 or later) and tmux (apt-get install neovim tmux) and is not part of
# CI. Output: docs/images/lsp-{diagnostic,completion,hover}.svg.
set -eu
repo=$(cd "$(dirname "$0")/../.." && pwd)
for tool in nvim tmux go; do
  command -v "$tool" >/dev/null 2>&1 || { echo "screenshots: $tool not found (apt-get install neovim tmux)" >&2; exit 1; }
done
work=$(mktemp -d)
trap 'for s in diagnostic completion hover; do tmux -L "mutatis-shots-$s" kill-server 2>/dev/null || true; done; rm -rf "$work"' EXIT
go build -o "$work/mutatis" "$repo/cmd/mutatis"
cp -r "$repo/examples/sidecar-injection" "$work/ws"
sed -i 's/!object.spec.containers.exists/!object.spec.containerz.exists/' "$work/ws/policy.yaml"
mkdir -p "$repo/docs/images"
shot() { # name marker
  rm -f "$work/ready"
  tmux -L "mutatis-shots-$1" -f /dev/null new-session -d -x 100 -y 28 \
    env TERM=tmux-256color SHOT="$1" MARKER="$2" POLICY="$work/ws/policy.yaml" ROOT="$work/ws" \
    MUTATIS="$work/mutatis" READY="$work/ready" XDG_CONFIG_HOME="$work/cfg" XDG_DATA_HOME="$work/data" XDG_STATE_HOME="$work/state" \
    nvim --clean -n -c "luafile $repo/editors/screenshots/shot.lua"
  i=0
  while [ ! -f "$work/ready" ]; do
    i=$((i + 1)); [ "$i" -lt 600 ] || { echo "screenshots: $1 did not get ready" >&2; exit 1; }
    sleep 0.2
  done
  tmux -L "mutatis-shots-$1" capture-pane -e -p -t 0 > "$work/$1.ansi"
  tmux -L "mutatis-shots-$1" kill-server 2>/dev/null || true
  go run "$repo/editors/screenshots/ansi2svg.go" -cols 100 -rows 28 -title "mutatis lsp in Neovim: $1" < "$work/$1.ansi" > "$repo/docs/images/lsp-$1.svg"
  echo "docs/images/lsp-$1.svg"
}
shot diagnostic ''
shot completion 'object.spec.'
shot hover '!object.spec'
