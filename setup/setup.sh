#!/usr/bin/env bash
# Sets up a fresh Debian 12 (bookworm) box to train in PufferTank: kernel headers and build
# tools, ssh, the NVIDIA driver, docker, the NVIDIA container toolkit, Tailscale, a `puffer`
# user in the docker group and, optionally, an ssh login that lands in the container.
#
# Idempotent: every step looks at the system first and changes only what is missing, so a second
# run changes nothing. Other distributions and releases are refused. A step that cannot finish (a
# download that fails, a conflicting package) says what went wrong and how to fix it; the steps that
# do not need it still run, and the script exits non-zero at the end, listing what failed.
#
# usage: sudo setup/setup.sh [options]; setup/setup.sh --help lists the options.
#
# Tunables (environment): PUFFERTANK_DOWNLOAD_TIMEOUT, the seconds a download (or a stalled apt
# connection) may take before it counts as failed (default 60), so that a network that drops
# packets fails a step instead of stalling it.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dry_run=0
gpu=auto
docker_kind=debian
tailscale=1
user=puffer
ssh_key=
login_hook=0
download_timeout=${PUFFERTANK_DOWNLOAD_TIMEOUT:-60}

# Every option, as FLAG VARIABLE VALUE HELP: a bare FLAG sets VARIABLE to VALUE; a FLAG=ARG sets it
# to what follows the '=' (VALUE is then '-'). Parsing and --help both read this list.
options=(
  "--dry-run        dry_run     1  print every step and what it would run; change nothing (root not needed)"
  "--gpu            gpu         1  install the NVIDIA driver and container toolkit (default: when an NVIDIA PCI device is present)"
  "--no-gpu         gpu         0  do not install them, even with an NVIDIA GPU present"
  "--docker=KIND    docker_kind -  debian (Debian's docker.io, default), docker-ce (Docker's repository), none"
  "--no-tailscale   tailscale   0  skip Tailscale"
  "--user=NAME      user        -  the training user (default: puffer)"
  "--ssh-key=FILE   ssh_key     -  authorize this public key for that user's ssh logins"
  "--login-hook     login_hook  1  that user's interactive ssh logins land in the PufferTank container"
)

usage() {
  echo "usage: sudo setup/setup.sh [options]"
  echo "Sets up a Debian 12 box to train in PufferTank; run it again at any time: it changes only what is missing."
  local entry flag help
  for entry in "${options[@]}"; do
    read -r flag _ _ help <<<"$entry"
    printf '  %-16s %s\n' "$flag" "$help"
  done
  printf '  %-16s %s\n' "-h, --help" "this list"
}

for arg in "$@"; do
  case $arg in -h | --help) usage; exit 0 ;; esac
  matched=0
  for entry in "${options[@]}"; do
    read -r flag variable value _ <<<"$entry"
    if [[ $flag == *=* ]]; then
      case $arg in
        "${flag%%=*}"=?*) printf -v "$variable" '%s' "${arg#*=}" ;;
        "${flag%%=*}" | "${flag%%=*}"=) echo "setup.sh: $arg needs a value: ${flag}" >&2; exit 2 ;;
        *) continue ;;
      esac
    elif [ "$arg" = "$flag" ]; then
      printf -v "$variable" '%s' "$value"
    else
      continue
    fi
    matched=1
    break
  done
  if [ "$matched" = 0 ]; then
    echo "setup.sh: unknown option '$arg' (setup.sh --help lists the options)" >&2
    exit 2
  fi
done
case $docker_kind in
  debian | docker-ce | none) ;;
  *) echo "setup.sh: --docker=$docker_kind: KIND is one of debian, docker-ce, none" >&2; exit 2 ;;
esac
if ! [[ $download_timeout =~ ^[1-9][0-9]*$ ]]; then
  echo "setup.sh: PUFFERTANK_DOWNLOAD_TIMEOUT='$download_timeout': give a whole number of seconds, such as 60" >&2
  exit 2
fi

# --- refuse what this script was not written for ------------------------------------------------
# shellcheck source=/dev/null
os_id=$(. /etc/os-release 2>/dev/null && echo "${ID:-}")
# shellcheck source=/dev/null
os_version=$(. /etc/os-release 2>/dev/null && echo "${VERSION_ID:-}")
# shellcheck source=/dev/null
os_name=$(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-unknown}")
if [ "$os_id" != debian ] || [ "$os_version" != 12 ]; then
  echo "setup.sh: refusing to run: this script sets up Debian 12 (bookworm) only, and this system is '$os_name'." >&2
  echo "  Its package names, repositories and driver packaging are Debian 12's; on another system follow its own docs." >&2
  exit 1
