# ruff: noqa: E501
"""Real lines printed by training jobs, copied verbatim from public sources (provenance on each).
Nothing here was written by us: the parsers are tested on what trainers really print."""

# bigscience-workshop/bigscience : train/tr11-176B-ml/chronicles.md (BLOOM-176B, the 2022-04-12 loss
# spike at iteration 31219; Megatron-DeepSpeed under torch.distributed, rank prefix "[default7]:")
MEGATRON_BLOOM = [
    "[default7]: iteration    31218/  115311 | consumed samples:     47776688 | consumed tokens:  97846657024 | elapsed time per iteration (s): 107.53 | learning rate: 5.279E-05 | global batch size:  2048 | lm loss: 2.345279E+00 | grad norm: 145.119 | num zeros: 0.0 | number of skipped iterations:   0 | number of nan iterations:   0 | samples per second: 19.046 | TFLOPs: 145.82 |",
    "[default7]: iteration    31219/  115311 | consumed samples:     47778736 | consumed tokens:  97850851328 | elapsed time per iteration (s): 106.36 | learning rate: 5.279E-05 | global batch size:  2048 | lm loss: 5.098124E+00 | grad norm: 960.351 | num zeros: 0.0 | number of skipped iterations:   0 | number of nan iterations:   0 | samples per second: 19.256 | TFLOPs: 147.43 |",
    "[default7]: iteration    31220/  115311 | consumed samples:     47780784 | consumed tokens:  97855045632 | elapsed time per iteration (s): 106.30 | learning rate: 5.279E-05 | global batch size:  2048 | lm loss: 3.492029E+00 | grad norm: 353.201 | num zeros: 0.0 | number of skipped iterations:   0 | number of nan iterations:   0 | samples per second: 19.266 | TFLOPs: 147.51 |",
]
# same file, the 2022-04-30 eval hang: the validation line, the separator, then nothing for 3+ hours
MEGATRON_BLOOM_EVAL = [
    "[default7]: iteration    45000/  115311 | consumed samples:     76002224 | consumed tokens: 155652554752 | elapsed time per iteration (s): 111.00 | learning rate: 4.298E-05 | global batch size:  2048 | lm loss: 2.113567E+00 | grad norm: 0.139 | num zeros: 0.0 | number of skipped iterations:   0 | number of nan iterations:   0 | samples per second: 18.451 | TFLOPs: 141.26 |",
    "[default7]:-------------------------------------------------------------------------------------------",
    "[default7]:valid loss at iteration 45000 | lm loss value: 2.327091E+00 | lm loss PPL: 1.024808E+01 |",
    "[2022-05-01 03:56:11] PULSE: tr11-176B-ml is waiting to be scheduled (1528874_[1-3%1] on 'gpu_p5' partition)",
]
# github.com/bigscience-workshop/Megatron-DeepSpeed/issues/396: iterations that logged no loss, grad norm nan
MEGATRON_NO_LOSS = " iteration     5426/  250000 | consumed samples:        43408 | consumed tokens:     88899584 | elapsed time per iteration (ms): 4247.9 | learning rate: 2.999E-04 | global batch size:     8 | loss scale: 1.0 | grad norm: nan | actual seqlen:  2048 | number of skipped iterations:   0 | number of nan iterations:   0 | samples per second: 1.883 | TFLOPs: 78.36 |"

# github.com/pytorch/torchtitan/pull/3393 (2026-05) and /pull/1287 (2025-06, no grad_norm yet)
TORCHTITAN = [
    "[rank0]:[titan] 2026-05-18 16:04:46,338 - root - INFO - step: 14  loss:  3.24405  grad_norm:  0.8319  memory:  9.46GiB(64.99%)  tps: 7,282  tflops: 0.52  mfu: 0.17%",
    "[rank0]:[titan] 2026-05-18 16:04:47,456 - root - INFO - step: 15  loss:  3.10680  grad_norm:  0.8587  memory:  9.46GiB(64.99%)  tps: 7,334  tflops: 0.53  mfu: 0.17%",
]
TORCHTITAN_OLD = [
    "[rank0]:[titan] 2025-06-16 22:30:48,735 - root - INFO - [GC] Peforming periodical GC collection. 0.06 seconds.",
    "[rank0]:[titan] 2025-06-16 22:30:50,322 - root - INFO - step: 200  loss:  6.1384  memory: 49.66GiB(52.28%)  tps: 5,856  tflops: 339.16  mfu: 34.29%",
    "[rank0]:[titan] 2025-06-16 22:30:50,758 - root - INFO - Dumping profiler traces at step 200",
    "[rank0]:[titan] 2025-06-16 22:31:04,970 - root - INFO - step: 210  loss:  6.0388  memory: 49.66GiB(52.28%)  tps: 5,593  tflops: 323.92  mfu: 32.75%",
]

