#!/bin/sh
# Runs a program on a test host made by test/helpers/hosts.ts, as ssh runs one on a real host:
#
#   netns-agent.sh HOST PROGRAM [ARGS...]
#
# HOST is the host's IPv4 address; its network namespace is named after it (10.77.3.2 -> wp-10-77-3-2), so
# this script keeps no state. PROGRAM is exec'd inside the namespace with ARGS as they are (no remote shell
# splits them again), with our environment, working folder, stdin, stdout and stderr, so signals reach it and
# its exit status is ours. An unknown host is reported on stderr with status 255, as ssh does.
set -eu

if [ "$#" -lt 2 ]; then
  echo "usage: netns-agent.sh HOST PROGRAM [ARGS...]" >&2
  exit 255
fi
host=$1
shift

case $host in
  "" | *[!0-9.]*) ns="" ;;
  *) ns="wp-$(printf '%s' "$host" | tr . -)" ;;
esac
if [ -z "$ns" ] || [ ! -e "/run/netns/$ns" ]; then
  echo "netns-agent.sh: unknown host $host (no test host has that address)" >&2
  exit 255
fi
exec ip netns exec "$ns" "$@"
