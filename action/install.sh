#!/usr/bin/env bash
# Installs a mutatis release archive (action.yml, docs/ci.md): downloads the
# archive of this runner's platform and the release's SHA256SUMS, refuses an
# archive whose checksum differs, extracts the binary into
# MUTATIS_INSTALL_DIR and adds that directory to GITHUB_PATH.
#
#   MUTATIS_VERSION      the release, e.g. v0.1.0 (required)
#   MUTATIS_BASE_URL     where releases are (default: GitHub releases of
#                        mutatis-dev/mutatis); <base>/<version>/<file>
#   MUTATIS_INSTALL_DIR  default: $RUNNER_TEMP/mutatis-<version>
set -euo pipefail

version=${MUTATIS_VERSION:?MUTATIS_VERSION (the action input version) is required, e.g. v0.1.0}
base=${MUTATIS_BASE_URL:-https://github.com/mutatis-dev/mutatis/releases/download}
dir=${MUTATIS_INSTALL_DIR:-${RUNNER_TEMP:-/tmp}/mutatis-$version}

case "$(uname -s)" in
  Linux) os=linux ;;
  Darwin) os=darwin ;;
  MINGW* | MSYS* | CYGWIN*) os=windows ;;
  *) echo "mutatis: no release for $(uname -s)" >&2; exit 1 ;;
esac
case "$(uname -m)" in
  x86_64 | amd64) arch=amd64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) echo "mutatis: no release for $(uname -m)" >&2; exit 1 ;;
esac
archive=mutatis_${version}_${os}_${arch}.tar.gz
bin=mutatis
if [ "$os" = windows ]; then
  archive=mutatis_${version}_${os}_${arch}.zip
  bin=mutatis.exe
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fetch() { curl -fsSL --retry 3 --max-time 300 -o "$tmp/$1" "$base/$version/$1"; }
fetch SHA256SUMS
fetch "$archive"

want=$(awk -v f="$archive" '$2 == f { print $1 }' "$tmp/SHA256SUMS")
if [ -z "$want" ]; then
  echo "mutatis: SHA256SUMS of $version does not list $archive" >&2
  exit 1
fi
if command -v sha256sum > /dev/null; then
  got=$(sha256sum "$tmp/$archive" | awk '{ print $1 }')
else
  got=$(shasum -a 256 "$tmp/$archive" | awk '{ print $1 }')
fi
if [ "$got" != "$want" ]; then
  echo "mutatis: checksum mismatch for $archive: got $got, SHA256SUMS says $want" >&2
  exit 1
fi

mkdir -p "$dir"
if [ "$os" = windows ]; then
  unzip -o -q "$tmp/$archive" "$bin" -d "$dir"
else
  tar -xzf "$tmp/$archive" -C "$dir" "$bin"
fi
chmod +x "$dir/$bin"
if [ -n "${GITHUB_PATH:-}" ]; then
  echo "$dir" >> "$GITHUB_PATH"
fi
"$dir/$bin" version
