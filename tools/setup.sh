#!/usr/bin/env bash
# Installs what Archetype needs on Debian 12, builds it, and runs the main
# job on the embedded default model (a tiny random-weight Llama the tool
# writes itself, so nothing is downloaded).
#   bash tools/setup.sh            install + build + demo
#   SKIP_APT=1 bash tools/setup.sh build + demo only
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ccache pkg-config
  tao-pegtl-dev libtomlplusplus-dev libyaml-cpp-dev libdnnl-dev libhwy-dev
  libgtest-dev libbenchmark-dev libcli11-dev nlohmann-json3-dev ocl-icd-opencl-dev libstb-dev
  libpcre2-dev libutf8proc-dev libsentencepiece-dev graphviz
  libsndfile1-dev libfftw3-dev libsoxr-dev zlib1g-dev sox
  libcpp-httplib-dev libssl-dev libgif-dev libavformat-dev libavcodec-dev libavutil-dev
  libopenmpi-dev openmpi-bin iproute2
)

if [ -z "${SKIP_APT:-}" ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "== installing Debian packages: ${PACKAGES[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${PACKAGES[@]}"
  # node runs the server's tests through the openai client; a node already
  # installed (with its own npm) is kept.
  command -v node > /dev/null || DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q nodejs npm
fi

echo "== configuring and building (build/)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j"${JOBS:-2}"

echo "== the openai client for the server's tests (npm registry, into build/serve-client)"
if command -v npm > /dev/null; then
  (cd build/serve-client && npm ci --no-audit --no-fund --loglevel=error) ||
    echo "!!! npm ci failed: the openai client tests will skip (and fail in CI)"
fi

echo "== the main job: a story from the default model (stories260K, a real TinyStories model, read from its GGUF file)"
./build/archrun info
./build/archrun generate -p "Once upon a time" -n 200
