#!/usr/bin/env bash
# Installs the Debian packages the tests use, when missing: Prometheus
# (which also provides promtool) for cmd/vigil's end-to-end test and the
# metrics lint, and Chromium for the browser test of /debug/vigil
# (TestDebugPageInBrowser, driven with chromedp; under CI=true it fails
# without a browser), and redis-server and nginx for the shared-session
# tests (replicas on one Redis behind a round-robin proxy).
set -euo pipefail

pkgs=()
if command -v prometheus >/dev/null && command -v promtool >/dev/null; then
	echo "prometheus: $(command -v prometheus) already installed"
else
	pkgs+=(prometheus)
fi
if command -v chromium >/dev/null; then
	echo "chromium: $(command -v chromium) already installed"
else
	pkgs+=(chromium)
fi
if command -v redis-server >/dev/null; then
	echo "redis-server: $(command -v redis-server) already installed"
else
	pkgs+=(redis-server)
fi
if command -v nginx >/dev/null || [[ -x /usr/sbin/nginx ]]; then
	echo "nginx: $(command -v nginx || echo /usr/sbin/nginx) already installed"
else
	pkgs+=(nginx)
fi
if [[ ${#pkgs[@]} -eq 0 ]]; then
	exit 0
fi

sudo=()
if [[ $(id -u) -ne 0 ]]; then
	sudo=(sudo)
fi

echo "system-deps: apt-get install ${pkgs[*]}"
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
for p in "${pkgs[@]}"; do
	echo "$p: installed"
done
