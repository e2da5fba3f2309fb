#!/usr/bin/env bash
# `diffusiondesk-cli batch` on a real Slurm (Debian's slurm-wlm): munged, slurmctld and slurmd on this machine
# with a generated configuration, a 12-job batch submitted as an array of 3 shards, one task cancelled
# (scancel) while it runs and resubmitted alone; then every image exists exactly once, each with its sidecar.
# The script of docs/farm.md is the one submitted.
#   usage: test_slurm.sh CLI SOURCE_DIR
set -euo pipefail
cli="$(realpath "$1")"
src="$(realpath "$2")"
work="$(mktemp -d /tmp/dd-slurm.XXXXXX)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL  $*" >&2; for f in "$work"/log/*; do echo "--- $f"; tail -20 "$f"; done >&2; exit 1; }
ok() { echo "ok    $*"; }
for tool in munged slurmctld slurmd sbatch squeue scancel; do
  command -v "$tool" >/dev/null || fail "$tool is missing (scripts/setup.sh installs slurm-wlm and munge)"
done

mkdir -p "$work"/{munge,state,spool,log,out}
chmod 700 "$work/munge"
# munged refuses to run as root and checks its files' owners: --force, and files only their owner can read.
head -c 1024 /dev/urandom > "$work/munge/key"
chmod 400 "$work/munge/key"
munged --force --socket="$work/munge/sock" --key-file="$work/munge/key" --pid-file="$work/munge/pid" \
  --log-file="$work/log/munged.log" --seed-file="$work/munge/seed"
pids+=("$(cat "$work/munge/pid")")

host="$(hostname -s)"
port=$((20000 + RANDOM % 20000))  # two ctest runs side by side must not share ports
export SLURM_CONF="$work/slurm.conf"
cat > "$SLURM_CONF" <<EOF
ClusterName=dd
SlurmctldHost=$host(127.0.0.1)
SlurmUser=$(id -un)
SlurmdUser=$(id -un)
AuthType=auth/munge
AuthInfo=socket=$work/munge/sock
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
SlurmctldPort=$port
SlurmdPort=$((port + 1))
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=dd Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF
slurmctld -D -i > "$work/log/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D > "$work/log/slurmd.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do sinfo -h -o %T 2>/dev/null | grep -q idle && break; sleep 0.2; done
sinfo -h -o %T | grep -q idle || fail "the Slurm node did not come up"
ok "munged, slurmctld and slurmd run on $host (port $port)"

# 12 jobs on the tiny demo model, slow enough (steps) that a task can be cancelled while it works.
jobs="$work/jobs.jsonl"
for i in $(seq 1 12); do
  echo "{\"model\": \"demo:tiny-sd1\", \"prompt\": \"farm $i\", \"seed\": $((500 + i)), \"steps\": 40, \"width\": 64, \"height\": 64}"
done > "$jobs"
script="$src/docs/farm/batch.sbatch"
export DD_CLI="$cli" DD_JOBS="$jobs" DD_OUT="$work/out" DD_SHARDS=3
array="$(sbatch --parsable --array=0-2 --output="$work/log/task-%a.log" "$script")"
ok "submitted array $array (3 shards over 12 jobs)"

# Cancel task 1 once it has made an image and is working on the next.
journal="$work/out/.diffusiondesk-batch-jobs-shard-1-of-3.jsonl"
for _ in $(seq 600); do
  [ -f "$journal" ] && [ "$(grep -c '"event":"done"' "$journal")" -ge 1 ] && tail -1 "$journal" | grep -q '"event":"start"' && break
  sleep 0.05
done
scancel "${array}_1"
ok "scancel ${array}_1 while it ran"
for _ in $(seq 1200); do [ -z "$(squeue -h -j "$array" 2>/dev/null)" ] && break; sleep 0.1; done
[ -z "$(squeue -h -j "$array")" ] || fail "the array did not finish"
made="$(ls "$work/out"/*.png | wc -l)"
[ "$made" -lt 12 ] || fail "task 1 finished before it was cancelled ($made images)"
ok "after the cancel: $made of 12 images"

again="$(sbatch --parsable --array=1 --output="$work/log/task-1-again.log" "$script")"
for _ in $(seq 1200); do [ -z "$(squeue -h -j "$again" 2>/dev/null)" ] && break; sleep 0.1; done
grep -q "shard 1/3 from the Slurm array task 1" "$work/log/task-1-again.log" || fail "the resubmitted task did not run shard 1"

names="$(cd "$work/out" && ls *.png | sort)"
want="$(for i in $(seq 1 12); do printf '%05d-%d.png\n' "$i" $((500 + i)); done | sort)"
[ "$names" = "$want" ] || fail "images after the resubmission: $names"
for png in "$work"/out/*.png; do [ -f "${png%.png}.json" ] || fail "no sidecar for $png"; done
[ -z "$(ls -A "$work/out" | grep -v -E '^[0-9]{5}-[0-9]+\.(png|json)$|^\.diffusiondesk-batch-' || true)" ] ||
  fail "stray files in the output folder: $(ls -A "$work/out")"
ok "every image of the 12 jobs exactly once, each with its sidecar"
