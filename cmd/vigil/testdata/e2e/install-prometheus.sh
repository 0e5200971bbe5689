#!/usr/bin/env bash
# Installs Prometheus (the Debian package, which also provides promtool) for
# cmd/vigil's end-to-end test and the metrics lint, when either is missing.
set -euo pipefail

if command -v prometheus >/dev/null && command -v promtool >/dev/null; then
	echo "prometheus: $(command -v prometheus) already installed"
	exit 0
fi

sudo=()
if [[ $(id -u) -ne 0 ]]; then
	sudo=(sudo)
fi

echo "prometheus: apt-get install prometheus"
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends prometheus >/dev/null
echo "prometheus: installed $(command -v prometheus)"
