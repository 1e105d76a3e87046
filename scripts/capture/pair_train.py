#!/usr/bin/env python3
"""A small real training program for capturing pairs of runs that differ in one setting.

It reads a LLaMA-Factory-style YAML file (per_device_train_batch_size, gradient_accumulation_steps,
bf16/fp16, dataloader_num_workers, learning_rate, max_steps, hidden_size), trains an MLP regressor
on synthetic sensor readings (one column is left in raw units, as an unnormalised export would be)
under torch.autocast in the configured precision, and logs loss and grad norm per step. It stops
with "Loss is nan" when the loss stops being finite, as many training scripts do.
"""
import logging
import math
import sys
import time

import torch
import yaml
from torch.utils.data import DataLoader, Dataset

log = logging.getLogger("train")


class SensorReadings(Dataset):
    def __init__(self, n, width, raw_scale):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, width, generator=g)
        self.x[:, 3] = self.x[:, 3].abs() * raw_scale  # pressure in Pa, never normalised
        w = torch.randn(width, 1, generator=g)
        self.y = (self.x[:, :3] @ w[:3]) + 0.1 * torch.randn(n, 1, generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


def main():
    cfg_path = sys.argv[1] if len(sys.argv) > 1 else "train_config.yaml"
    cfg = yaml.safe_load(open(cfg_path))
    logging.basicConfig(format="%(asctime)s [%(levelname)s] %(name)s: %(message)s", level=logging.INFO)
    log.info("loaded %s", cfg_path)
    dtype = torch.bfloat16 if cfg.get("bf16") else torch.float16 if cfg.get("fp16") else torch.float32
    dev = torch.device("cuda")
    width, hidden = 32, int(cfg.get("hidden_size", 4096))
    model = torch.nn.Sequential(
        torch.nn.Linear(width, hidden), torch.nn.GELU(), torch.nn.Linear(hidden, hidden), torch.nn.GELU(),
        torch.nn.Linear(hidden, 1)).to(dev)
    log.info("model: %.1fM parameters, autocast %s", sum(p.numel() for p in model.parameters()) / 1e6, dtype)
    opt = torch.optim.AdamW(model.parameters(), lr=float(cfg.get("learning_rate", 1e-4)))
    scaler = torch.amp.GradScaler("cuda", enabled=dtype == torch.float16)
    bs = int(cfg["per_device_train_batch_size"])
    ds = SensorReadings(int(cfg.get("num_samples", 200000)), width, float(cfg.get("raw_scale", 1.5e5)))
    dl = DataLoader(ds, batch_size=bs, shuffle=True, num_workers=int(cfg.get("dataloader_num_workers", 0)),
                    drop_last=True)
    gas = int(cfg.get("gradient_accumulation_steps", 1))
    steps = int(cfg.get("max_steps", 100))
    step, t = 0, time.time()
    while step < steps:
        for i, (x, y) in enumerate(dl):
            x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
            with torch.autocast("cuda", dtype=dtype, enabled=dtype != torch.float32):
                loss = torch.nn.functional.mse_loss(model(x).float(), y)
            scaler.scale(loss / gas).backward()
            if (i + 1) % gas:
                continue
            scaler.unscale_(opt)
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
            opt.zero_grad(set_to_none=True)
            step += 1
            lv = loss.item()
            if step % 5 == 0 or not math.isfinite(lv):
                dt = (time.time() - t) / 5
                t = time.time()
                log.info("step %d/%d loss %.4f grad_norm %.3f step_time %.3fs", step, steps, lv, gn.item(), dt)
            if not math.isfinite(lv):
                log.error("Loss is nan, stopping training")
                sys.exit(1)
            if step >= steps:
                break
    log.info("training finished: %d steps", step)


if __name__ == "__main__":
    main()
