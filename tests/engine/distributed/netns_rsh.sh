#!/bin/sh
# mpirun's remote shell for tests/engine/distributed/two_hosts_test.sh: a
# "host" is an address inside one of the test's network namespaces
# (ARCH_NETNS_HOSTS="ADDR=NAMESPACE ..."); the command runs there. Each
# launch is logged to $ARCH_NETNS_LOG.
host=$1
shift
for pair in $ARCH_NETNS_HOSTS; do
  if [ "${pair%%=*}" = "$host" ]; then
    echo "$host ${pair#*=}" >> "$ARCH_NETNS_LOG"
    exec ip netns exec "${pair#*=}" sh -c "$*"
  fi
done
echo "netns_rsh: no namespace for host $host" >&2
exit 1
