#!/usr/bin/env bash
# csrun's benchmarks. Figures go to stdout; docs/benchmarks.md records them with the machine.
#
# Usage: scripts/bench.sh [SECTION...]     sections: validate, trace, compile, estimate,
#                                          train, gpt2_small, csx, chains, long, stream,
#                                          ranks, checkpoint, corpus, unet, modelzoo
#                                          (default: all)
#
#   validate   wall time of `csrun validate` (process start to exit) on every shipped config and
#              every Model Zoo config of the conformance set; median and max of 21 runs each.
#              Target: under 50 ms on a real config.
#   trace      `csrun validate --fake_data` of GPT-2 small and GPT-3 6.7B, which traces their whole
#              training step shape-only: wall time (median of 11) and peak resident memory.
#              Target: well under a second.
#   compile    `csrun compile --fake_data` of GPT-3 175B-shaped models (hidden 12288, 96 heads, MSL
#              2048) with 12, 24, 48 and 96 layers, each into a fresh model_dir so it really
#              compiles: wall time (median of 5), peak resident memory, and a rerun that finds the
#              plan in the compile cache. Target: 96 layers under 1 s and 256 MB, time linear in
#              the layers.
#   estimate   the performance model against the measured CS-2 runs it is calibrated on.
#   train      training samples/s of `csrun train --target_device CPU` (reading in-process, as the
#              baseline keeps its batches in memory) against PyTorch CPU fp32 on the reference
#              workloads of ../shared/bench (fc_mnist batch 256 and 32, gpt2_tiny batch 8),
#              alternating the two for 5 rounds (median ratio per workload), with the machine's
#              FMA peak (best of 3; bench/fma_peak, 512-bit where the CPU has AVX-512) and the best
#              large f32 GEMM (bench/gemm_peak: OpenBLAS's sgemm or oneDNN's f32 matmul, whichever is
#              faster; it also prints sbgemm and oneDNN's bfloat16 matmul), each workload's GFLOP/s as a
#              share of both. Needs python3-torch. Targets: 1.5x PyTorch on fc_mnist batch
#              32, 1.2x on the others. First, the same binary's samples/s with each kernel set it
#              runs here (CSRUN_CPU) against a -march=native build of csrun (build-native/), on
#              fc_mnist batch 256 and gpt2_tiny, CPU (f32) and CSX (bfloat16 emulated), alternating
#              for 5 rounds (medians). Target: the chosen set within 3 % of native.
#   long       GPT-2 small's network at MSL 1024 and 2048 (batch 2, AdamW), where attention's
#              probabilities outgrow the other activations (csrun recomputes them for the backward
#              pass, docs/compiler.md): csrun train in f32 (CPU) and bfloat16 (CSX) against PyTorch
#              in f32 and bfloat16 autocast (bench/torch_gpt2_long.py), one round each: samples/s
#              and peak RSS. Needs python3-torch. Target: peak RSS <= PyTorch's, samples/s >= 1.0x.
#   stream     data streaming: ingest of MNIST batches (256 samples, 0.8 MB) from 1, 2 and 4
#              local `csrun worker` processes, through shared memory and in frames over IPC
#              (as from another host), as fast as a coordinator takes and copies them
#              (batches/s, samples/s, GB/s; median of 3); and the step-time overhead of
#              streaming from 1 worker against reading in-process on fc_mnist (batch 256) and
#              gpt2_tiny, alternating for 5 rounds (median ratio): with the worker sharing the
#              step's cores, and with the run on core 0 and the worker on core 1 of its own.
#              Targets: >= 2 GB/s ingest, <= 3 % overhead.
#   gpt2_small the gpt2_small_ish reference workload (GPT-2 small, 124M parameters, MSL 256,
#              batch 2, AdamW, fp32) on the CPU: csrun train (--fake_data, 4 steps, the last
#              checkpoint written) against PyTorch, alternating for 3 rounds: samples/s (median of
#              the steps after the first), peak RSS of the whole process, and csrun's time from
#              the plan to the first step (initializing the variables). Needs python3-torch.
#              Targets: >= 1.2x PyTorch's samples/s, peak RSS <= PyTorch's, first step within 2 s.
#   csx        16-bit training: csrun train on CSX in bfloat16 (emulated on the host) against
#              PyTorch's bfloat16 autocast on the CPU, fc_mnist batch 256, gpt2_tiny and
#              gpt2_small_ish (bench/torch_gpt2_small_bf16.py), alternating for 3 rounds (median
#              ratio); where csrun runs an AVX-512 set, the other AVX-512 sets the CPU runs
#              (amx, avx512bf16, avx512) beside it. Needs python3-torch. Target: >= 1.0x.
#   chains     elementwise chains compiled to AVX-512 (or AVX2) code as a step is loaded against
#              the same chains interpreted (CSRUN_INTERPRET_CHAINS=1): GPT-2 small (gpt2_small_ish,
#              --fake_data, 6 steps, --profile) on CSX in bfloat16 and on CPU in f32, alternating
#              for 3 rounds: samples/s (median of the steps after the first) and the seconds a step
#              spends in elementwise chains. Where the kernel set interprets them (baseline), says so.
#   corpus     out-of-core data: a GPT HDF5 corpus of $CSRUN_BENCH_CORPUS_GB GB (default 20;
#              MSL 512, written by csrun-gpt-hdf5 into $CSRUN_BENCH_DIR, default build/) trained
#              on by a small GPT-2 for 40 steps of batch 8, shuffled, read cold (each corpus is
#              dropped from the page cache once written): the process's peak RSS and the loop's
#              seconds against the same run on a 0.1 GB corpus. Target: RSS within 2 GB of the
#              small run.
#   unet       the UNet on the CPU in fp32: configs/unet_tiny.yaml (32x32, batch 16, group norm, on
#              data/shapes) and the Model Zoo's Severstal UNet at its image size (256x256,
#              encoder 32-256, batch norm, batch 4, fake data), csrun train against the same
#              network in PyTorch (bench/torch_unet.py), and the Severstal UNet on CSX in
#              bfloat16 against PyTorch's bfloat16 autocast, alternating for 3 rounds: samples/s
#              (median of the logged windows / timed steps) and peak RSS. Needs python3-torch.
#   ranks      num_csx 1, 2 and 4 replicas of gpt2_tiny (8 samples each, CPU, 40 steps): the
#              training loop's seconds in one process and as MPI ranks on this machine
#              (mpirun, loopback), the share of it the ranks spent combining their gradients,
#              and whether both wrote the same checkpoint bytes. Needs Open MPI.
#   checkpoint GPT-2 small + Adam state (1.49 GB): csrun's checkpoint write (fsync, rename) and
#              cold read (page cache dropped; into fresh memory, and into the state's memory as
#              a run restores its variables) against torch.save + fsync and torch.load of the
#              same tensors, alternating for 3 rounds (each side first in turn, after a pause:
#              on a virtual machine, memory another process just freed is faster to fill),
#              beside the disk's own rates (dd, direct and through the page cache). Files go to $CSRUN_BENCH_DIR (default: build/).
#              Then GPT-2 small trained for 8 steps with a checkpoint every 2, written in the
#              loop and with --async_checkpoint, alternating for 2 rounds: the loop's seconds
#              (variables ready to training done, the last write included) and peak RSS.
#              Target: >= 1 GB/s write and read.
#   modelzoo   the settings real params files train with (345 of the 427 release files clip
#              gradients, 253 scale the loss dynamically, 135 train in cbfloat16): GPT-2 small
#              (gpt2_small_ish, --fake_data, 6 steps) in cbfloat16 with dynamic loss scaling and
#              max_gradient_norm 1.0 on CSX, in f32 with max_gradient_norm 1.0 on CPU, 2.2's
#              gpt2_small file as shipped but for batch 2 (cbfloat16, attention dropout 0.1, MSL
#              2048; 4 steps), and 2.10's
#              bert_base_MSL128.yaml as shipped but for batch 16 (5 steps, 3 eval steps): samples/s
#              (median of the steps after the first) and peak RSS, 3 rounds. csrun alone: the
#              PyTorch baseline's loop neither clips nor scales the loss.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
sections=("$@")
[ ${#sections[@]} -eq 0 ] && sections=(validate trace compile estimate train gpt2_small csx chains long stream ranks checkpoint corpus unet modelzoo)

scripts/build.sh csrun csrun-gpt-hdf5 fma_peak gemm_peak stream_ingest checkpoint_io >/dev/null
csrun=$root/build/apps/csrun/csrun
# The real Model Zoo params files of the conformance set, beside the checkout.
modelzoo=$root/../shared/modelzoo-configs

# Milliseconds per run of a command, one number per line.
time_runs() {
  local runs=$1; shift
  for _ in $(seq "$runs"); do
    local start end
    start=$(date +%s%N)
    "$@" >/dev/null 2>&1 || true
    end=$(date +%s%N)
    awk -v ns=$((end - start)) 'BEGIN { printf "%.2f\n", ns / 1000000 }'
  done
}

median_and_max() {
  sort -n | awk '{ v[NR] = $1 } END { printf "%8.2f %8.2f\n", v[int((NR + 1) / 2)], v[NR] }'
}

bench_validate() {
  echo "## csrun validate: wall time per run in ms (21 runs each)"
  printf '%-80s %8s %8s\n' "params" "median" "max"
  scripts/prepare_digits.sh >/dev/null
  # The cost of starting the process at all (loading csrun and its libraries), for comparison.
  printf '%-80s ' "(baseline: csrun --version)"
  time_runs 21 "$csrun" --version | median_and_max
  for params in configs/*.yaml; do
    printf '%-80s ' "$params"
    time_runs 21 "$csrun" validate "$params" | median_and_max
  done
  for params in "$modelzoo"/*.yaml; do
    printf '%-80s ' "$(basename "$params") --fake_data"
    time_runs 21 "$csrun" validate "$params" --fake_data | median_and_max
  done
}

# Peak resident memory (MB) of one run of a command.
peak_memory_mb() {
  python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1))' "$@"
}

bench_trace() {
  echo "## Tracing whole training steps (csrun validate --fake_data): ms and peak MB"
  local work
  work=$(mktemp -d)
  gpt3_config "$work/gpt3_6p7b.yaml"
  printf '%-50s %8s %8s %8s\n' "model" "median" "max" "peak MB"
  for entry in "GPT-2 small (124M, batch 112 x 2048):$modelzoo/gpt2_r2.3.1__params_gpt2_small.yaml" \
               "GPT-3 6.7B (batch 104 x 2048):$work/gpt3_6p7b.yaml"; do
    local name=${entry%%:*} params=${entry#*:}
    printf '%-50s ' "$name"
    printf '%s %8s\n' "$(time_runs 11 "$csrun" validate "$params" --fake_data | median_and_max)" \
      "$(peak_memory_mb "$csrun" validate "$params" --fake_data)"
  done
  rm -rf "$work"
}

# The Model Zoo's GPT-3 6.7B config minus the one key the Model Zoo itself rejects, into $1.
gpt3_config() {
  grep -v use_cs_grad_accum "$modelzoo"/gpt3_r2.0.2__params_gpt3_6p7b.yaml > "$1"
}

bench_compile() {
  echo "## csrun compile of GPT-3 175B shapes (hidden 12288, 96 heads, MSL 2048, --fake_data)"
  local work
  work=$(mktemp -d)
  gpt3_config "$work/gpt3.yaml"
  printf '%-8s %8s %8s %10s %10s\n' "layers" "median" "max" "peak MB" "cached ms"
  for layers in 12 24 48 96; do
    local args=(compile "$work/gpt3.yaml" --fake_data --set model.num_hidden_layers=$layers
                --set model.hidden_size=12288 --set model.num_heads=96
                --set model.filter_size=49152 --set train_input.micro_batch_size=auto)
    local times=() dir
    for run in 1 2 3 4 5; do
      dir="$work/fresh-$layers-$run"
      times+=("$(time_runs 1 "$csrun" "${args[@]}" -o "$dir")")
    done
    printf '%-8s %s %10s %10s\n' "$layers" \
      "$(printf '%s\n' "${times[@]}" | median_and_max)" \
      "$(peak_memory_mb "$csrun" "${args[@]}" -o "$work/memory-$layers")" \
      "$(time_runs 5 "$csrun" "${args[@]}" -o "$dir" | median_and_max | awk '{print $1}')"
  done
  rm -rf "$work"
}

bench_estimate() {
  echo "## The performance model against measured CS-2 runs (weight streaming, WSE-2)"
  local work
  work=$(mktemp -d)
  printf '%-44s %10s %10s %8s\n' "run" "measured" "estimate" "error"
  estimate() {
    "$csrun" compile "$@" --fake_data -o "$work" --execution_mode weight_streaming --json 2>/dev/null |
      python3 -c 'import json, sys; print(json.load(sys.stdin)["compiled"][0]["mapping"]["estimate"]["samples_per_second"])'
  }
  report() {
    awk -v name="$1" -v measured="$2" -v estimate="$3" \
      'BEGIN { printf "%-44s %10.1f %10.1f %+7.1f%%\n", name, measured, estimate, 100 * (estimate / measured - 1) }'
  }
  report "GPT-2 small, MSL 2048, batch 112 (samples/s)" 494.5 \
    "$(estimate "$modelzoo"/gpt2_r2.3.1__params_gpt2_small.yaml)"
  report "BERT-Large, MSL 128, batch 1024 (samples/s)" 4040 \
    "$(estimate "$modelzoo"/bert__bert_base_MSL128.yaml \
        --set trainer.init.model.hidden_size=1024 --set trainer.init.model.num_hidden_layers=24 \
        --set trainer.init.model.num_heads=16 --set trainer.init.model.filter_size=4096 \
        --set trainer.fit.train_dataloader.batch_size=1024)"
  rm -rf "$work"
}

# Median of the windowed rates in csrun train's log on stdin (every log_steps steps), the first
# window (which includes the first step's set-up) left out; printed with the printf format $1
# (default %.1f).
median_logged_rate() {
  sed -n 's/.*Step=[0-9]*, .*, Rate=\([0-9.]*\) samples\/sec.*/\1/p' | tail -n +2 | sort -n |
    awk -v format="${1:-%.1f}" \
      '{ v[NR] = $1 } END { if (NR) printf format "\n", v[int((NR + 1) / 2)]; else print "failed" }'
}

# The best f32 GEMM rate gemm_peak measures (GFLOP/s): OpenBLAS's sgemm or oneDNN's f32 matmul,
# which csrun's AVX-512 kernel sets call for most f32 products; after printing what it
# measured.
best_f32_gemm() {
  local rates
  rates=$(build/bench/gemm_peak)
  echo "$rates" >&2
  { sed -n 's/.*sgemm \([0-9.]*\) GFLOP.*/\1/p' <<<"$rates"
    sed -n 's/.*f32 matmul ([^)]*) \([0-9.]*\) GFLOP.*/\1/p' <<<"$rates"; } | sort -n | tail -1
}

csrun_train_rate() {
  "$csrun" train "$@" --target_device CPU 2>/dev/null | median_logged_rate
}

# The same with the run on core 0 and its batches from one `csrun worker` on core 1, as when the
# workers have CPUs of their own (on a CS system, worker nodes).
own_core_streamed_rate() {
  local endpoint="ipc://$work/stream" secret
  secret=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
  CSRUN_STREAM_SECRET=$secret taskset -c 0 "$csrun" train "$@" --target_device CPU \
    --stream_listen "$endpoint" >"$work/train.out" 2>/dev/null &
  local trainer=$!
  CSRUN_STREAM_SECRET=$secret taskset -c 1 "$csrun" worker --connect "$endpoint" >/dev/null 2>&1 &
  wait "$trainer" || true
  wait
  median_logged_rate <"$work/train.out"
}

# PyTorch's samples/s and FLOPs per sample for one workload of the baseline script.
torch_train_rate() {
  GOMP_SPINCOUNT=0 /usr/bin/python3 "$baseline" --threads "$(nproc)" --only "$1" 2>/dev/null |
    python3 -c 'import json, sys
for line in sys.stdin:
    r = json.loads(line)
    if r.get("kind") == "train": print(r["samples_per_s"], r["flops_per_step"] / r["batch"])'
}

# Samples/s of `csrun train` (binary first, then its arguments), read in-process.
train_rate() {
  local binary=$1; shift
  "$binary" train "$@" --num_workers_per_csx 0 2>/dev/null | median_logged_rate
}

# The cost of portability: training samples/s with each kernel set of this binary against a
# build for this machine only (-march=native, build-native/), alternating for 5 rounds.
bench_kernel_sets() {
  scripts/prepare_digits.sh >/dev/null
  cmake -S "$root" -B "$root/build-native" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCSRUN_NATIVE_ARCH=ON -DCSRUN_BUILD_TESTS=OFF >/dev/null
  cmake --build "$root/build-native" --target csrun >/dev/null
  local native=$root/build-native/apps/csrun/csrun sets=() work
  for set in amx avx512bf16 avx512 avx2 baseline; do
    CSRUN_CPU=$set "$csrun" --version >/dev/null 2>&1 && sets+=("$set")
  done
  work=$(mktemp -d)
  echo "## Training samples/s per kernel set against a -march=native build (median of 5 alternating rounds)"
  echo "CPU: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1); this binary: $("$csrun" --version | sed -n 's/^kernels: //p')"
  local header
  header=$(printf '%11s' native "${sets[@]}")
  printf '%-18s %s   %s\n' "workload" "$header" "each set / native"
  for entry in "fc_mnist_b256 CPU:bench/configs/fc_mnist.yaml:--target_device CPU --max_steps 400" \
               "fc_mnist_b256 CSX:bench/configs/fc_mnist.yaml:--target_device CSX --max_steps 200 --set model.mixed_precision=true --set model.fp16_type=bfloat16" \
               "gpt2_tiny CPU:bench/configs/gpt2_tiny.yaml:--target_device CPU --fake_data" \
               "gpt2_tiny CSX:bench/configs/gpt2_tiny.yaml:--target_device CSX --fake_data --max_steps 12 --set model.mixed_precision=true --set model.fp16_type=bfloat16"; do
    local name=${entry%%:*} rest=${entry#*:}
    local params=${rest%%:*} args=${rest#*:}
    local -A rates=()
    for _ in 1 2 3 4 5; do
      rm -rf "$work/model_dir"
      # shellcheck disable=SC2086
      rates[native]+="$(train_rate "$native" "$params" -o "$work/model_dir" $args) "
      for set in "${sets[@]}"; do
        rm -rf "$work/model_dir"
        # shellcheck disable=SC2086
        rates[$set]+="$(CSRUN_CPU=$set train_rate "$csrun" "$params" -o "$work/model_dir" $args) "
      done
    done
    local medians=() key
    for key in native "${sets[@]}"; do
      medians+=("$(printf '%s\n' ${rates[$key]} | sort -n | sed -n 3p)")
    done
    local ratios=""
    for ((i = 1; i < ${#medians[@]}; i++)); do
      ratios+=$(awk -v s="${medians[$i]}" -v n="${medians[0]}" 'BEGIN { printf " %6.3f", s / n }')
    done
    printf '%-18s %s  %s\n' "$name" "$(printf '%11s' "${medians[@]}")" "$ratios"
    unset rates
  done
  rm -rf "$work"
}

# Sets $baseline to the PyTorch baseline script; without it or python3-torch, says that section
# $1 is skipped and fails.
have_torch_baseline() {
  baseline=$root/../shared/bench/torch_baseline.py
  [ -f "$baseline" ] && /usr/bin/python3 -c 'import torch' 2>/dev/null && return 0
  echo "## $1: skipped (needs ../shared/bench/torch_baseline.py and python3-torch)"
  return 1
}

bench_train() {
  bench_kernel_sets
  have_torch_baseline train || return 0
  scripts/prepare_digits.sh >/dev/null
  echo "## Training samples/s: csrun train --target_device CPU vs PyTorch CPU fp32 ($(nproc) threads)"
  echo "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-(unset)}; PyTorch's BLAS: $(readlink -f /etc/alternatives/libblas.so.3-x86_64-linux-gnu 2>/dev/null || echo unknown)"
  build/bench/fma_peak 1 "$(nproc)"
  local peak gemm work
  # The best of three: a busy host only ever lowers the figure.
  peak=$(for _ in 1 2 3; do build/bench/fma_peak "$(nproc)"; done | awk '{ print $(NF-1) }' | sort -n | tail -1)
  echo "fp32 FMA peak used below (best of 3, $(nproc) threads): $peak GFLOP/s"
  gemm=$(best_f32_gemm)
  echo "best large f32 GEMM used below (OpenBLAS's sgemm or oneDNN's matmul, n = 1024-4096, best of 3 each): $gemm GFLOP/s"
  work=$(mktemp -d)
  printf '%-14s %6s %12s %12s %7s %28s\n' "workload" "round" "PyTorch" "csrun" "ratio" "csrun GFLOP/s (FMA, GEMM)"
  for entry in "fc_mnist:bench/configs/fc_mnist.yaml:--set train_input.batch_size=256 --max_steps 400" \
               "fc_mnist_b32:bench/configs/fc_mnist.yaml:--set train_input.batch_size=32 --max_steps 3000 --set runconfig.log_steps=300" \
               "gpt2_tiny:bench/configs/gpt2_tiny.yaml:--fake_data"; do
    local name=${entry%%:*} rest=${entry#*:}
    local params=${rest%%:*} args=${rest#*:}
    local ratios=()
    for round in 1 2 3 4 5; do
      local torch flops csrun_rate
      read -r torch flops <<<"$(torch_train_rate "$name")"
      rm -rf "$work/model_dir"
      # In-process reading, as the baseline keeps its batches in memory (streaming: section stream).
      # shellcheck disable=SC2086
      csrun_rate=$(csrun_train_rate "$params" -o "$work/model_dir" $args --num_workers_per_csx 0)
      awk -v n="$name" -v r="$round" -v t="$torch" -v c="$csrun_rate" -v f="$flops" -v p="$peak" -v g="$gemm" \
        'BEGIN { printf "%-14s %6s %12.1f %12.1f %6.2fx %8.1f (%2.0f%%, %2.0f%%)\n", n, r, t, c, c / t, c * f / 1e9, 100 * c * f / 1e9 / p, 100 * c * f / 1e9 / g }'
      ratios+=("$(awk -v t="$torch" -v c="$csrun_rate" 'BEGIN { printf "%.3f", c / t }')")
    done
    printf '%s\n' "${ratios[@]}" | sort -n |
      awk -v n="$name" '{ v[NR] = $1 } END { printf "%-14s median ratio %.2fx\n", n, v[int((NR + 1) / 2)] }'
  done
  rm -rf "$work"
}

bench_stream() {
  scripts/prepare_digits.sh >/dev/null
  echo "## Data streaming: ingest from local workers (MNIST digits, batch 256 = 0.80 MB; median of 3)"
  echo "shared_memory: as local workers send batches; frames: in ZeroMQ frames, as from another host"
  printf '%-8s %-14s %10s %12s %8s\n' "workers" "transport" "batches/s" "samples/s" "GB/s"
  for transport in shared_memory frames; do
    local shared=1
    [ "$transport" = frames ] && shared=0
    for workers in 1 2 4; do
      for _ in 1 2 3; do
        CSRUN_STREAM_SHARED_MEMORY=$shared build/bench/stream_ingest "$csrun" data/digits "$workers" 256 2000
      done | sort -k4 -n | sed -n 2p |
        awk -v t="$transport" '{ printf "%-8s %-14s %10s %12s %8s\n", $1, t, $2, $3, $4 }'
    done
  done
  echo "## Data streaming: training samples/s with 1 worker vs in-process reading (--target_device CPU)"
  echo "shared: the worker shares the step's $(nproc) cores; own_core: the run on core 0, the worker on core 1"
  local work
  work=$(mktemp -d)
  printf '%-14s %-10s %6s %12s %12s %9s\n' "workload" "worker" "round" "in-process" "1 worker" "overhead"
  for entry in "fc_mnist_b256:bench/configs/fc_mnist.yaml:--set train_input.batch_size=256 --max_steps 1000" \
               "gpt2_tiny:bench/configs/gpt2_tiny.yaml:--fake_data"; do
    local name=${entry%%:*} rest=${entry#*:}
    local params=${rest%%:*} args=${rest#*:}
    for placement in shared own_core; do
      [ "$placement" = own_core ] && [ "$(nproc)" -lt 2 ] && continue
      local overheads=()
      for round in 1 2 3 4 5; do
        local local_rate streamed_rate
        rm -rf "$work/model_dir"
        if [ "$placement" = shared ]; then
          # shellcheck disable=SC2086
          local_rate=$(csrun_train_rate "$params" -o "$work/model_dir" $args --num_workers_per_csx 0)
          rm -rf "$work/model_dir"
          # shellcheck disable=SC2086
          streamed_rate=$(csrun_train_rate "$params" -o "$work/model_dir" $args --num_workers_per_csx 1)
        else
          # shellcheck disable=SC2086
          local_rate=$(taskset -c 0 "$csrun" train "$params" -o "$work/model_dir" $args \
            --target_device CPU --num_workers_per_csx 0 2>/dev/null | median_logged_rate)
          rm -rf "$work/model_dir"
          # shellcheck disable=SC2086
          streamed_rate=$(own_core_streamed_rate "$params" -o "$work/model_dir" $args)
        fi
        overheads+=("$(awk -v a="$local_rate" -v b="$streamed_rate" 'BEGIN { printf "%.2f", 100 * (a / b - 1) }')")
        awk -v n="$name" -v p="$placement" -v r="$round" -v a="$local_rate" -v b="$streamed_rate" \
          'BEGIN { printf "%-14s %-10s %6s %12.1f %12.1f %8.1f%%\n", n, p, r, a, b, 100 * (a / b - 1) }'
      done
      printf '%s\n' "${overheads[@]}" | sort -n |
        awk -v n="$name" -v p="$placement" '{ v[NR] = $1 } END { printf "%-14s %-10s median step-time overhead %.1f%%\n", n, p, v[int((NR + 1) / 2)] }'
    done
  done
  rm -rf "$work"
}

bench_gpt2_small() {
  have_torch_baseline gpt2_small || return 0
  echo "## GPT-2 small (gpt2_small_ish: MSL 256, batch 2, AdamW, fp32) on $(nproc) threads: csrun vs PyTorch"
  local work
  work=$(mktemp -d)
  local gemm
  gemm=$(best_f32_gemm 2>/dev/null)
  echo "best large f32 GEMM (OpenBLAS's sgemm or oneDNN's matmul): $gemm GFLOP/s"
  # OpenBLAS's kernels decide which library multiplies csrun's f32 products, and PyTorch's.
  "$csrun" --version | grep '^sgemm:'
  printf '%-6s %12s %10s %12s %10s %7s %12s %16s\n' "round" "PyTorch s/s" "peak MB" "csrun s/s" \
    "peak MB" "ratio" "init s" "csrun % GEMM"
  for round in 1 2 3; do
    local torch flops torch_peak rate csrun_peak init
    read -r torch flops <<<"$(/usr/bin/time -f "%M" -o "$work/torch.rss" env GOMP_SPINCOUNT=0 \
      /usr/bin/python3 "$baseline" --threads "$(nproc)" --only gpt2_small_ish 2>/dev/null |
      python3 -c 'import json, sys
for line in sys.stdin:
    r = json.loads(line)
    if r.get("kind") == "train": print(r["samples_per_s"], r["flops_per_step"] / r["batch"])')"
    torch_peak=$(awk '{ printf "%.0f", $1 / 1024 }' "$work/torch.rss")
    rm -rf "$work/model_dir"
    /usr/bin/time -f "%M" -o "$work/csrun.rss" "$csrun" train bench/configs/gpt2_small_ish.yaml \
      --fake_data --target_device CPU --max_steps 4 -o "$work/model_dir" >"$work/csrun.log" 2>&1
    rate=$(median_logged_rate %.3f <"$work/csrun.log")
    csrun_peak=$(awk '{ printf "%.0f", $1 / 1024 }' "$work/csrun.rss")
    init=$(sed -n 's/.*Initialized the variables in \([0-9.]*\) s.*/\1/p' "$work/csrun.log")
    awk -v r="$round" -v t="$torch" -v tp="$torch_peak" -v c="$rate" -v cp="$csrun_peak" -v i="$init" \
      -v f="$flops" -v g="$gemm" \
      'BEGIN { printf "%-6s %12.3f %10s %12.3f %10s %6.2fx %12s %15.0f%%\n", r, t, tp, c, cp, c / t, i, 100 * c * f / 1e9 / g }'
  done
  rm -rf "$work"
}

# Samples/s of a CSX bfloat16 run of csrun train (the kernel set first: empty for the chosen one,
# then the arguments): the median of the logged steps after the first, to 3 places.
csx_rate() {
  local set=$1
  shift
  CSRUN_CPU=$set "$csrun" train "$@" --num_workers_per_csx 0 --target_device CSX \
    --set model.mixed_precision=true --set model.fp16_type=bfloat16 2>/dev/null |
    median_logged_rate %.3f
}

bench_csx() {
  have_torch_baseline csx || return 0
  scripts/prepare_digits.sh >/dev/null
  local chosen
  chosen=$("$csrun" --version | sed -n 's/^kernels: \([a-z0-9]*\).*/\1/p')
  echo "## bfloat16 training samples/s: csrun train on CSX vs PyTorch bf16 autocast ($(nproc) threads)"
  # The other AVX-512 sets this CPU runs are measured beside the one csrun picks: the amx set's
  # GEMMs on AMX tiles, the avx512bf16 set's on AVX512_BF16's dot products (what a CPU without
  # AMX runs; csrun passes it over where those are slower than f32 FMAs) and the avx512 set's
  # emulation (operands widened for f32 GEMMs).
  local compare=()
  if [[ $chosen == amx || $chosen == avx512* ]]; then
    for set in amx avx512bf16 avx512; do
      [ "$set" != "$chosen" ] && CSRUN_CPU=$set "$csrun" --version >/dev/null 2>&1 && compare+=("$set")
    done
  fi
  echo "csrun's kernel set: $chosen; beside it: ${compare[*]:--}"
  local work
  work=$(mktemp -d)
  printf '%-14s %6s %12s %12s %7s' "workload" "round" "PyTorch" "csrun" "ratio"
  printf ' %14s' "${compare[@]/#/csrun }"
  printf '\n'

  for entry in "fc_mnist:fc_mnist_bf16:bench/configs/fc_mnist.yaml:--set train_input.batch_size=256 --max_steps 400" \
               "gpt2_tiny:gpt2_tiny_bf16:bench/configs/gpt2_tiny.yaml:--fake_data" \
               "gpt2_small:gpt2_small_ish_bf16:bench/configs/gpt2_small_ish.yaml:--fake_data --max_steps 4"; do
    local name=${entry%%:*} rest=${entry#*:}
    local torch_name=${rest%%:*}
    rest=${rest#*:}
    local params=${rest%%:*} args=${rest#*:}
    local ratios=() rates=()
    for round in 1 2 3; do
      local torch flops rate others=()
      if [ "$torch_name" = gpt2_small_ish_bf16 ]; then
        read -r torch flops <<<"$(GOMP_SPINCOUNT=0 /usr/bin/python3 bench/torch_gpt2_small_bf16.py \
          "$baseline" --threads "$(nproc)" 2>/dev/null | python3 -c 'import json, sys
r = json.load(sys.stdin)
print(r["samples_per_s"], r["flops_per_step"] / r["batch"])')"
      else
        read -r torch flops <<<"$(torch_train_rate "$torch_name")"
      fi
      rm -rf "$work/model_dir"
      # shellcheck disable=SC2086
      rate=$(csx_rate "" "$params" -o "$work/model_dir" $args)
      for set in "${compare[@]}"; do
        rm -rf "$work/model_dir"
        # shellcheck disable=SC2086
        others+=("$(csx_rate "$set" "$params" -o "$work/model_dir" $args)")
      done
      awk -v n="$name" -v r="$round" -v t="$torch" -v c="$rate" \
        'BEGIN { printf "%-14s %6s %12.3f %12.3f %6.2fx", n, r, t, c, c / t }'
      printf ' %14s' "${others[@]}"
      printf '\n'
      ratios+=("$(awk -v t="$torch" -v c="$rate" 'BEGIN { printf "%.3f", c / t }')")
      rates+=("$rate")
    done
    printf '%s\n' "${ratios[@]}" | sort -n |
      awk -v n="$name" '{ v[NR] = $1 } END { printf "%-14s median ratio %.2fx\n", n, v[int((NR + 1) / 2)] }'
  done
  # GPT-2 small's step against the best large GEMM of the kind its bfloat16 products run as:
  # oneDNN's bfloat16 matmul (all cores) in the amx and avx512bf16 sets; the best f32 GEMM in the
  # others, which widen the operands (and on a CPU without AVX512_BF16, where oneDNN has none).
  local matmul=""
  if [ "$chosen" = amx ] || [ "$chosen" = avx512bf16 ]; then
    matmul=$(build/bench/gemm_peak | sed -n 's/.*bf16 matmul ([^)]*) \([0-9.]*\) GFLOP.*/\1/p' | sort -n | tail -1)
  fi
  [ -z "$matmul" ] && matmul=$(best_f32_gemm 2>/dev/null) &&
    echo "the $chosen set widens bfloat16 operands for f32 GEMMs: against the best f32 GEMM"
  printf '%s\n' "${rates[@]: -3}" | sort -n | awk -v f="$flops" -v m="$matmul" \
    '{ v[NR] = $1 } END { r = v[int((NR + 1) / 2)]; printf "gpt2_small on CSX: %.0f GFLOP/s, %.0f %% of the best GEMM of its kernels (%s GFLOP/s)\n", r * f / 1e9, 100 * r * f / 1e9 / m, m }'
  rm -rf "$work"
}

# GPT-2 small's network at longer sequences (MSL 1024 and 2048, batch 2, AdamW), where attention's
# probabilities outgrow the rest of the activations: csrun train (--fake_data, 4 steps) in f32 on
# CPU and in bfloat16 on CSX against PyTorch in f32 and under bfloat16 autocast
# (bench/torch_gpt2_long.py, 2 steps: the second timed), one round each: samples/s and peak RSS.
# About 20 minutes: PyTorch takes 30-130 s a step here.
bench_long() {
  have_torch_baseline long || return 0
  echo "## GPT-2 small at long sequences (batch 2, AdamW) on $(nproc) threads: csrun vs PyTorch"
  local work
  work=$(mktemp -d)
  printf '%-6s %-9s %12s %10s %12s %10s %7s %10s\n' "MSL" "precision" "PyTorch s/s" "peak MB" \
    "csrun s/s" "peak MB" "ratio" "RSS ratio"
  for msl in 1024 2048; do
    for precision in f32 bfloat16; do
      local torch_args=() csrun_args=(--target_device CPU) torch torch_peak rate csrun_peak
      if [ "$precision" = bfloat16 ]; then
        torch_args=(--bf16)
        csrun_args=(--target_device CSX --set model.mixed_precision=true
                    --set model.fp16_type=bfloat16)
      fi
      read -r torch torch_peak <<<"$(GOMP_SPINCOUNT=0 /usr/bin/python3 bench/torch_gpt2_long.py --steps 2 \
        "$baseline" --msl "$msl" --layers 12 --threads "$(nproc)" "${torch_args[@]}" 2>/dev/null |
        python3 -c 'import json, sys
r = json.load(sys.stdin)
print(r["samples_per_s"], r["peak_mb"])')"
      rm -rf "$work/model_dir"
      /usr/bin/time -f "%M" -o "$work/csrun.rss" "$csrun" train bench/configs/gpt2_small_ish.yaml \
        --fake_data --max_steps 4 --num_workers_per_csx 0 -o "$work/model_dir" "${csrun_args[@]}" \
        --set model.max_position_embeddings="$msl" --set train_input.max_sequence_length="$msl" \
        >"$work/csrun.log" 2>&1
      rate=$(median_logged_rate %.3f <"$work/csrun.log")
      csrun_peak=$(awk '{ printf "%.0f", $1 / 1024 }' "$work/csrun.rss")
      awk -v m="$msl" -v p="$precision" -v t="$torch" -v tp="$torch_peak" -v c="$rate" \
        -v cp="$csrun_peak" 'BEGIN { printf "%-6s %-9s %12.3f %10.0f %12.3f %10s %6.2fx %9.2fx\n", m, p, t, tp, c, cp, c / t, cp / tp }'
    done
  done
  rm -rf "$work"
}

bench_chains() {
  echo "## Elementwise chains compiled to machine code vs interpreted: GPT-2 small ($(nproc) threads)"
  "$csrun" --version | grep '^chains:'
  if ! "$csrun" --version | grep -q '^chains: compiled'; then
    echo "chains: skipped (this CPU's kernel set interprets them)"
    return 0
  fi
  local work
  work=$(mktemp -d)
  printf '%-6s %-16s %-12s %12s %14s\n' "round" "run" "chains" "samples/s" "chain s/step"
  for round in 1 2 3; do
    for run in "CSX bfloat16|--target_device CSX --set model.mixed_precision=true --set model.fp16_type=bfloat16" \
               "CPU f32|--target_device CPU"; do
      local name args
      IFS='|' read -r name args <<<"$run"
      for interpret in 0 1; do
        rm -rf "$work/model_dir"
        # shellcheck disable=SC2086
        CSRUN_INTERPRET_CHAINS=$interpret "$csrun" train bench/configs/gpt2_small_ish.yaml \
          --fake_data --max_steps 6 --num_workers_per_csx 0 --profile -o "$work/model_dir" $args \
          >"$work/train.log" 2>&1
        local rate chain
        rate=$(median_logged_rate %.3f <"$work/train.log")
        # "Host profile of the train step (5 runs timed): 0.8617 s a run: gemm 69.0 %, chain 23.8 %, ..."
        chain=$(sed -n 's/.*Host profile of the train step.*: \([0-9.]*\) s a run:.* chain \([0-9.]*\) %.*/\1 \2/p' \
          "$work/train.log" | awk '{ printf "%.4f", $1 * $2 / 100 }')
        printf '%-6s %-16s %-12s %12s %14s\n' "$round" "$name" \
          "$([ "$interpret" = 0 ] && echo compiled || echo interpreted)" "$rate" "$chain"
      done
    done
  done
  rm -rf "$work"
}

# A GPT HDF5 corpus of $2 GB with MSL 512 in directory $1 (token ids below 64).
make_corpus() {
  mkdir -p "$1"
  /usr/bin/python3 -c 'import struct, sys
length = 512
example = [t % 64 for t in range(length)] + [1] * length + [(t + 1) % 64 for t in range(length)]
block = struct.pack("<%di" % (3 * length), *example) * 64
count = int(float(sys.argv[2]) * 1e9) // len(block) + 1
with open(sys.argv[1], "wb") as out:
    for _ in range(count):
        out.write(block)' "$1/rows.bin" "$2"
  build/apps/gpt_hdf5/csrun-gpt-hdf5 "$1/rows.bin" 512 "$1/corpus.h5"
  rm -f "$1/rows.bin"
  # Out of the page cache, so that the run reads what it reads from the disk (a corpus just
  # written would be mostly cached on a machine of 32 GB or more).
  /usr/bin/python3 -c 'import os, sys
with open(sys.argv[1], "rb") as corpus:
    os.fsync(corpus.fileno())
    os.posix_fadvise(corpus.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)' "$1/corpus.h5"
}

# The params of a small GPT-2 reading the corpus in directory $1.
corpus_params() {
  printf '%s\n' "trainer:" "  init:" "    device: CPU" \
    "    model: {name: gpt2, vocab_size: 64, hidden_size: 64, num_hidden_layers: 2, num_heads: 2, filter_size: 128, max_position_embeddings: 512}" \
    "    optimizer: {AdamW: {lr: 0.0001}}" "    loop: {max_steps: 40}" "    logging: {log_steps: 40}" \
    "  fit:" \
    "    train_dataloader: {data_processor: GptHDF5DataProcessor, batch_size: 8, shuffle: true, data_dir: '$1'}"
}

bench_corpus() {
  local gigabytes=${CSRUN_BENCH_CORPUS_GB:-20} work
  echo "## Out-of-core GPT HDF5: peak RSS training on a ${gigabytes} GB corpus vs a 0.1 GB one"
  work=$(mktemp -d "${CSRUN_BENCH_DIR:-$root/build}/corpus-bench.XXXXXX")
  echo "each corpus read cold (dropped from the page cache once written); loop s: the 40 steps"
  printf '%-10s %12s %10s %10s %10s\n' "corpus" "file GB" "peak MB" "wall s" "loop s"
  for size in 0.1 "$gigabytes"; do
    make_corpus "$work/$size" "$size"
    corpus_params "$work/$size" >"$work/p.yaml"
    local start end loop="-"
    start=$(date +%s.%N)
    if /usr/bin/time -f "%M" -o "$work/rss" "$csrun" train "$work/p.yaml" -o "$work/model-$size" \
      >"$work/train.log" 2>&1; then
      loop=$(loop_seconds "$work/train.log")
    else
      echo "corpus: the ${size} GB run failed"
    fi
    end=$(date +%s.%N)
    awk -v s="$size" -v f="$(stat -c %s "$work/$size/corpus.h5")" -v r="$(cat "$work/rss")" \
      -v a="$start" -v b="$end" -v l="$loop" \
      'BEGIN { printf "%-10s %12.2f %10.0f %10.1f %10s\n", s " GB", f / 1e9, r / 1024, b - a, l }'
    rm -rf "${work:?}/$size"
  done
  rm -rf "${work:?}"
}

# The seconds of a run's training loop in its log: from the variables being ready to the end of
# training (the last checkpoint included).
loop_seconds() {
  python3 - "$1" <<'PY'
import sys
from datetime import datetime
stamp = lambda line: datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f")
lines = open(sys.argv[1]).read().splitlines()
start = next(stamp(l) for l in lines if "Initialized the variables" in l)
end = next(stamp(l) for l in lines if "Training completed successfully" in l)
print(f"{(end - start).total_seconds():.3f}")
PY
}

bench_ranks() {
  if ! command -v mpirun >/dev/null; then
    echo "## ranks: skipped (needs Open MPI's mpirun: scripts/setup.sh installs it)"
    return 0
  fi
  echo "## num_csx replicas in one process and as MPI ranks (loopback): gpt2_tiny, CPU, 8 samples per replica, 40 steps"
  local work
  work=$(mktemp -d)
  printf '%-8s %16s %16s %10s %12s\n' "num_csx" "one process s" "MPI ranks s" "combining" "same bytes"
  for n in 1 2 4; do
    local args=(bench/configs/gpt2_tiny.yaml --fake_data --target_device CPU --max_steps 40
      --num_csx "$n" --num_workers_per_csx 0 --set "train_input.batch_size=$((8 * n))"
      --set runconfig.checkpoint_steps=0)
    rm -rf "$work/one" "$work/ranks"
    "$csrun" train "${args[@]}" -o "$work/one" >"$work/one.log" 2>&1
    local one ranks="-" combining="-" same="-"
    one=$(loop_seconds "$work/one.log")
    if [ "$n" -gt 1 ]; then
      OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -n "$n" --oversubscribe \
        "$csrun" train "${args[@]}" -o "$work/ranks" >"$work/ranks.log" 2>&1
      ranks=$(loop_seconds "$work/ranks.log")
      combining=$(sed -n 's/.*(\([0-9.]*\) %) combining.*/\1 %/p' "$work/ranks.log" | tail -1)
      same=no
      cmp -s "$work/one/checkpoint_40.mdl" "$work/ranks/checkpoint_40.mdl" && same=yes
    fi
    printf '%-8s %16s %16s %10s %12s\n' "$n" "$one" "$ranks" "$combining" "$same"
  done
  rm -rf "$work"
}

bench_checkpoint() {
  echo "## Checkpoints of GPT-2 small + Adam (1.49 GB): write+fsync and cold read"
  local work
  work=$(mktemp -d "${CSRUN_BENCH_DIR:-$root/build}/checkpoint-bench.XXXXXX")
  echo "disk (dd, 1.5 GB, fsync): direct $(dd if=/dev/zero of="$work/dd" bs=16M count=94 oflag=direct conv=fsync 2>&1 | tail -1 | awk '{ print $(NF-1), $NF }'), through the page cache $(dd if=/dev/zero of="$work/dd" bs=16M count=94 conv=fsync 2>&1 | tail -1 | awk '{ print $(NF-1), $NF }')"
  # The disk's own direct-read rate beside each round: on a virtual machine it moves with the
  # host's load and caches, so compare csrun's cold read with the rate of the same minute.
  # A virtual machine's guest pages cost most when first touched after a while unused, and
  # pages another process just freed are cheap: each side reads first in turn, after a pause.
  local sides=(csrun torch)
  /usr/bin/python3 -c 'import torch' 2>/dev/null || sides=(csrun)
  for round in 1 2 3; do
    echo "disk (dd, 1.5 GB, direct read): $(dd if="$work/dd" of=/dev/null bs=16M iflag=direct 2>&1 | tail -1 | awk '{ print $(NF-1), $NF }')"
    local order=("${sides[@]}")
    if (( round % 2 == 0 && ${#sides[@]} == 2 )); then order=(torch csrun); fi
    for side in "${order[@]}"; do
      sleep 5
      if [[ $side == csrun ]]; then
        build/bench/checkpoint_io "$work"
      else
        /usr/bin/python3 bench/torch_checkpoint.py "$work"
      fi
    done
  done
  rm -f "$work/dd"
  echo "## GPT-2 small training, a checkpoint every 2 steps: written in the loop or in the background"
  printf '%-6s %-7s %12s %12s %10s
' "round" "writes" "8 steps s" "s per step" "peak MB"
  for round in 1 2; do
    for mode in sync async; do
      local flag=""
      [ "$mode" = async ] && flag="--async_checkpoint"
      rm -rf "$work/model_dir"
      # shellcheck disable=SC2086
      /usr/bin/time -f "%M" -o "$work/csrun.rss" "$csrun" train bench/configs/gpt2_small_ish.yaml \
        --fake_data --target_device CPU --max_steps 8 --set runconfig.checkpoint_steps=2 \
        -o "$work/model_dir" $flag >"$work/csrun.log" 2>&1
      local seconds
      seconds=$(loop_seconds "$work/csrun.log")
      awk -v r="$round" -v m="$mode" -v s="$seconds" -v p="$(awk '{ print $1 / 1024 }' "$work/csrun.rss")" \
        'BEGIN { printf "%-6s %-7s %12.2f %12.2f %10.0f\n", r, m, s, s / 8, p }'
    done
  done
  rm -rf "$work"
}

bench_unet() {
  if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
    echo "## unet: skipped (needs python3-torch)"
    return 0
  fi
  scripts/prepare_shapes.sh >/dev/null
  echo "## UNet training on $(nproc) threads: csrun vs PyTorch (samples/s, peak MB); fp32 on CPU, bf16 on CSX vs autocast"
  local work
  work=$(mktemp -d)
  printf '%-22s %6s %12s %10s %12s %10s %7s\n' "workload" "round" "PyTorch s/s" "peak MB" \
    "csrun s/s" "peak MB" "ratio"
  local tiny_torch="--size 32 --batch 16 --encoder 8 16 32 --decoder 16 8 --norm group --groups 4 --steps 40"
  local tiny_csrun="configs/unet_tiny.yaml --max_steps 60 --set runconfig.log_steps=10"
  local severstal_torch="--size 256 --batch 4 --encoder 32 64 128 256 --decoder 128 64 32 --norm batch --steps 5"
  local severstal_csrun="$modelzoo/unet_r1.9.1__params_severstal_binary.yaml --fake_data"
  severstal_csrun+=" --max_steps 7 --set train_input.batch_size=4 --set runconfig.log_steps=1"
  # The Model Zoo's file trains in mixed precision: on CSX its products' operands are bfloat16
  # and everything else f32, as in PyTorch's autocast with the norms in f32 (torch_unet.py).
  local csx="--target_device CSX --set model.fp16_type=bfloat16"
  for entry in "unet_tiny 32x32 b16|$tiny_torch|$tiny_csrun --target_device CPU" \
               "severstal 256x256 b4|$severstal_torch|$severstal_csrun --target_device CPU" \
               "severstal bf16 CSX|$severstal_torch --autocast|$severstal_csrun $csx"; do
    local name torch_args csrun_args
    IFS='|' read -r name torch_args csrun_args <<<"$entry"
    for round in 1 2 3; do
      local torch torch_peak rate csrun_peak
      # shellcheck disable=SC2086
      torch=$(/usr/bin/time -f "%M" -o "$work/torch.rss" env GOMP_SPINCOUNT=0 /usr/bin/python3 \
        bench/torch_unet.py $torch_args --threads "$(nproc)" |
        python3 -c 'import json, sys; print(json.loads(sys.stdin.readline())["samples_per_s"])')
      torch_peak=$(awk '{ printf "%.0f", $1 / 1024 }' "$work/torch.rss")
      rm -rf "$work/model_dir"
      # shellcheck disable=SC2086
      /usr/bin/time -f "%M" -o "$work/csrun.rss" "$csrun" train $csrun_args \
        --num_workers_per_csx 0 -o "$work/model_dir" >"$work/csrun.log" 2>&1 || true
      rate=$(median_logged_rate <"$work/csrun.log")
      csrun_peak=$(awk '{ printf "%.0f", $1 / 1024 }' "$work/csrun.rss")
      awk -v n="$name" -v r="$round" -v t="$torch" -v tp="$torch_peak" -v c="$rate" -v cp="$csrun_peak" \
        'BEGIN { printf "%-22s %6s %12.1f %10s %12s %10s %6.2fx\n", n, r, t, tp, c, cp, c / t }'
    done
  done
  rm -rf "$work"
}

bench_modelzoo() {
  echo "## The settings real params files train with: samples/s and peak MB ($(nproc) threads)"
  local work
  work=$(mktemp -d)
  local small="bench/configs/gpt2_small_ish.yaml --fake_data --max_steps 6"
  local cb16="$small --target_device CSX --set model.mixed_precision=true"
  cb16+=" --set model.fp16_type=cbfloat16 --set optimizer.loss_scaling_factor=dynamic"
  cb16+=" --set optimizer.max_gradient_norm=1.0"
  local clipped="$small --target_device CPU --set optimizer.max_gradient_norm=1.0"
  local gpt2="$modelzoo/releases/Release_2.2.0/gpt2__params_gpt2_small.yaml --fake_data"
  gpt2+=" --max_steps 4 --set train_input.batch_size=2 --set runconfig.log_steps=1"
  gpt2+=" --set runconfig.save_initial_checkpoint=false --set runconfig.checkpoint_steps=0"
  local bert="$modelzoo/releases/Release_2.10.0/bert__bert_base_MSL128.yaml --fake_data"
  bert+=" --max_steps 5 --set trainer.fit.train_dataloader.batch_size=16"
  bert+=" --set trainer.init.loop.eval_steps=3 --set trainer.fit.val_dataloader.batch_size=16"
  printf '%-44s %6s %10s %10s\n' "workload" "round" "samples/s" "peak MB"
  for round in 1 2 3; do
    for entry in "GPT-2 small cbfloat16, loss scaling, clipped|$cb16" \
                 "GPT-2 small f32, clipped|$clipped" \
                 "GPT-2 small (2.2's file), batch 2|$gpt2" \
                 "BERT base (2.10's file), batch 16|$bert"; do
      local name args rate
      IFS='|' read -r name args <<<"$entry"
      rm -rf "$work/model_dir"
      # shellcheck disable=SC2086
      rate=$(/usr/bin/time -f "%M" -o "$work/rss" "$csrun" train $args --num_workers_per_csx 0 \
        -o "$work/model_dir" 2>/dev/null | sed -n "/Train Device/p" | median_logged_rate %.3f)
      printf '%-44s %6s %10s %10.0f\n' "$name" "$round" "$rate" \
        "$(awk '{ print $1 / 1024 }' "$work/rss")"
    done
  done
  rm -rf "$work"
}

echo "# csrun benchmarks, $(date -u +%Y-%m-%dT%H:%MZ) on $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
for section in "${sections[@]}"; do
  case $section in
    validate) bench_validate ;;
    trace) bench_trace ;;
    compile) bench_compile ;;
    estimate) bench_estimate ;;
    train) bench_train ;;
    stream) bench_stream ;;
    gpt2_small) bench_gpt2_small ;;
    checkpoint) bench_checkpoint ;;
    ranks) bench_ranks ;;
    corpus) bench_corpus ;;
    csx) bench_csx ;;
    chains) bench_chains ;;
    long) bench_long ;;
    unet) bench_unet ;;
    modelzoo) bench_modelzoo ;;
    *) echo "bench.sh: unknown section '$section' (sections: validate, trace, compile, estimate, train, gpt2_small, csx, chains, long, stream, ranks, checkpoint, corpus, unet, modelzoo)" >&2; exit 2 ;;
  esac
done
