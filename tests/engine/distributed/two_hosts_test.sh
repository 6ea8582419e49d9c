#!/usr/bin/env bash
# Two hosts for real: ranks in two network namespaces joined by a veth pair,
# talking TCP only (no shared memory), launched through netns_rsh.sh as
# mpirun would through ssh. Tensor and pipeline splits give one process's
# greedy tokens. Exit 77 (skipped, said loudly) where this machine cannot
# make namespaces; CI runs as root, where it can.
#   two_hosts_test.sh ARCHRUN GOLDEN_DIR
set -euo pipefail
ARCHRUN=$1
GOLDEN=$2
HERE=$(cd "$(dirname "$0")" && pwd)
if ! command -v mpirun > /dev/null; then echo "!!! SKIPPED: mpirun is absent: the two-host test did NOT run !!!"; exit 77; fi
if [ ! -d "$GOLDEN" ]; then echo "!!! SKIPPED: $GOLDEN is absent: the two-host test did NOT run !!!"; exit 77; fi
id=$$
A=archA-$id B=archB-$id
net=10.$((200 + id % 50)).$((id / 50 % 250)).
WORK=$(mktemp -d)
cleanup() {
  ip netns del "$A" 2> /dev/null || true
  ip netns del "$B" 2> /dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
if ! ip netns add "$A" 2> "$WORK/err"; then
  echo "!!! SKIPPED: cannot make a network namespace here ($(cat "$WORK/err")): the two-host test did NOT run !!!"
  exit 77
fi
ip netns add "$B"
ip link add "va$id" type veth peer name "vb$id"
ip link set "va$id" netns "$A"
ip link set "vb$id" netns "$B"
ip -n "$A" addr add "${net}1/24" dev "va$id"
ip -n "$B" addr add "${net}2/24" dev "vb$id"
for ns in "$A" "$B"; do ip -n "$ns" link set lo up; done
ip -n "$A" link set "va$id" up
ip -n "$B" link set "vb$id" up

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export ARCH_NETNS_HOSTS="${net}1=$A ${net}2=$B" ARCH_NETNS_LOG="$WORK/launched"
printf '%s slots=1\n%s slots=1\n' "${net}1" "${net}2" > "$WORK/hosts"
want=$("$ARCHRUN" generate "$GOLDEN" --ids 1,438,309,258,92 -n 12 --greedy --json | tail -1)
status=0
for split in tensor pipeline; do
  got=$(timeout 120 ip netns exec "$A" mpirun --hostfile "$WORK/hosts" -np 2 \
    --mca plm_rsh_agent "$HERE/netns_rsh.sh" --mca btl tcp,self \
    --mca btl_tcp_if_include "${net}0/24" --mca oob_tcp_if_include "${net}0/24" --mca mpi_yield_when_idle 1 \
    -x OMPI_ALLOW_RUN_AS_ROOT -x OMPI_ALLOW_RUN_AS_ROOT_CONFIRM \
    "$ARCHRUN" generate "$GOLDEN" --ids 1,438,309,258,92 -n 12 --greedy --json --split $split 2> "$WORK/stderr" | tail -1) || true
  if [ "$got" != "$want" ]; then
    echo "FAIL: --split $split over two namespaces gave '$got', one process '$want'"
    cat "$WORK/stderr"
    status=1
  else
    echo "ok: --split $split over TCP between $A and $B: $got"
  fi
done
# The second host was reached through its namespace, not this one.
if ! grep -q "${net}2 $B" "$WORK/launched"; then
  echo "FAIL: rank 1 was not launched in namespace $B"
  status=1
fi
exit $status