# github.com/DAMO-NLP-SG/VideoLLaMA2/issues/157 (Hugging Face Trainer, printed dicts)
HF = [
    "{'loss': 1.5214, 'grad_norm': 82.93941089686794, 'learning_rate': 1.4285714285714286e-06, 'epoch': 0.01}",
    "{'loss': 1.5197, 'grad_norm': 91.43226300518772, 'learning_rate': 2.8571428571428573e-06, 'epoch': 0.01}",
    "{'loss': 1.3843, 'grad_norm': 117.94924912080238, 'learning_rate': 4.2857142857142855e-06, 'epoch': 0.02}",
]
# github.com/SY-Xuan/Pink/issues/6: a NaN gradient norm, padded by the progress bar's width
HF_NAN = "{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 0.0005142857142857142, 'epoch': 0.01}                    "

# github.com/karpathy/llm.c/issues/796 (train_gpt2cu's stdout; -100% MFU: not measured on that GPU)
LLMC = [
    "step   61/74 | loss 3.208939 (+nanz)| norm 1.4800 (+nanz)| lr 3.00e-04 | 44.57 ms | -100.0% bf16 MFU | 91886 tok/s",
    "step   62/74 | loss 3.464926 (+nanz)| norm 1.3662 (+nanz)| lr 3.00e-04 | 44.57 ms | -100.0% bf16 MFU | 91886 tok/s",
]
# KellerJordan/modded-nanogpt @ f411b3d3 : records/track_1_short/2024-10-13_llmc/main.log (llm.c's log file)
LLMC_FILE = [
    "s:0 tel:11.0092",
    "s:0 trl:11.0091 lr:0.000001 norm:15.37",
    "s:1 trl:10.9598 lr:0.000002 norm:15.24",
]

# github.com/karpathy/nanoGPT/issues/215 (the user's timestamps before nanoGPT's lines; the loss goes NaN)
NANOGPT = [
    "2023-03-22 09:31:56 iter 2990: loss 3.8853, time 1096.65ms, mfu 15.34%",
    "2023-03-22 09:32:32 step 3000: train loss 4.0390, val loss 4.0427",
    "2023-03-22 09:32:41 iter 3000: loss 4.2490, time 35392.33ms, mfu 13.85%",
    "2023-03-22 09:32:52 iter 3010: loss nan, time 1019.95ms, mfu 14.12%",
]
# github.com/karpathy/nanoGPT/issues/178: the first iteration's MFU is -100% (not measured yet)
NANOGPT_FIRST = "iter 0: loss 4.2648, time 9371.81ms, mfu -100.00%"

# ---- crash lines ---------------------------------------------------------------------------------
# github.com/hiyouga/LlamaFactory/issues/7396
NCCL_TIMEOUT = "[80746] [rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=466119168, NumelOut=466119168, Timeout(ms)=600000) ran for 600060 milliseconds before timing out."
# github.com/pytorch/pytorch/issues/118369: the watchdog line glued to a NeMo progress bar
NCCL_AFTER_BAR = "Epoch 0:   6%|██                               | 32040/500150 [6:28:43<94:39:17,  1.37it/s, loss=2.6, v_num=95nc, reduced_train_loss=2.590, global_step=3.2e+4, consumed_samples=2.56e+7][E ProcessGroupNCCL.cpp:458] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=96120, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 25624887 milliseconds before timing out."
# github.com/huggingface/picotron_tutorial/issues/6
NCCL_WATCHDOG_THREAD = "[E ProcessGroupNCCL.cpp:915] [Rank 2] NCCL watchdog thread terminated with exception: [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=120000) ran for 120822 milliseconds before timing out."
# github.com/lzhxmu/CPPO/issues/6: torchrun's summary after a SIGKILLed rank (the traceback's last line, then
# the root cause's exit code)
CHILD_FAILED = [
    "Traceback (most recent call last):",
    '  File "/home/tiger/.pyenv/versions/3.11.2/lib/python3.11/site-packages/torch/distributed/launcher/api.py", line 269, in launch_agent',
    "    raise ChildFailedError(",
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
    "  exitcode  : -9 (pid: 14750)",
]
# github.com/lmzpai/roboMamba/issues/10
TORCHRUN_FAILED = "E0325 20:57:27.620000 2606 site-packages/torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: -9) local_rank: 5 (pid: 2630) of binary: /root/miniconda3/bin/python"
