#!/usr/bin/env bash
# Builds native-vector-store 0.4.0 (npm) from the C++ source in its npm package, under target/nvs/:
# its prebuilt Linux addon needs GLIBCXX_3.4.32 (a newer libstdc++ than this machine's) and
# libgomp. node-gyp uses the headers of the installed node (--nodedir), so it downloads nothing.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/target/nvs"
mkdir -p "$out"
cd "$out"
if [ ! -f package/package.json ]; then
    npm pack native-vector-store@0.4.0 --silent
    tar xzf native-vector-store-0.4.0.tgz
fi
# Only what the build needs, next to the package (node resolves ../node_modules): npm install in
# the package would resolve its dev dependencies too (prebuildify-cross, jsdoc), which is slow.
if [ ! -x node_modules/.bin/node-gyp ]; then
    echo '{"name": "nvs-build", "private": true}' > package.json
    npm install --ignore-scripts --no-audit --no-fund --silent node-addon-api@7 node-gyp@10
fi
cd package
nodedir="$(dirname "$(dirname "$(readlink -f "$(command -v node)")")")"
../node_modules/.bin/node-gyp rebuild --nodedir="$nodedir" >&2
ls -la build/Release/vector_store.node
