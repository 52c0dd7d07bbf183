#!/usr/bin/env bash
# Installs what csrun needs to build, from Debian packages only; with --test, also what the test
# suite needs (Clang 16 and its sanitizer and libFuzzer runtimes, qemu-user to run csrun on older
# CPUs).
# Idempotent and non-interactive: packages already present are left alone.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config help2man
  libcli11-dev libyaml-cpp-dev nlohmann-json3-dev libspdlog-dev libfmt-dev
  libeigen3-dev libopenblas-dev libdnnl-dev libxbyak-dev catch2 libhdf5-dev libzmq3-dev cppzmq-dev python3
  libopenmpi-dev openmpi-bin
  # oneDNN's CMake configuration looks for OpenCL (Debian builds its GPU runtime on it), and
  # libdnnl-dev only recommends the package, which --no-install-recommends leaves out.
  ocl-icd-opencl-dev
)
case ${1:-} in
  --test) packages+=(clang-16 libclang-rt-16-dev qemu-user) ;;
  "") ;;
  *) echo "setup.sh: unknown option $1 (valid: --test)" >&2; exit 2 ;;
esac

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages are installed"
  exit 0
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "setup: missing packages: ${missing[*]}" >&2
    echo "setup: run this script as root, or install them with apt-get" >&2
    exit 1
  fi
  sudo_cmd=(sudo)
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
