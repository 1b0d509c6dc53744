#!/usr/bin/env bash
# deps.sh: installs the Debian 12 packages libpprof needs that are missing.
# Usage: scripts/deps.sh [extra-package ...]   (run as root; a no-op when all are present)
set -euo pipefail
pkgs=(gcc g++ make cmake pkg-config curl ca-certificates
      libmicrohttpd-dev zlib1g-dev libprotobuf-c-dev protobuf-c-compiler
      libdw-dev libelf-dev libgnutls28-dev libcurl4-gnutls-dev golang-go "$@")
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # postfix (test_postfix runs private instances): no system mail setup
  echo "postfix postfix/main_mailer_type select No configuration" | debconf-set-selections
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
