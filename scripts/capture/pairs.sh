#!/usr/bin/env bash
# Captures pairs of real runs that differ in one setting, for `trainwreck diff` (issue 20): each
# pair is a good run and a bad run of the same program, in $OUT/pairs/<pair>/{good,bad}/, packed
# into $OUT/pairs.tar.gz after every run so a timeout still returns what was made.
# Needs a CUDA machine with torch and PyYAML, root (to shrink /dev/shm), and the capture helpers
# of the corpus (lib.sh's `snap`, train_ddp.py) in $TOOLS (default: this folder, which holds them).
# usage: TOOLS=DIR OUT=DIR bash scripts/capture/pairs.sh [PAIR...]
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOOLS=${TOOLS:-$HERE}
OUTDIR=${OUT:-/tmp/outpairs}
CAP=/tmp/pairs
T0=$(date +%s); DEADLINE=${DEADLINE:-560}
rm -rf "$CAP"; mkdir -p "$CAP" "$OUTDIR"
source "$TOOLS/lib.sh"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
[ -f /tmp/shm_orig_size ] || df -B1 --output=size /dev/shm | tail -1 | tr -d ' ' > /tmp/shm_orig_size
SHM_ORIG_SIZE=$(cat /tmp/shm_orig_size)
P=/workspace/proj; mkdir -p $P; cp "$TOOLS"/train_ddp.py "$HERE"/pair_train.py $P/
pack() { tar czf "$OUTDIR/pairs.tar.gz.tmp" -C "$CAP" . && mv -f "$OUTDIR/pairs.tar.gz.tmp" "$OUTDIR/pairs.tar.gz"; }
trap '[ -n "$SHM_METHOD" ] && shm_restore; pack' EXIT

# one run: $1 pair/side dir, $2 timeout, rest: the command, run in that dir with console.log
one() {
  local d=$CAP/$1 to=$2; shift 2
  [ $(( $(date +%s) - T0 + to )) -gt "$DEADLINE" ] && { log "SKIP $d (deadline)"; return; }
  mkdir -p "$d"; cd "$d" || return
  [ -n "${CONFIG:-}" ] && printf '%s\n' "$CONFIG" > train_config.yaml
  snap "$d/snapshot_before"
  log "BEGIN $1: $*"
  timeout -k 5 "$to" bash -c "$*" > console.log 2>&1
  local rc=$?
  echo "$rc" > exit_code.txt
  snap "$d/snapshot_after"
  log "END $1 rc=$rc"; tail -n 3 console.log | cut -c1-240 | sed 's/^/    | /'
  rm -rf out torchrun_logs/*/attempt_*/*/error.json.bak
  cd /; pack
}

TR="torchrun --nproc_per_node 1 --log-dir torchrun_logs"
DDP="$TR $P/train_ddp.py --data synthetic --sample-shape 4,3,512,512 --batch-size 16 --steps 40 --log-every 5"
cfg() { # batch hidden precision workers samples steps
  printf 'model_name_or_path: mlp-regressor\nstage: sft\ndo_train: true\nper_device_train_batch_size: %s\ngradient_accumulation_steps: 1\nhidden_size: %s\n%s: true\ndataloader_num_workers: %s\nnum_samples: %s\nmax_steps: %s\nlearning_rate: 1.0e-4\nraw_scale: 1.5e5\n' "$@"
}

pair_shm_size() {
  CONFIG= one shm_size/good 90 "TORCHELASTIC_ERROR_FILE=\$PWD/torchelastic_error.json $DDP --num-workers 4"
  shm_small 64M
  CONFIG= one shm_size/bad 90 "TORCHELASTIC_ERROR_FILE=\$PWD/torchelastic_error.json $DDP --num-workers 4"
  shm_restore
}
pair_workers() {
  shm_small 64M
  CONFIG= one workers/good 90 "TORCHELASTIC_ERROR_FILE=\$PWD/torchelastic_error.json $DDP --num-workers 0"
  CONFIG= one workers/bad 90 "TORCHELASTIC_ERROR_FILE=\$PWD/torchelastic_error.json $DDP --num-workers 4"
  shm_restore
}
pair_batch_size() {
  CONFIG=$(cfg 4096 16384 bf16 2 1100000 40) one batch_size/good 90 "python3 $P/pair_train.py train_config.yaml"
  CONFIG=$(cfg 1048576 16384 bf16 2 1100000 40) one batch_size/bad 90 "python3 $P/pair_train.py train_config.yaml"
}
pair_precision() {
  CONFIG=$(cfg 4096 4096 bf16 2 200000 60) one precision/good 90 "python3 $P/pair_train.py train_config.yaml"
  CONFIG=$(cfg 4096 4096 fp16 2 200000 60) one precision/bad 90 "python3 $P/pair_train.py train_config.yaml"
}
SHM_METHOD=""
for p in "${@:-shm_size workers batch_size precision}"; do for q in $p; do "pair_$q"; done; done
log "done in $(( $(date +%s) - T0 ))s"
