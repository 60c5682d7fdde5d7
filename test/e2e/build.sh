#!/usr/bin/env bash
# Builds the real kube-apiserver and etcd used by the end-to-end tests
# (test/e2e, docs/e2e.md) from the Go module proxy, with the wrapper modules
# under test/e2e/build/ and their committed go.sum files.
#
# Output: ${MUTATIS_E2E_CACHE:-<repo>/.cache/e2e}/bin/kube-apiserver-<version>
#         and .../bin/etcd-<version>. A binary that already exists for this
#         exact version and wrapper module is reused (cold build: see
#         docs/e2e.md). MUTATIS_E2E_REBUILD=1 forces a rebuild.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cache=${MUTATIS_E2E_CACHE:-$repo/.cache/e2e}
bindir=$cache/bin
mkdir -p "$bindir"

export GOTOOLCHAIN=local
# -mod=readonly: the committed go.sum is the only source of truth; the main
# module's GOFLAGS must not leak in. -buildvcs=false: the wrappers live inside
# mutatis' git tree, whose state is irrelevant to these binaries.
export GOFLAGS="-mod=readonly -buildvcs=false"
# CGO_ENABLED=0, as upstream builds kube-apiserver and etcd (static), and as
# `make dist` builds mutatis: with -trimpath and the same module versions
# (test/e2e/build/kube-apiserver/go.mod requires those of mutatis' go.mod
# where both have a module, TestE2EWrapperVersions), kube-apiserver's build
# reuses the k8s.io packages compiled for the host's release archive, about
# 1,570 of its 2,080 packages (.ci/run builds that archive first).
export CGO_ENABLED=0
GO=${GO:-go}

# module_version MODDIR MODULE prints the version MODDIR/go.mod requires of MODULE.
module_version() {
	awk -v m="$2" '$1 == m && $2 ~ /^v/ { print $2; exit } $1 == "require" && $2 == m { print $3; exit }' "$1/go.mod"
}

# stamp MODDIR: a fingerprint of everything that determines the binary.
stamp() {
	{ "$GO" env GOVERSION GOOS GOARCH CGO_ENABLED; cat "$1/go.mod" "$1/go.sum" "$1"/*.go; echo "$2"; } | sha256sum | cut -d' ' -f1
}

# build NAME MODDIR VERSION LDFLAGS
build() {
	local name=$1 dir=$2 version=$3 ldflags=$4
	local out=$bindir/$name-$version want
	want=$(stamp "$dir" "$ldflags")
	if [[ ${MUTATIS_E2E_REBUILD:-} != 1 && -x $out && -f $out.stamp && $(cat "$out.stamp") == "$want" ]]; then
		echo "e2e: $name $version: cached at $out"
		return
	fi
	echo "e2e: building $name $version into $out (cold: several minutes on 2 cores)"
	local start=$SECONDS
	(cd "$dir" && "$GO" build -trimpath -ldflags "$ldflags" -o "$out.tmp" .)
	mv -f "$out.tmp" "$out"
	echo "$want" >"$out.stamp"
	echo "e2e: built $name $version in $((SECONDS - start))s"
}

kube_dir=$repo/test/e2e/build/kube-apiserver
kube_version=$(module_version "$kube_dir" k8s.io/kubernetes)
[[ $kube_version =~ ^v([0-9]+)\.([0-9]+)\.[0-9]+$ ]] || { echo "e2e: cannot parse k8s.io/kubernetes version '$kube_version' in $kube_dir/go.mod" >&2; exit 1; }
major=${BASH_REMATCH[1]} minor=${BASH_REMATCH[2]}
# kube-apiserver refuses to start without a parseable version.
kube_ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	kube_ldflags+=" -X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done

etcd_dir=$repo/test/e2e/build/etcd
etcd_version=$(module_version "$etcd_dir" go.etcd.io/etcd/server/v3)
[[ -n $etcd_version ]] || { echo "e2e: cannot find go.etcd.io/etcd/server/v3 in $etcd_dir/go.mod" >&2; exit 1; }

build etcd "$etcd_dir" "$etcd_version" "-s -w"
build kube-apiserver "$kube_dir" "$kube_version" "$kube_ldflags"
