# Sourced by scripts/setup.sh and scripts/fuzz.sh: collect what is missing (want APT_PACKAGE
# DESCRIPTION), then install it with apt-get (install_missing), saying what and why.
say() { echo "${say_prefix:-setup}: $*" >&2; }

# ---- what is missing: apt package names, and what each stands for ---------------------------
apt_need=()
missing=()
want() { apt_need+=("$1"); missing+=("$2"); }
listed() { local IFS=','; echo "$*" | sed 's/,/, /g'; }

install_missing() {
  [ ${#apt_need[@]} -eq 0 ] && return 0
  say "missing: $(listed "${missing[@]}")"
  if ! command -v apt-get >/dev/null 2>&1; then
    say "no apt-get here: install $(listed "${missing[@]}") yourself (CMake packages can live anywhere CMAKE_PREFIX_PATH points)"
    exit 1
  fi
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { say "installing ${apt_need[*]} needs root (no sudo found)"; exit 1; }
    sudo="sudo"
  fi
  say "installing ${apt_need[*]} with apt-get"
  if ! { $sudo apt-get update -qq &&
         DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${apt_need[@]}" >/dev/null; }; then
    say "apt-get could not install ${apt_need[*]} (no network or no such package?)."
    say "install these yourself, then run scripts/$(basename "$0") again: $(listed "${missing[@]}")"
    [[ " ${apt_need[*]} " == *" cmake "* ]] && say "(a recent CMake and Ninja also come from pip: pip install cmake ninja)"
    exit 1
  fi
  apt_need=(); missing=()
}
