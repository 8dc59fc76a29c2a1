#!/usr/bin/env bash
# deps.sh: installs the Debian 12 packages hixl builds and tests with, if any
# is missing. Sourced by demo.sh and test.sh; safe to run on its own.
set -euo pipefail

HIXL_DEBS=(
  cmake g++ make pkg-config
  libgtest-dev nlohmann-json3-dev libcli11-dev
  pybind11-dev python3-pybind11 python3-dev python3-numpy python3-pytest python3-pytest-timeout python3-setuptools
  python3-torch
  python3-matplotlib
  libucx-dev ucx-utils
  libssl-dev
  iproute2 nftables
)

hixl_install_deps() {
  local missing=()
  for p in "${HIXL_DEBS[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "installing Debian packages: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  hixl_install_deps
fi
