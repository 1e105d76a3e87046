#!/bin/bash
# Capture driver. usage: bash run_call.sh DEADLINE_S SCENARIO_FN...
# Each scenario runs in /tmp/cap/<name>/ (its "run directory"); everything is packed into $OUT/captures.tar.gz
# after every scenario, so partial results survive a timeout.
set -u
REPO=$(pwd)
SCRIPTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
T0=$(date +%s)
DEADLINE=${1:-540}; shift
OUTDIR=${OUT:-/tmp/outcap}
CAP=/tmp/cap
[ -d "$CAP" ] && mv "$CAP" "/tmp/cap_prev_$(date +%s)"   # a warm machine keeps the last call's captures
mkdir -p "$CAP/_harness" "$OUTDIR"
source "$SCRIPTS/lib.sh"

export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1

# the "project" the runs are launched from
P=${CAP_PROJ:-/workspace/proj}
mkdir -p $P && cp "$SCRIPTS"/*.py $P/

if [ -d "$REPO/.whl" ] && ls "$REPO"/.whl/*.whl >/dev/null 2>&1; then
  if [ ! -d /tmp/site/deepspeed ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$REPO"/.whl/*.whl > "$CAP/_harness/pip_install.log" 2>&1
    log "deepspeed install rc=$?"
  fi
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
  export PATH=/tmp/site/bin:$PATH
fi
HAVE_DS=0; python3 -c "import deepspeed" >/dev/null 2>&1 && HAVE_DS=1
log "HAVE_DS=$HAVE_DS"

# remember the machine's original /dev/shm size across calls; undo a small size left by an interrupted call
[ -f /tmp/shm_orig_size ] || df -B1 --output=size /dev/shm | tail -1 | tr -d ' ' > /tmp/shm_orig_size
SHM_ORIG_SIZE=$(cat /tmp/shm_orig_size)
if [ "$(df -B1 --output=size /dev/shm | tail -1 | tr -d ' ')" != "$SHM_ORIG_SIZE" ]; then
  mount -o remount,size=$SHM_ORIG_SIZE /dev/shm; log "restored /dev/shm left small by an earlier call"; fi
CORE_PATTERN_ORIG=$(cat /proc/sys/kernel/core_pattern 2>/dev/null)
log "shm orig size=$SHM_ORIG_SIZE core_pattern=$CORE_PATTERN_ORIG cgroup=$(cg_version) gpus=$(nvidia-smi -L | wc -l)"

cleanup() {
  [ -n "$SHM_METHOD" ] && shm_restore
  [ -n "$CORE_PATTERN_ORIG" ] && echo "$CORE_PATTERN_ORIG" > /proc/sys/kernel/core_pattern 2>/dev/null
  pack
  log "driver done, elapsed $(elapsed)s"
}
trap cleanup EXIT
cg_jobs_init

TR="torchrun --nproc_per_node 2 --log-dir torchrun_logs"

ds_cfg() { # $1 file, $2 precision(bf16|fp16), $3 micro, [$4 gas] [$5 train_batch]
  python3 - "$@" <<'EOF'
import json, sys
f, prec, micro = sys.argv[1], sys.argv[2], int(sys.argv[3])
gas = int(sys.argv[4]) if len(sys.argv) > 4 else 1
cfg = {"train_micro_batch_size_per_gpu": micro, "gradient_accumulation_steps": gas,
       "gradient_clipping": 1.0, "steps_per_print": 10, "wall_clock_breakdown": False,
       "zero_optimization": {"stage": 2, "overlap_comm": True, "contiguous_gradients": True,
                             "reduce_bucket_size": 50000000, "allgather_bucket_size": 50000000}}
if len(sys.argv) > 5:
    cfg["train_batch_size"] = int(sys.argv[5])
if prec == "fp16":
    cfg["fp16"] = {"enabled": True, "loss_scale": 0, "initial_scale_power": 16, "loss_scale_window": 1000,
                   "hysteresis": 2, "min_loss_scale": 1}
else:
    cfg["bf16"] = {"enabled": True}
json.dump(cfg, open(f, "w"), indent=2)
EOF
}

gpu_snap() { local o=$1; mkdir -p "$o"
  nvidia-smi > "$o/nvidia-smi.txt" 2>&1
  nvidia-smi --query-gpu=index,name,memory.used,memory.total,utilization.gpu,temperature.gpu,ecc.errors.uncorrected.volatile.total --format=csv > "$o/nvidia-smi-query-gpu.csv" 2>&1
  nvidia-smi -q > "$o/nvidia-smi-q.txt" 2>&1
}
wait_file() { local f=$1 n=$2; for _ in $(seq 1 $n); do [ -f "$f" ] && return 0; sleep 1; done; return 1; }

# ---------------------------------------------------------------------------------------------- scenarios
s00_machine() { local d=$1
  snap "$d/snapshot_idle"
  { echo "## uname"; uname -a; echo "## nproc"; nproc; echo "## python/torch"
    python3 -c "import sys, torch; print(sys.version); print('torch', torch.__version__, 'cuda', torch.version.cuda, 'nccl', torch.cuda.nccl.version(), 'gpus', torch.cuda.device_count())"
    python3 -c "import deepspeed; print('deepspeed', deepspeed.__version__, deepspeed.__file__)"
    python3 -c "import cupy; print('cupy', cupy.__version__)"
    python3 -m pip list 2>/dev/null | grep -iE '^(torch|nvidia-nccl|deepspeed|pydantic|transformers|accelerate|numpy|cupy|triton) '
    echo "## /dev/shm"; findmnt /dev/shm; mountpoint /dev/shm
    echo "## mounts"; mount | grep -E 'shm|cgroup|tmpfs'
    echo "## cgroup"; cat /proc/self/cgroup; ls /sys/fs/cgroup | head -60
    cat /sys/fs/cgroup/cgroup.controllers /sys/fs/cgroup/cgroup.subtree_control 2>&1
    echo "## core_pattern"; cat /proc/sys/kernel/core_pattern; ulimit -c
    echo "## tools"; which gcc cc nvcc dmesg 2>&1
    echo "## env"; env | grep -E '^(NCCL|TORCH|CUDA|NVSHMEM|PYTORCH)' | sort
    echo "## dmesg head"; dmesg 2>&1 | head -5
  } > "$d/machine_info.txt" 2>&1
  [ $HAVE_DS = 1 ] && timeout 60 ds_report > "$d/ds_report.txt" 2>&1
  true
}

s11a_healthy_torchrun() { local d=$1
  snap "$d/snapshot_before"
  ( wait_file out/train_state.json 90 && sleep 3 && gpu_snap "$d/snapshot_under_load" ) &
  launch 150 "TORCHELASTIC_ERROR_FILE=$d/torchelastic_error.json $TR $P/train_ddp.py --data features --sample-shape 1024 --num-samples 65536 --model mlp --hidden 8192 --layers 4 --batch-size 512 --num-workers 2 --steps 1200 --log-every 100"
  wait
  snap "$d/snapshot_after"
}

s11b_healthy_deepspeed() { local d=$1
  [ $HAVE_DS = 1 ] || { echo "no deepspeed"; return 3; }
  ds_cfg ds_config.json bf16 32
  snap "$d/snapshot_before"
  launch 180 "deepspeed --num_gpus 2 $P/train_ds.py --deepspeed --deepspeed_config ds_config.json --data synthetic --sample-shape 3,128,128 --num-workers 4 --steps 60"
  snap "$d/snapshot_after"
}

s01a_dataloader_shm_deepspeed_zero2() { local d=$1
  [ $HAVE_DS = 1 ] || { echo "no deepspeed"; return 3; }
  ds_cfg ds_config.json bf16 16
  shm_small 64M; echo "shm method: $SHM_METHOD"
  snap "$d/snapshot_before"
  launch 150 "deepspeed --num_gpus 2 $P/train_ds.py --deepspeed --deepspeed_config ds_config.json --data synthetic --sample-shape 4,3,512,512 --num-workers 4 --steps 50"
  snap "$d/snapshot_after"
  shm_restore
}

s01b_dataloader_shm_torchrun() { local d=$1
  shm_small 64M; echo "shm method: $SHM_METHOD"
  snap "$d/snapshot_before"
  launch 150 "TORCHELASTIC_ERROR_FILE=$d/torchelastic_error.json $TR $P/train_ddp.py --data synthetic --sample-shape 4,3,512,512 --batch-size 16 --num-workers 4 --steps 50 --log-every 5"
  snap "$d/snapshot_after"
  shm_restore
}

s01c_dataloader_shm_sigbus_torchrun() { local d=$1
  shm_small 64M; echo "shm method: $SHM_METHOD"
  snap "$d/snapshot_before"
  launch 150 "TORCHELASTIC_ERROR_FILE=$d/torchelastic_error.json $TR $P/train_ddp.py --data shm-cache --shm-cache-mb 256 --sample-shape 3,512,512 --batch-size 8 --num-workers 4 --steps 50 --log-every 5"
  snap "$d/snapshot_after"
  shm_restore
}

s01d_dataloader_shm_sigbus_deepspeed() { local d=$1
  [ $HAVE_DS = 1 ] || { echo "no deepspeed"; return 3; }
  ds_cfg ds_config.json bf16 8
  shm_small 64M; echo "shm method: $SHM_METHOD"
  snap "$d/snapshot_before"
  launch 150 "deepspeed --num_gpus 2 $P/train_ds.py --deepspeed --deepspeed_config ds_config.json --data shm-cache --shm-cache-mb 256 --sample-shape 3,512,512 --num-workers 4 --steps 50"
  snap "$d/snapshot_after"
  shm_restore
}

nccl_shm_run() { # $1 dir, $2 shm size, $3 extra env
  local d=$1
  shm_small "$2"; echo "shm method: $SHM_METHOD"
  snap "$d/snapshot_before"
  launch 120 "$3 NCCL_P2P_DISABLE=1 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,SHM TORCHELASTIC_ERROR_FILE=$d/torchelastic_error.json $TR $P/train_ddp.py --data features --sample-shape 1024 --num-samples 8192 --model mlp --hidden 16384 --layers 2 --batch-size 64 --num-workers 0 --steps 20 --log-every 5"
  local rc=$?
  snap "$d/snapshot_after"
  shm_restore
  return $rc
}
NCCL_FLAG=$CAP/_harness/nccl_failed
s02a_nccl_shm_transport_devshm64m() { nccl_shm_run "$1" 64M "" || touch $NCCL_FLAG; }
s02b_nccl_shm_transport_devshm64m_cumemhost0() { nccl_shm_run "$1" 64M "NCCL_CUMEM_HOST_ENABLE=0" || touch $NCCL_FLAG; }
s02c_nccl_shm_transport_devshm16m_cumem0() { nccl_shm_run "$1" 16M "NCCL_CUMEM_ENABLE=0 NCCL_CUMEM_HOST_ENABLE=0" || touch $NCCL_FLAG; }

s12_core_dump_sigbus_tmpfs() { local d=$1
  mkdir -p /tmp/cores
  echo "/tmp/cores/core.%e.%p.%s" > /proc/sys/kernel/core_pattern; echo "core_pattern now: $(cat /proc/sys/kernel/core_pattern)"
  shm_small 64M
  ulimit -c unlimited
  snap "$d/snapshot_before"
  launch 60 "python3 $P/shm_feature_cache.py /dev/shm/feature_cache.bin 256; exit \$?"
  snap "$d/snapshot_after"
  rm -f /dev/shm/feature_cache.bin
  shm_restore
  ls -la /tmp/cores
  for c in $(ls /tmp/cores/core.* "$d"/core "$d"/core.[0-9]* 2>/dev/null); do [ -f "$c" ] || continue
    echo "core $c size $(stat -c %s "$c")"; file "$c" 2>/dev/null
    gzip -c "$c" > "$d/$(basename "$c").gz"; ls -la "$d/$(basename "$c").gz"
    [ $(stat -c %s "$d/$(basename "$c").gz") -gt 15000000 ] && { echo "core too large compressed, dropped"; rm -f "$d/$(basename "$c").gz"; }
    rm -f "$c"
  done
  echo "$CORE_PATTERN_ORIG" > /proc/sys/kernel/core_pattern
}

s03a_cuda_oom_python() { local d=$1
  snap "$d/snapshot_before"
  launch 120 "CUDA_VISIBLE_DEVICES=0 python3 $P/train_gpt.py --n-layer 24 --n-head 16 --n-embd 2048 --seq-len 2048 --batch-size 64 --steps 10"
  snap "$d/snapshot_after"
}

s03b_cuda_oom_torchrun() { local d=$1
  snap "$d/snapshot_before"
  launch 150 "TORCHELASTIC_ERROR_FILE=$d/torchelastic_error.json $TR $P/train_gpt.py --n-layer 24 --n-head 16 --n-embd 2048 --seq-len 2048 --batch-size 64 --steps 10"
  snap "$d/snapshot_after"
}

s04_nccl_collective_timeout() { local d=$1
  mkdir -p fr_dumps
  snap "$d/snapshot_before"
  launch 200 "TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1 TORCH_FR_DUMP_TEMP_FILE=$d/fr_dumps/nccl_trace_rank_ TORCH_NCCL_DEBUG_INFO_TEMP_FILE=$d/fr_dumps/nccl_trace_rank_ TORCHELASTIC_ERROR_FILE=$d/torchelastic_error.json $TR $P/train_ddp.py --data synthetic --sample-shape 3,64,64 --batch-size 64 --num-workers 2 --steps 200 --log-every 10 --pg-timeout 30 --val-every 20 --val-batches 100"
  snap "$d/snapshot_after"
  ls -la fr_dumps
  if ls fr_dumps/nccl_trace_rank_* >/dev/null 2>&1; then
    timeout 60 python3 -m torch.distributed.flight_recorder.fr_trace fr_dumps --prefix nccl_trace_rank_ > fr_trace_analysis.txt 2>&1
    timeout 60 python3 -m torch.distributed.flight_recorder.fr_trace fr_dumps --prefix nccl_trace_rank_ -j > fr_trace_entries.txt 2>&1
  fi
  true
}

s05_rank1_sigsegv_cascade() { local d=$1
  snap "$d/snapshot_before"
  launch 150 "TORCHELASTIC_ERROR_FILE=$d/torchelastic_error.json $TR $P/train_ddp.py --data synthetic --sample-shape 3,64,64 --batch-size 64 --num-workers 2 --steps 300 --log-every 10 --fast-decode --fast-decode-warmup-steps 30"
  snap "$d/snapshot_after"
}

s05b_rank1_sigsegv_faulthandler_tee() { local d=$1
  snap "$d/snapshot_before"
  launch 150 "PYTHONFAULTHANDLER=1 TORCHELASTIC_ERROR_FILE=$d/torchelastic_error.json $TR --tee 3 $P/train_ddp.py --data synthetic --sample-shape 3,64,64 --batch-size 64 --num-workers 2 --steps 300 --log-every 10 --fast-decode --fast-decode-warmup-steps 30"
  snap "$d/snapshot_after"
}

s06_cgroup_oom_kill_rank1() { local d=$1
  local v=$(cg_version) CG
  echo "cgroup version: $v"
  if [ "$v" = v2 ]; then
    grep -qw memory /sys/fs/cgroup/cgroup.subtree_control || echo +memory > /sys/fs/cgroup/cgroup.subtree_control
    CG=/sys/fs/cgroup/trainjob_4242
    mkdir -p $CG && echo 10G > $CG/memory.max; [ -f $CG/memory.swap.max ] && echo 0 > $CG/memory.swap.max
  else
    CG=/sys/fs/cgroup/memory/trainjob_4242
    mkdir -p $CG && echo 10G > $CG/memory.limit_in_bytes
  fi
  ls $CG; cat $CG/memory.max $CG/memory.limit_in_bytes 2>/dev/null
  snap "$d/snapshot_before" "$CG"
  launch 180 "echo \$\$ > $CG/cgroup.procs && TORCHELASTIC_ERROR_FILE=$d/torchelastic_error.json exec $TR $P/train_ddp.py --data synthetic --sample-shape 3,224,224 --batch-size 64 --num-workers 4 --steps 400 --log-every 5 --keep-debug-batches 1"
  sleep 1
  snap "$d/snapshot_after" "$CG"
  dmesg -T 2>&1 | grep -iE -B2 -A25 'oom|killed process' | tail -n 120 > "$d/dmesg-oom.txt"
  cat $CG/cgroup.procs; rmdir $CG && echo "cgroup removed"
  true
}

s06b_cgroup_oom_kill_rank1_only() { local d=$1
  # only local rank 1 (and the DataLoader workers it forks) is moved into a memory-limited cgroup,
  # the way a per-task cgroup (e.g. Slurm task/affinity + cgroup per task) would hold it
  local v=$(cg_version) CG LIM=6G
  if [ "$v" = v2 ]; then
    grep -qw memory /sys/fs/cgroup/cgroup.subtree_control || echo +memory > /sys/fs/cgroup/cgroup.subtree_control
    CG=/sys/fs/cgroup/trainjob_4243_rank1
    mkdir -p $CG && echo $LIM > $CG/memory.max; [ -f $CG/memory.swap.max ] && echo 0 > $CG/memory.swap.max
  else
    CG=/sys/fs/cgroup/memory/trainjob_4243_rank1
    mkdir -p $CG && echo $LIM > $CG/memory.limit_in_bytes
  fi
  snap "$d/snapshot_before" "$CG"
  ( for i in $(seq 1 300); do
      for p in /proc/[0-9]*; do p=${p#/proc/}
        if { tr '\0' '\n' < /proc/$p/environ; } 2>/dev/null | grep -qx "CAPTURE_TAG=$CAPTURE_TAG" && \
           { tr '\0' '\n' < /proc/$p/environ; } 2>/dev/null | grep -qx "LOCAL_RANK=1" && \
           grep -q train_ddp.py /proc/$p/cmdline 2>/dev/null; then
          echo $p > $CG/cgroup.procs && echo "moved pid $p (local rank 1) into $CG after ${i} polls"; exit 0
        fi
      done; sleep 0.1
    done; echo "rank 1 not found" ) &
  launch 180 "TORCHELASTIC_ERROR_FILE=$d/torchelastic_error.json $TR $P/train_ddp.py --data synthetic --sample-shape 3,224,224 --batch-size 64 --num-workers 2 --steps 400 --log-every 5 --keep-debug-batches 1"
  wait
  sleep 1
  snap "$d/snapshot_after" "$CG"
  dmesg -T 2>&1 | grep -iE -B2 -A25 'oom|killed process' | tail -n 150 > "$d/dmesg-oom.txt"
  cat $CG/cgroup.procs; rmdir $CG && echo "cgroup removed"
  true
}

s09_rank0_keyerror_record() { local d=$1
  mkdir -p data
  python3 - <<'EOF'
import json
with open("data/train_manifest.jsonl", "w") as f:
    for i in range(4096):
        rec = {"uid": i, "path": f"s3://bucket/images/{i:07d}.jpg", "shape": [3, 64, 64], "label_id": i % 10}
        if i == 2 * 32 * 7 + 2 * 5:  # a record written by the older exporter
            rec = {"uid": i, "path": f"s3://bucket/images/{i:07d}.jpg", "shape": [3, 64, 64], "label": "cat"}
        f.write(json.dumps(rec) + "\n")
EOF
  snap "$d/snapshot_before"
  launch 120 "TORCHELASTIC_ERROR_FILE=$d/torchelastic_error.json $TR --tee 3 $P/train_ddp.py --data manifest --manifest data/train_manifest.jsonl --batch-size 32 --num-workers 2 --steps 100 --log-every 2"
  snap "$d/snapshot_after"
}

s08_master_port_in_use() { local d=$1
  snap "$d/snapshot_before"
  local TRP="torchrun --nnodes 1 --nproc_per_node 2 --master_addr 127.0.0.1 --master_port 29533"
  ( timeout -k 5 120 bash -c "TORCHELASTIC_ERROR_FILE=$d/first_run_torchelastic_error.json $TRP --log-dir torchrun_logs_first $P/train_ddp.py --data synthetic --sample-shape 3,224,224 --batch-size 64 --num-workers 2 --steps 500 --log-every 50 --out-dir out_first --log-dir logs_first" > console_first_run.log 2>&1 ) &
  local bg=$!
  wait_file out_first/train_state.json 60
  launch 60 "TORCHELASTIC_ERROR_FILE=$d/torchelastic_error.json $TRP --log-dir torchrun_logs $P/train_ddp.py --data synthetic --sample-shape 3,64,64 --batch-size 64 --num-workers 2 --steps 100"
  wait $bg; echo "first run rc=$?"
  snap "$d/snapshot_after"
}

s07a_device_assert_embedding() { local d=$1
  mkdir -p data
  echo '{"base_vocab": 32000, "added_tokens": {"<|im_start|>": 32000, "<|im_end|>": 32001}, "num_sequences": 20000, "chat_formatted_from": 96}' > data/chat_tokens.json
  snap "$d/snapshot_before"
  launch 90 "CUDA_VISIBLE_DEVICES=0 python3 $P/finetune_lm.py --data data/chat_tokens.json --vocab-size 32000 --batch-size 16 --steps 50"
  snap "$d/snapshot_after"
}
s07b_device_assert_embedding_launch_blocking() { local d=$1
  mkdir -p data
  echo '{"base_vocab": 32000, "added_tokens": {"<|im_start|>": 32000, "<|im_end|>": 32001}, "num_sequences": 20000, "chat_formatted_from": 96}' > data/chat_tokens.json
  snap "$d/snapshot_before"
  launch 90 "CUDA_LAUNCH_BLOCKING=1 CUDA_VISIBLE_DEVICES=0 python3 $P/finetune_lm.py --data data/chat_tokens.json --vocab-size 32000 --batch-size 16 --steps 50"
  snap "$d/snapshot_after"
}
s07c_illegal_memory_access_cupy() { local d=$1
  snap "$d/snapshot_before"
  launch 90 "CUDA_VISIBLE_DEVICES=0 python3 $P/train_recsys.py"
  snap "$d/snapshot_after"
}
s07d_illegal_memory_access_cupy_launch_blocking() { local d=$1
  snap "$d/snapshot_before"
  launch 90 "CUDA_LAUNCH_BLOCKING=1 CUDA_VISIBLE_DEVICES=0 python3 $P/train_recsys.py"
  snap "$d/snapshot_after"
}
s07e_device_assert_torchrun() { local d=$1
  mkdir -p data
  echo '{"base_vocab": 32000, "added_tokens": {"<|im_start|>": 32000, "<|im_end|>": 32001}, "num_sequences": 20000, "chat_formatted_from": 416}' > data/chat_tokens.json
  snap "$d/snapshot_before"
  launch 120 "TORCHELASTIC_ERROR_FILE=$d/torchelastic_error.json $TR $P/finetune_lm.py --data data/chat_tokens.json --vocab-size 32000 --batch-size 16 --steps 50"
  snap "$d/snapshot_after"
}

s10a_deepspeed_fp16_loss_scale_collapse() { local d=$1
  [ $HAVE_DS = 1 ] || { echo "no deepspeed"; return 3; }
  mkdir -p data
  python3 - <<'EOF'
import numpy as np
rng = np.random.default_rng(0)
x = rng.normal(size=(20000, 32)).astype(np.float32)
x[:, 7] = 1.0  # sensor 7 is stuck at a constant value in this export
y = rng.integers(0, 10, size=(20000, 1)).astype(np.float32)
np.save("data/sensor_features.npy", np.concatenate([x, y], 1))
EOF
  ds_cfg ds_config.json fp16 64
  snap "$d/snapshot_before"
  launch 150 "deepspeed --num_gpus 2 $P/train_ds.py --deepspeed --deepspeed_config ds_config.json --data tabular --features data/sensor_features.npy --normalize-features --num-workers 2 --steps 200"
  snap "$d/snapshot_after"
}

s10b_deepspeed_batch_size_assert() { local d=$1
  [ $HAVE_DS = 1 ] || { echo "no deepspeed"; return 3; }
  ds_cfg ds_config.json bf16 4 3 32
  snap "$d/snapshot_before"
  launch 120 "deepspeed --num_gpus 2 $P/train_ds.py --deepspeed --deepspeed_config ds_config.json --data synthetic --sample-shape 3,64,64 --num-workers 2 --steps 50"
  snap "$d/snapshot_after"
}

[ -f "$SCRIPTS/extra_scenarios.sh" ] && source "$SCRIPTS/extra_scenarios.sh"

# ---------------------------------------------------------------------------------------------- main
log "scenarios: $*"
for s in "$@"; do
  case $s in
    s02c_*) [ -f $NCCL_FLAG ] && { log "SKIP $s (NCCL already failed in 02a/02b)"; continue; } ;;
  esac
  est=30
  case $s in s04_*) est=90;; s06*|s08_*|s11*) est=50;; s03b*|s01a*|s01d*|s10a*) est=40;; esac
  scn "${s#s}" $est "$s"
done
