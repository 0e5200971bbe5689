#!/usr/bin/env bash
# Builds the Jaeger v2 all-in-one binary used by cmd/vigil's end-to-end test
# (TestE2EPrometheusAndJaeger) and caches it as $(go env GOPATH)/bin/jaeger-v1.76.0.
#
# `go install github.com/jaegertracing/jaeger/cmd/jaeger@VERSION` does not work
# because Jaeger's go.mod has replace directives, so the module is downloaded
# into the module cache, copied to a writable temporary directory and built
# there. A cold build takes ~7-10 minutes on 2 cores; when the binary already
# exists this script does nothing.
set -euo pipefail

GO=${GO:-go}
JAEGER_MODULE=github.com/jaegertracing/jaeger
JAEGER_VERSION=${JAEGER_VERSION:-v1.76.0}

gopath_bin="$("$GO" env GOPATH | cut -d: -f1)/bin"
bin="$gopath_bin/jaeger-$JAEGER_VERSION"

if [[ -x "$bin" ]]; then
	echo "jaeger: $bin already built"
	exit 0
fi

echo "jaeger: downloading $JAEGER_MODULE@$JAEGER_VERSION"
dir="$("$GO" mod download -json "$JAEGER_MODULE@$JAEGER_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
if [[ -z "$dir" || ! -d "$dir" ]]; then
	echo "jaeger: go mod download did not report the module's directory" >&2
	exit 1
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -R "$dir" "$work/src"
chmod -R u+w "$work/src"

mkdir -p "$gopath_bin"
echo "jaeger: building $bin (several minutes on a cold build cache)"
start=$SECONDS
(cd "$work/src" && "$GO" build -o "$bin.tmp" ./cmd/jaeger)
mv "$bin.tmp" "$bin"
echo "jaeger: built $bin in $((SECONDS - start))s"
