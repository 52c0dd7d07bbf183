#!/usr/bin/env bash
# The sbatch scripts of scripts/slurm/ as real jobs on a real single-node SLURM cluster
# (scripts/slurm/cluster.sh brings it up and takes it down): validate, compile, train and eval
# complete with csrun's exit status and log lines (train as a coordinator and 2 worker tasks),
# 4 srun tasks train the same bytes as 0 or 3 local workers, a cancelled train job resumes when
# resubmitted, and a broken params file fails its job.
# Skipped (77) where the cluster cannot run: not root.
set -euo pipefail
root=$1
csrun=$2
[ "$(id -u)" -eq 0 ] || { echo "skipped: the SLURM daemons need root"; exit 77; }
work=$(mktemp -d)
chmod 755 "$work"  # munged refuses a socket under a directory others cannot enter
export CSRUN_SLURM_DIR=$work/cluster CSRUN_SLURM_PORT=${CSRUN_SLURM_PORT:-6917}
trap '"$root/scripts/slurm/cluster.sh" down >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
cluster_env=$("$root/scripts/slurm/cluster.sh" up) || { echo "FAIL: the cluster did not come up"; exit 1; }
eval "$cluster_env"
export CSRUN=$csrun
cd "$work"

cat >params.yaml <<PARAMS
trainer:
  init:
    device: CSX
    model_dir: $work/model
    seed: 1
    model: {name: fc_mnist, hidden_sizes: [16], compute_eval_metrics: true}
    optimizer: {SGD: {lr: 0.01, momentum: 0.9}}
    loop: {max_steps: 6}
    checkpoint: {steps: 3}
    logging: {log_steps: 3}
  fit:
    train_dataloader: {data_processor: MNISTDataProcessor, batch_size: 8}
  validate:
    val_dataloader: {data_processor: MNISTDataProcessor, batch_size: 8}
PARAMS

# Runs one sbatch script to completion; its output goes to NAME.out. Prints the job's status.
job() {
  local name=$1 script=$2
  shift 2
  local status=0
  sbatch --wait --quiet -o "$work/$name.out" "$root/scripts/slurm/$script" "$@" || status=$?
  echo "$status"
}
expect() {
  local file=$1 text=$2
  grep -qF "$text" "$work/$file" || { echo "FAIL: $file lacks '$text'"; cat "$work/$file"; exit 1; }
}
expect_status() {
  [ "$2" -eq "$3" ] || { echo "FAIL: $1 ended with $2, expected $3"; cat "$work/$1.out"; exit 1; }
}

expect_status validate "$(job validate validate.sbatch params.yaml --fake_data)" 0
expect validate.out "Config validation was successful!"
expect_status compile "$(job compile compile.sbatch params.yaml --fake_data)" 0
expect compile.out "compiled"
expect_status train "$(job train train.sbatch params.yaml --fake_data)" 0
expect train.out "| Train Device=CSX, Step=6, Loss="
expect train.out "Training completed successfully!"
expect train.out "coordinating 2 srun tasks as data workers"
# Tasks on the coordinator's node hand it their batches through shared memory.
! grep -F "sends its batches in frames" "$work/train.out" ||
  { echo "FAIL: srun tasks on this node sent their batches in frames"; exit 1; }
[ -f "$work/model/checkpoint_3.mdl" ] && [ -f "$work/model/checkpoint_6.mdl" ] ||
  { echo "FAIL: no checkpoints from the train job"; exit 1; }
# The same training as one coordinator and 3 worker tasks (srun --ntasks=4), and on this
# machine with 0 and 3 local workers: the checkpoints are the same bytes.
status=0
sbatch --wait --quiet --ntasks=4 -o "$work/srun4.out" "$root/scripts/slurm/train.sbatch" \
  params.yaml --fake_data -o "$work/srun4" || status=$?
