#!/usr/bin/env bash
# The shard benchmark (ray_shards.py) with Ray nodes in separate network namespaces of this
# machine, so that every Ray message between the driver and the shard actors crosses a
# (virtual) network: veth pairs on a private bridge, addresses in 10.77.0.0/24.
#
#   root namespace:  bridge qpybr0, 10.77.0.1/24
#   qpy-head:        10.77.0.2   ray head (--num-cpus 0: runs nothing) and the benchmark driver
#   qpy-w1..qpy-wN:  10.77.0.1x  ray worker nodes (1 CPU each, custom resource qpy_worker),
#                                where the build tasks and the shard actors run (SPREAD)
#
# The head lives in its own namespace rather than in the root one so that teardown can end
# exactly the processes this script started: everything in the qpy-* namespaces (their pids
# from `ip netns pids`), and nothing else on the machine (no `ray stop`, which kills every Ray
# process by name). The trap tears everything down however the script ends.
#
# Needs root (ip netns, veth, bridge) and the test venv (scripts/python-tests.sh).
#   crates/quarry-py/bench/netns.sh                        # full W2, 4 worker namespaces
#   WORKERS=2 crates/quarry-py/bench/netns.sh --docs 20000 --queries 50
# Arguments go to ray_shards.py. Output: the Markdown table (also in $OUT, default
# /tmp/qpy-netns/report.md).
set -euo pipefail
cd "$(dirname "$0")/../../.."
REPO=$PWD
PY=$REPO/target/pyvenv/bin/python
RAY=$REPO/target/pyvenv/bin/ray
WORKERS=${WORKERS:-4}
BR=qpybr0
NET=10.77.0
HEAD_IP=$NET.2
PORT=6379
STATE=${STATE:-/tmp/qpy-netns}
OUT=${OUT:-$STATE/report.md}
NSES=(qpy-head)
for i in $(seq 1 "$WORKERS"); do NSES+=("qpy-w$i"); done

[[ $(id -u) == 0 ]] || { echo "netns.sh: needs root (ip netns)" >&2; exit 2; }
[[ -x $PY && -x $RAY ]] || { echo "netns.sh: no venv at $PY; run scripts/python-tests.sh first" >&2; exit 2; }

teardown() {
  set +e
  for ns in "${NSES[@]}"; do
    if ip netns list | grep -qw "$ns"; then
      pids=$(ip netns pids "$ns")
      [[ -n $pids ]] && kill $pids 2>/dev/null
    fi
  done
  sleep 2
  for ns in "${NSES[@]}"; do
    if ip netns list | grep -qw "$ns"; then
      pids=$(ip netns pids "$ns")
      [[ -n $pids ]] && kill -9 $pids 2>/dev/null
      ip netns del "$ns"
    fi
  done
  ip link del "$BR" 2>/dev/null
  rm -f "$STATE/ray/ray_current_cluster"
  echo "netns.sh: torn down (${NSES[*]}, $BR)" >&2
}
trap teardown EXIT INT TERM

if ip link show "$BR" >/dev/null 2>&1; then
  echo "netns.sh: $BR exists already (another run?); stop it first" >&2
  trap - EXIT INT TERM
  exit 2
fi
mkdir -p "$STATE"
ip link add "$BR" type bridge
ip addr add "$NET.1/24" dev "$BR"
ip link set "$BR" up
n=0
for ns in "${NSES[@]}"; do
  if [[ $ns == qpy-head ]]; then addr=$HEAD_IP; else n=$((n + 1)); addr=$NET.$((10 + n)); fi
  ip netns add "$ns"
  ip link add "v-$ns" type veth peer name eth0 netns "$ns"
  ip link set "v-$ns" master "$BR" up
  ip netns exec "$ns" ip link set lo up
  ip netns exec "$ns" ip addr add "$addr/24" dev eth0
  ip netns exec "$ns" ip link set eth0 up
  ip netns exec "$ns" ip route add default via "$NET.1"
done
# Shows the path crosses the bridge: the head reaches worker 1 over eth0, not loopback.
ip netns exec qpy-head ip route get "$NET.11" >&2

# Ray's token authentication, with a token of this run only (in the environment of every Ray
# process and of the driver; nothing written to ~/.ray).
export RAY_AUTH_MODE=token
RAY_AUTH_TOKEN=$("$PY" -c 'import secrets; print(secrets.token_hex(32))')
export RAY_AUTH_TOKEN
# Its own temp dir: `ray start --head` records the cluster address there (ray_current_cluster),
# and a later plain ray.init() on this machine must not find a torn-down cluster in /tmp/ray.
common=(--temp-dir "$STATE/ray" --object-store-memory $((400 * 1024 * 1024)) --disable-usage-stats)
ip netns exec qpy-head "$RAY" start --head --node-ip-address "$HEAD_IP" --port "$PORT" \
  --num-cpus 0 --include-dashboard false "${common[@]}" >"$STATE/head.log" 2>&1 ||
  { cat "$STATE/head.log" >&2; exit 1; }
n=0
for ns in "${NSES[@]:1}"; do
  n=$((n + 1))
  ip netns exec "$ns" "$RAY" start --address "$HEAD_IP:$PORT" --node-ip-address "$NET.$((10 + n))" \
    --num-cpus 1 --resources '{"qpy_worker": 1}' "${common[@]}" >"$STATE/$ns.log" 2>&1 ||
    { cat "$STATE/$ns.log" >&2; exit 1; }
done
ip netns exec qpy-head "$RAY" status --address "$HEAD_IP:$PORT" >&2 || true

# The driver runs in the head's namespace (a Ray driver needs a raylet on its own address).
ip netns exec qpy-head env RAY_ADDRESS= "$PY" crates/quarry-py/bench/ray_shards.py \
  --address "$HEAD_IP:$PORT" --actor-resource qpy_worker --spread --label "netns, $WORKERS worker namespaces" \
  --work "$STATE/work" --out "$OUT" "$@"
