#!/usr/bin/env bash
# Installs the Debian packages named as arguments that are not installed yet (as root; runs
# apt-get update first only when something is missing). Used by tests/run_tests.sh,
# bench/run_bench.sh and .ci/run, so each works on a fresh Debian 12 machine.
set -euo pipefail
missing=()
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
