#!/usr/bin/env bash
# Stop the single-node SLURM cluster that ci/slurm/start.sh started: exactly the daemons named
# in its PID files under $GALU_SLURM_STATE (default /tmp/galu-slurm), by PID, in the reverse
# order of starting. A PID is only signalled while it still belongs to the expected program,
# so a stale PID file never kills an unrelated process. The links start.sh made in /etc/slurm
# are removed; the state directory is kept (logs).
set -euo pipefail

STATE=${GALU_SLURM_STATE:-/tmp/galu-slurm}
DAEMONS=(slurmd slurmctld slurmdbd mariadbd munged)

# The PID in $1's PID file, if that process is still $1; else nothing.
our_pid() {
    local pidfile=$STATE/run/$1.pid pid
    [[ -s $pidfile ]] || return 0
    pid=$(<"$pidfile")
    [[ $pid =~ ^[0-9]+$ && -r /proc/$pid/comm && $(</proc/"$pid"/comm) == "$1"* ]] || return 0
    # A zombie has exited already; only PID 1 can reap it.
    [[ $(awk '{print $3}' /proc/"$pid"/stat 2>/dev/null) == Z ]] || echo "$pid"
}

status=0
for daemon in "${DAEMONS[@]}"; do
    pid=$(our_pid "$daemon")
    if [[ -n $pid ]]; then
        kill -TERM "$pid" 2>/dev/null || true
        # Give it 15 s to shut down cleanly (mariadbd flushes its tables), then insist.
        for ((i = 0; i < 75; i++)); do
            [[ -n $(our_pid "$daemon") ]] || break
            sleep 0.2
        done
        if [[ -n $(our_pid "$daemon") ]]; then
            echo "galu-slurm: $daemon ($pid) ignored SIGTERM; sending SIGKILL" >&2
            kill -KILL "$pid" 2>/dev/null || status=1
        fi
        echo "galu-slurm: stopped $daemon ($pid)" >&2
    fi
    rm -f "$STATE/run/$daemon.pid"
done
for conf in slurm.conf gres.conf slurmdbd.conf; do
    if [[ -L /etc/slurm/$conf && $(readlink "/etc/slurm/$conf") == "$STATE/etc/$conf" ]]; then
        rm -f "/etc/slurm/$conf"
    fi
done
exit "$status"