fi
if [ "$dry_run" = 0 ] && [ "$(id -u)" -ne 0 ]; then
  echo "setup.sh: run as root (sudo $0 $*), or add --dry-run to see the steps" >&2
  exit 1
fi
if [ -n "$ssh_key" ] && [ ! -r "$ssh_key" ]; then
  echo "setup.sh: cannot read the ssh key '$ssh_key'" >&2
  exit 2
fi
if [ "$gpu" = auto ]; then
  gpu=0
  for vendor in /sys/bus/pci/devices/*/vendor; do
    if [ "$(cat "$vendor" 2>/dev/null)" = 0x10de ]; then gpu=1; fi
  done
fi

# --- how steps report and act -------------------------------------------------------------------
arch=$(dpkg --print-architecture)
total=10
number=0
title=
changes=0
failures=()
download_error=
step_changed=0
apt_fresh=0
systemd=0
[ -d /run/systemd/system ] && systemd=1

step() {
  number=$((number + 1))
  title=$1
  step_changed=0
  printf '[%d/%d] %s\n' "$number" "$total" "$1"
}
# Records that this step could not finish: WHAT went wrong, and the FIX.
failed() {
  printf '  FAILED: %s\n  fix: %s\n' "$1" "$2"
  failures+=("[$number/$total] $title: $1. Fix: $2")
}
ok() { printf '  ok: %s\n' "$1"; }
skip() { printf '  skip: %s\n' "$1"; }
note() { printf '  note: %s\n' "$1"; }
# Counts this step as one that changed the system; called once a change is made (or, in a dry run,
# would be), never before, so that a step whose action failed is not counted.
changed() {
  if [ "$step_changed" = 0 ]; then
    changes=$((changes + 1))
    step_changed=1
  fi
}
# Prints a command, and runs it unless this is a dry run.
act() {
  if [ "$dry_run" = 1 ]; then
    printf '  would run: %s\n' "$*"
  else
    printf '  + %s\n' "$*"
    "$@"
  fi
  changed
}
# apt gives up on a connection that stalls as long as a download here may take.
apt_timeouts=(-o "Acquire::http::Timeout=$download_timeout" -o "Acquire::https::Timeout=$download_timeout")
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'ok installed'; }
apt_update() {
  [ "$apt_fresh" = 1 ] && return 0
  act apt-get update -q "${apt_timeouts[@]}"
  apt_fresh=1
}
ensure_packages() {
  local missing=() pkg
  for pkg in "$@"; do installed "$pkg" || missing+=("$pkg"); done
  if [ "${#missing[@]}" = 0 ]; then
    ok "installed: $*"
    return 0
  fi
  apt_update
  act env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${apt_timeouts[@]}" "${missing[@]}"
}
# Writes CONTENT to PATH (mode MODE) unless it already holds exactly that.
ensure_file() {
  local path=$1 mode=$2 content=$3
  if [ -f "$path" ] && [ "$(cat "$path")" = "$content" ]; then
    ok "$path is up to date"
    return 0
  fi
  if [ "$dry_run" = 1 ]; then
    printf '  would write %s\n' "$path"
  else
    printf '  + write %s\n' "$path"
    install -D -m "$mode" /dev/stdin "$path" <<<"$content"
  fi
  changed
}
# Adds TEXT at the end of PATH, which keeps what it had.
append() {
  local path=$1 text=$2
  if [ "$dry_run" = 1 ]; then
    printf '  would append to %s: %s\n' "$path" "${text//$'\n'/; }"
  else
    printf '  + append to %s\n' "$path"
    printf '%s\n' "$text" >>"$path"
  fi
  changed
}
# Fetches URL to PATH once: keys and repository lists are never rewritten behind the admin's back.
# Returns non-zero, leaving no partial file, when the download fails or takes longer than
# $download_timeout seconds; download_error then says why, in curl's words.
ensure_download() {
  local url=$1 path=$2
  local command=(curl -fsSL --connect-timeout "$((download_timeout < 15 ? download_timeout : 15))"
    --max-time "$download_timeout" "$url" -o "$path.part")
  if [ -s "$path" ]; then
    ok "$path present"
    return 0
  fi
  if [ "$dry_run" = 1 ]; then
    printf '  would run: %s\n' "${command[*]}"
    changed
    return 0
  fi
  printf '  + %s\n' "${command[*]}"
  install -d -m 0755 "$(dirname "$path")" || return 1
  if ! download_error=$("${command[@]}" 2>&1); then
    download_error=${download_error:-curl failed}
    rm -f "$path.part"
    return 1
  fi
  mv "$path.part" "$path"
  changed
}
# The fix for a download from HOST that failed.
unreachable() { echo "check that this box reaches $1 (DNS, proxy, firewall), then run setup.sh again$2"; }
# The failure of a download: WHAT could not be downloaded and curl's reason.
download_failed() { echo "could not download $1 (${download_error//$'\n'/ })"; }
# A new or changed repository makes the package lists stale.
ensure_repository() {
  ensure_file "$1" 0644 "$2"
  if [ "$step_changed" = 1 ]; then apt_fresh=0; fi
}
ensure_service() {
  if [ "$systemd" = 0 ]; then
    skip "systemd is not running here (a container?): start $1 by hand"
  elif systemctl is-enabled --quiet "$1" && systemctl is-active --quiet "$1"; then
    ok "service $1 enabled and running"
  else
    act systemctl enable --now "$1"
  fi
}

# --- the steps ----------------------------------------------------------------------------------
step "Base packages: kernel headers, build tools, ssh server, git, vim"
headers=linux-headers-$(uname -r)
# A running kernel that is not Debian's (or no longer in the archive) has no headers package of its
# own: the architecture's metapackage brings the headers of Debian's current kernel instead.
apt-cache show "$headers" >/dev/null 2>&1 || headers=linux-headers-$arch
ensure_packages "$headers" build-essential dkms openssh-server git vim curl ca-certificates sudo tmux htop

step "SSH server"
ensure_service ssh

step "Debian's contrib, non-free and non-free-firmware components (the NVIDIA driver lives there)"
if [ "$gpu" = 0 ]; then
  skip "no NVIDIA GPU (pass --gpu to install the driver anyway)"
else
  for sources in /etc/apt/sources.list /etc/apt/sources.list.d/debian.sources; do
    [ -f "$sources" ] || continue
    # One-line format: 'deb URI SUITE main ...'; deb822 format: 'Components: main ...'.
    wanted=$(awk '
      ($1 ~ /^deb(-src)?$/ && /debian/ && / main/) || /^Components:/ {
        split("contrib non-free non-free-firmware", extra, " ")
        for (i = 1; i <= 3; i++) if (index(" " $0 " ", " " extra[i] " ") == 0) $0 = $0 " " extra[i]
      }
      { print }' "$sources")
    ensure_file "$sources" 0644 "$wanted"
  done
  if [ "$step_changed" = 1 ]; then apt_fresh=0; fi
fi

step "NVIDIA driver"
if [ "$gpu" = 0 ]; then
  skip "no NVIDIA GPU"
else
  ensure_packages nvidia-driver nvidia-smi firmware-misc-nonfree
  if [ "$step_changed" = 1 ]; then note "reboot to load the driver, then check with nvidia-smi"; fi
fi

step "Docker ($docker_kind)"
# 0 when this run could not install docker: the container toolkit then waits for the next run.
docker_ok=1
case $docker_kind in
  none) skip "--docker=none" ;;
  debian)
    ensure_packages docker.io
    ensure_service docker
    ;;
  docker-ce)
    if installed docker.io; then
      failed "Debian's docker.io is installed, and it conflicts with docker-ce" \
        "apt-get remove docker.io (or keep it: --docker=debian)"
      # A dry run goes on to show what the step would do once the conflict is gone.
      if [ "$dry_run" = 0 ]; then docker_ok=0; fi
    fi
    if [ "$docker_ok" = 0 ]; then
      :
    elif ensure_download https://download.docker.com/linux/debian/gpg /etc/apt/keyrings/docker.asc; then
      ensure_repository /etc/apt/sources.list.d/docker.list \
        "deb [arch=$arch signed-by=/etc/apt/keyrings/docker.asc] https://download.docker.com/linux/debian bookworm stable"
      ensure_packages docker-ce docker-ce-cli containerd.io docker-buildx-plugin
      ensure_service docker
    else
      docker_ok=0
      failed "$(download_failed "Docker's signing key")" "$(unreachable download.docker.com ', or use --docker=debian')"
    fi
    ;;
esac

step "NVIDIA container toolkit (GPUs inside containers)"
if [ "$gpu" = 0 ] || [ "$docker_kind" = none ]; then
  skip "needs a GPU and docker"
elif [ "$docker_ok" = 0 ]; then
  skip "needs docker, which step 5 could not install"
elif ensure_download https://nvidia.github.io/libnvidia-container/gpgkey /etc/apt/keyrings/nvidia-container-toolkit.asc; then
  ensure_repository /etc/apt/sources.list.d/nvidia-container-toolkit.list \
    "deb [signed-by=/etc/apt/keyrings/nvidia-container-toolkit.asc] https://nvidia.github.io/libnvidia-container/stable/deb/$arch /"
  ensure_packages nvidia-container-toolkit
  if grep -qs '"nvidia"' /etc/docker/daemon.json; then
    ok "docker knows the nvidia runtime"
  else
    act nvidia-ctk runtime configure --runtime=docker
    if [ "$systemd" = 1 ]; then act systemctl restart docker; fi
  fi
else
  failed "$(download_failed "the NVIDIA container toolkit's signing key")" \
    "$(unreachable nvidia.github.io ', or leave the GPU steps out: --no-gpu')"
fi

step "Tailscale"
if [ "$tailscale" = 0 ]; then
  skip "--no-tailscale"
elif ensure_download https://pkgs.tailscale.com/stable/debian/bookworm.noarmor.gpg /usr/share/keyrings/tailscale-archive-keyring.gpg; then
  ensure_repository /etc/apt/sources.list.d/tailscale.list \
    "deb [signed-by=/usr/share/keyrings/tailscale-archive-keyring.gpg] https://pkgs.tailscale.com/stable/debian bookworm main"
  ensure_packages tailscale
  ensure_service tailscaled
  note "join the tailnet once with: sudo tailscale up"
else
  failed "$(download_failed "Tailscale's signing key")" "$(unreachable pkgs.tailscale.com ', or skip Tailscale: --no-tailscale')"
fi

step "User $user in the docker group"
if id "$user" >/dev/null 2>&1; then
  ok "user $user exists"
else
  act useradd --create-home --shell /bin/bash "$user"
fi
# The group exists before docker does when --docker=none; docker's packages then adopt it.
if getent group docker >/dev/null; then
  ok "group docker exists"
else
  act groupadd --system docker
fi
if id -nG "$user" 2>/dev/null | tr ' ' '\n' | grep -qx docker; then
  ok "$user is in the docker group"
else
  act usermod -aG docker "$user"
fi

# In a dry run the user may not exist yet: useradd's default home stands in.
home=/home/$user
if entry=$(getent passwd "$user"); then home=$(cut -d: -f6 <<<"$entry"); fi

step "SSH key for $user"
if [ -z "$ssh_key" ]; then
  skip "no --ssh-key given"
elif grep -qxFs "$(cat "$ssh_key")" "$home/.ssh/authorized_keys"; then
  ok "key already authorized"
else
  act install -d -m 0700 -o "$user" -g "$user" "$home/.ssh"
  append "$home/.ssh/authorized_keys" "$(cat "$ssh_key")"
  act chown "$user:$user" "$home/.ssh/authorized_keys"
  act chmod 0600 "$home/.ssh/authorized_keys"
fi

step "Login hook: ssh $user@this-box lands in the PufferTank container"
if [ "$login_hook" = 0 ]; then
  skip "no --login-hook given"
else
  ensure_file /usr/local/share/puffertank/login_hook.sh 0644 "$(cat "$here/../scripts/login_hook.sh")"
  hook_line='. /usr/local/share/puffertank/login_hook.sh'
  if grep -qsxF "$hook_line" "$home/.bash_profile"; then
    ok "$home/.bash_profile sources the hook"
  elif [ -f "$home/.bash_profile" ]; then
    append "$home/.bash_profile" "$hook_line"
  else
    # A new ~/.bash_profile hides ~/.profile from bash, so it sources ~/.profile first.
    append "$home/.bash_profile" "[ -f ~/.profile ] && . ~/.profile
$hook_line"
    act chown "$user:$user" "$home/.bash_profile"
  fi
  note "way out: 'ssh -t $user@box bash' (a command skips the hook), or touch ~/.puffertank-host"
fi

steps_word=steps
if [ "$changes" = 1 ]; then steps_word=step; fi
if [ "$dry_run" = 1 ]; then
  echo "setup.sh (dry run): $changes $steps_word would change this system"
else
  echo "setup.sh: $changes $steps_word changed this system"
fi
if [ "${#failures[@]}" -gt 0 ]; then
  echo "setup.sh: ${#failures[@]} of $total steps could not finish; the others ran:" >&2
  printf '  %s\n' "${failures[@]}" >&2
  exit 1
fi
