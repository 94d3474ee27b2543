# shellcheck shell=bash
# Login hook: an interactive ssh login lands in a PufferTank container. setup/setup.sh
# --login-hook installs it and sources it from the user's ~/.bash_profile; sourced, not run, so
# that `exec` replaces the login shell (leaving the container ends the ssh session) and so that
# when it declines the login simply goes on in the host's shell.
#
# The container (puffertank-$USER) persists between logins: tmux sessions, running jobs and
# installed packages survive a disconnect. After the image is rebuilt, the next login moves to a
# container of the new image only when that loses nothing: not while other sessions run in the old
# one, nor while it holds files of the user's that the image does not. The host home is mounted at
# /home/puffer/host. The container shares the host's network, so the ranks of a multi-node job
# reach each other.
#
# Ways out, to the host's shell: `ssh -t USER@BOX bash` (a command skips login files), or
# `touch ~/.puffertank-host` (remove it to come back). PUFFERTANK_IMAGE picks another image.

# The files container $1 holds that its image does not, one a line: what replacing it would lose
# (files in its home, packages installed in it, runs trained in it). Deletions, compiled Python,
# caches, shell histories and the runtime's own files are not the user's work, and are left out.
puffertank_own_files() {
  docker diff "$1" 2>/dev/null | awk '
    # A changed folder is listed above what changed in it: only the deepest entries are files.
    $1 != "D" { path = substr($0, 3); paths[++count] = path
                while (sub(/\/[^\/]*$/, "", path) && path != "") folder[path] = 1 }
    END { for (i = 1; i <= count; i++) if (!(paths[i] in folder)) print paths[i] }' |
    grep -Ev '(/__pycache__(/|$)|\.pyc$|^/(tmp|var/tmp|run|var/run|var/log|var/lib/sudo|var/cache)(/|$)|^/home/puffer/host$|^/home/puffer/\.(bash_history|python_history|lesshst|viminfo|sudo_as_admin_successful|wget-hsts)$|^/home/puffer/\.(cache|local/state)(/|$))'
}

puffertank_login() {
  # Only a person's interactive ssh login: not scp, not `ssh box command`, not a local console.
  [[ $- == *i* ]] && [ -n "${SSH_CONNECTION:-}" ] && [ -t 0 ] && [ -t 1 ] || return 0
  if [ -e "$HOME/.puffertank-host" ]; then
    echo "puffertank: ~/.puffertank-host exists: staying on the host"
    return 0
  fi
  local image=${PUFFERTANK_IMAGE:-puffertank/puffer:latest}
  local name=puffertank-$USER
  local reply container wanted own
  if ! command -v docker >/dev/null; then
    echo "puffertank: docker is not installed: staying on the host (see setup/setup.sh)"
    return 0
  fi
  if ! reply=$(docker info --format '{{.ServerVersion}}' 2>&1); then
    case $reply in
      *"permission denied"*)
        echo "puffertank: $USER may not use docker (sudo usermod -aG docker $USER, then log in again): staying on the host" ;;
      *)
        echo "puffertank: the docker daemon (dockerd) is not running (sudo systemctl start docker): staying on the host" ;;
    esac
    return 0
  fi
  wanted=$(docker image inspect --format '{{.Id}}' "$image" 2>/dev/null) || wanted=
  # "RUNNING IMAGE-ID" of the persistent container, or nothing when there is none.
  container=$(docker inspect --format '{{.State.Running}} {{.Image}}' "$name" 2>/dev/null) || container=
  if [ -n "$container" ] && [ -n "$wanted" ] && [ "${container#* }" != "$wanted" ]; then
    # Other logins' shells run beside the container's own `sleep infinity`: replacing it would end them.
    if [ "$(docker top "$name" -o pid 2>/dev/null | wc -l)" -gt 2 ]; then
      echo "puffertank: $image was rebuilt, but $name has other sessions running: entering it as it is (the new image once they end and you log in again, or now: docker rm -f $name)"
    elif own=$(puffertank_own_files "$name") && [ -n "$own" ]; then
      echo "puffertank: $image was rebuilt, but $name holds files of yours that its image does not ($(wc -l <<<"$own") of them, such as $(head -n 3 <<<"$own" | paste -sd ' ')): entering it as it is. Keep what you need in ~/host, then move to the new image with: docker rm -f $name, and log in again"
    else
      echo "puffertank: $image was rebuilt since $name was created: replacing $name with a container of the new image (~/host keeps your files)"
      docker rm --force "$name" >/dev/null || return 0
      container=
    fi
  fi
  if [ -z "$container" ]; then
    if [ -z "$wanted" ]; then
      echo "puffertank: no image $image (build it: make tank): staying on the host"
      return 0
    fi
    local gpus=()
    if nvidia-smi -L >/dev/null 2>&1; then gpus=(--gpus all); fi
    echo "puffertank: starting container $name from $image"
    docker run --detach --name "$name" "${gpus[@]}" --ipc host --network host --restart unless-stopped \
      --volume "$HOME:/home/puffer/host" "$image" sleep infinity >/dev/null || return 0
  elif [ "${container%% *}" = false ]; then
    docker start "$name" >/dev/null || return 0
  fi
  # A data-parallel job's settings that this login has (from ~/.bash_profile, or ssh's SendEnv):
  # torchrun's variables and options and NCCL's and gloo's. The list is pufferlib/tank/run.py's.
  local passed=() variable
  for variable in $(compgen -e); do
    case $variable in
      MASTER_ADDR | MASTER_PORT | RANK | WORLD_SIZE | LOCAL_RANK | LOCAL_WORLD_SIZE | GROUP_RANK | GROUP_WORLD_SIZE | \
        ROLE_RANK | ROLE_NAME | ROLE_WORLD_SIZE | TORCHELASTIC_RUN_ID | TORCHELASTIC_RESTART_COUNT | \
        TORCHELASTIC_MAX_RESTARTS | TORCHELASTIC_USE_AGENT_STORE | OMP_NUM_THREADS | PET_* | NCCL_* | TORCH_NCCL_* | GLOO_*)
        passed+=(--env "$variable") ;;
    esac
  done
  echo "puffertank: entering $name (exit leaves the ssh session; host shell: ssh -t ... bash, or touch ~/.puffertank-host)"
  exec docker exec "${passed[@]}" --interactive --tty "$name" /usr/local/bin/puffertank-entrypoint bash --login
}

puffertank_login
unset -f puffertank_login puffertank_own_files