expect_status srun4 "$status" 0
expect srun4.out "coordinating 3 srun tasks as data workers"
for workers in 0 3; do
  "$csrun" train params.yaml --fake_data -o "$work/local$workers" --num_workers_per_csx "$workers" \
    >"$work/local$workers.out" 2>&1 || { echo "FAIL: local training with $workers workers"; cat "$work/local$workers.out"; exit 1; }
done
for other in srun4 local0 local3; do
  cmp "$work/model/checkpoint_6.mdl" "$work/$other/checkpoint_6.mdl" ||
    { echo "FAIL: the checkpoint of $other differs from the 3-task job's"; exit 1; }
done
# num_csx 2 as 2 MPI ranks (srun --mpi=pmix), where csrun has MPI and SLURM its PMIx plugin:
# the same bytes as the 2 replicas in one process.
if "$csrun" --version | grep -qF "MPI ranks" && srun --mpi=list 2>&1 | grep -qw pmix; then
  status=0
  sbatch --wait --quiet --nodes=1 --ntasks-per-node=2 -o "$work/ranks.out" \
    "$root/scripts/slurm/train_ranks.sbatch" params.yaml --fake_data -o "$work/ranks" || status=$?
  expect_status ranks "$status" 0
  "$csrun" train params.yaml --fake_data -o "$work/replicas" --num_csx 2 \
    >"$work/replicas.out" 2>&1 || { echo "FAIL: 2 replicas in one process"; cat "$work/replicas.out"; exit 1; }
  cmp "$work/replicas/checkpoint_6.mdl" "$work/ranks/checkpoint_6.mdl" ||
    { echo "FAIL: 2 MPI ranks trained other bytes than 2 replicas in one process"; exit 1; }
  ranks_checked=", 2 MPI ranks"
else
  echo "slurm jobs: no MPI ranks (csrun without MPI, or SLURM without PMIx): train_ranks.sbatch not run"
fi
expect_status eval "$(job eval eval.sbatch params.yaml --fake_data --all)" 0
expect eval.out "checkpoint_6.mdl"
expect eval.out "Evaluation completed successfully!"

# scancel mid-run: csrun checkpoints the step in progress and the job ends; resubmitting resumes.
sed -e "s|$work/model|$work/long|" -e 's/max_steps: 6/max_steps: 100000000/' \
  -e 's/{steps: 3}/{steps: 100000000}/' params.yaml >long.yaml
long_job=$(sbatch --parsable -o "$work/long.out" "$root/scripts/slurm/train.sbatch" long.yaml --fake_data)
for _ in $(seq 600); do grep -qF "| Train Device=" "$work/long.out" 2>/dev/null && break; sleep 0.1; done
scancel "$long_job"
for _ in $(seq 300); do [ -z "$(squeue -h -j "$long_job" 2>/dev/null)" ] && break; sleep 0.1; done
expect long.out "on request (SIGTERM or SIGINT), its checkpoint written"
stopped_at=$(ls "$work/long" | sed -n 's/^checkpoint_\([0-9]*\)\.mdl$/\1/p' | sort -n | tail -1)
[ -n "$stopped_at" ] || { echo "FAIL: no checkpoint after scancel"; cat "$work/long.out"; exit 1; }
expect_status resumed "$(job resumed train.sbatch long.yaml --fake_data --max_steps $((stopped_at + 3)))" 0
expect resumed.out "Found latest checkpoint at \"$work/long/checkpoint_$stopped_at.mdl\""
expect resumed.out "| Train Device=CSX, Step=$((stopped_at + 3)), Loss="

printf 'trainer:\n  init:\n    model: {name: fc_mnist}\n    loop: {max_stepz: 5}\n' >broken.yaml
expect_status broken "$(job broken validate.sbatch broken.yaml --fake_data)" 1
expect broken.out "max_stepz"
echo "slurm jobs: validate, compile, train${ranks_checked:-}, eval, a failing validate, and scancel then resubmit ran as real jobs"
