# trainwreck's own capture scenarios, sourced by run_call.sh (same conventions: each runs in
# its run directory, snapshots before/after, console.log from `launch`).

# A healthy HF Trainer run (must stay clean), with nvidia-smi captured under load.
s23_healthy_hf_trainer() { local d=$1
  snap "$d/snapshot_before"
  ( sleep 20 && gpu_snap "$d/snapshot_under_load" ) &
  launch 150 "CUDA_VISIBLE_DEVICES=0 python3 $P/hf_pretrain.py --learning-rate 5e-4 --max-steps 60 --batch-size 16 --seq-len 256 --fp16 0"
  wait
  snap "$d/snapshot_after"
}

# CUDA OOM where another process holds the card: PyTorch itself holds little.
s24_cuda_oom_other_process() { local d=$1
  snap "$d/snapshot_before"
  python3 -c "
import torch, time
free, total = torch.cuda.mem_get_info(0)
x = torch.empty(int(free - (6 << 30)), dtype=torch.uint8, device='cuda:0')
open('hog_ready', 'w').write(str(x.numel()))
time.sleep(150)
" > hog.log 2>&1 &
  local hog=$!
  wait_file hog_ready 60
  gpu_snap "$d/snapshot_during_hog"
  launch 120 "CUDA_VISIBLE_DEVICES=0 python3 $P/train_gpt.py --n-layer 12 --n-head 12 --n-embd 768 --seq-len 1024 --batch-size 16 --steps 10"
  kill $hog 2>/dev/null; wait $hog 2>/dev/null
  snap "$d/snapshot_after"
}

# Rank 1 is SIGKILLed from outside mid-training (no OOM, no kernel record): the bare-SIGKILL
# case; torchrun tears rank 0 down.
s25_rank1_sigkill_external() { local d=$1
  snap "$d/snapshot_before"
  ( for _ in $(seq 1 90); do grep -q "step 40" console.log 2>/dev/null && break; sleep 1; done
    pid=$(pgrep -f "train_ddp.py" | sort -n | tail -1)
    echo "killing $pid" > killed.txt; kill -KILL "$pid" ) &
  launch 150 "TORCHELASTIC_ERROR_FILE=$d/torchelastic_error.json $TR $P/train_ddp.py --data synthetic --sample-shape 3,64,64 --batch-size 64 --num-workers 2 --steps 400 --log-every 10 --pg-timeout 30"
  wait
  snap "$d/snapshot_after"
}

# Rank 1 hangs outside any collective (long rank-1-only work, NCCL_DEBUG=INFO): rank 0's
# watchdog fires; Flight Recorder dumps on timeout.
s26_rank1_lags_watchdog() { local d=$1
  mkdir -p fr_dumps
  snap "$d/snapshot_before"
  launch 200 "NCCL_DEBUG=INFO TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1 TORCH_FR_DUMP_TEMP_FILE=$d/fr_dumps/nccl_trace_rank_ TORCHELASTIC_ERROR_FILE=$d/torchelastic_error.json $TR --tee 3 $P/train_ddp.py --data synthetic --sample-shape 3,64,64 --batch-size 64 --num-workers 2 --steps 200 --log-every 10 --pg-timeout 30 --val-every 20 --val-batches 100"
  snap "$d/snapshot_after"
  true
}

# The seed story under `trainwreck run`: /dev/shm shrunk to 64M, DataLoader workers stage a
# feature cache there and die of SIGBUS; the wrapper samples /dev/shm, cgroup and GPU memory
# every 100 ms, so the capture shows the climb to the limit and the moment of death. Needs the
# release binary in the tree (`cargo build --release`; carried as target/release/trainwreck).
s27_run_shm_sigbus_samples() { local d=$1
  shm_small 64M; echo "shm method: $SHM_METHOD"
  snap "$d/snapshot_before"
  timeout 150 "$REPO/target/release/trainwreck" run --out "$d/run" --interval 100 --no-record -- \
    torchrun --nproc_per_node 1 --log-dir torchrun_logs $P/train_ddp.py --data shm-cache --shm-cache-mb 256 \
    --sample-shape 3,512,512 --batch-size 8 --num-workers 4 --steps 50 --log-every 5 > "$d/trainwreck_run.txt" 2>&1
  echo "trainwreck run rc=$?"
  snap "$d/snapshot_after"
  shm_restore
}

# GPU memory climbing a step at a time (every step's logits kept on the card for a metric at
# the end) until CUDA runs out, with the user's own nvidia-smi polled beside the run into
# gpu_memory.csv (once a second, as docs/html.md shows) and the wrapper sampling every 200 ms:
# real curves for the memory charts, and a failure time in the step lines' clock. Needs the
# release binary in the tree, as s27.
s28_cuda_oom_logits_leak_polled() { local d=$1
  snap "$d/snapshot_before"
  nvidia-smi --query-gpu=timestamp,index,memory.used,memory.total --format=csv -l 1 > "$d/gpu_memory.csv" 2>&1 &
  local poll=$!
  sleep 2
  timeout 240 "$REPO/target/release/trainwreck" run --out "$d/run" --interval 200 --no-record -- \
    python3 $P/train_gpt.py --n-layer 12 --n-head 12 --n-embd 1536 --seq-len 2048 --batch-size 4 \
    --grad-accum 8 --steps 1000 --collect-logits --log-time > "$d/trainwreck_run.txt" 2>&1
  echo "trainwreck run rc=$?"
  sleep 2; kill $poll 2>/dev/null; wait $poll 2>/dev/null
  snap "$d/snapshot_after"
}

# The same program healthy (no logits kept, 30 steps) under `trainwreck run`: the good run to
# diff s28 against.
s29_run_healthy_gpt() { local d=$1
  snap "$d/snapshot_before"
  timeout 150 "$REPO/target/release/trainwreck" run --out "$d/run" --interval 200 --no-record -- \
    python3 $P/train_gpt.py --n-layer 12 --n-head 12 --n-embd 1536 --seq-len 2048 --batch-size 4 \
    --grad-accum 8 --steps 30 --log-time > "$d/trainwreck_run.txt" 2>&1
  echo "trainwreck run rc=$?"
  snap "$d/snapshot_after"
}
