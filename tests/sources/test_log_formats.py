"""The progress-line parsers and crash patterns on real lines from public logs (log_lines.py)."""

from __future__ import annotations

import math

import pytest

from monitor.sources.log_crashes import crash_of
from monitor.sources.log_formats import FORMATS, detect, format_of, line_time
from tests.sources import log_lines as real


def parse(fmt: str, line: str):
    return format_of(fmt).read(line)


def test_megatron_lines_of_the_bloom_spike():
    got = [parse("megatron", line) for line in real.MEGATRON_BLOOM]
    assert [p.step for p in got] == [31218, 31219, 31220]
    spike = got[1].metrics
    assert spike["train/loss"] == pytest.approx(5.098124) and spike["grad/norm/total"] == pytest.approx(
        960.351
    )
    assert spike["optim/learning_rate"] == pytest.approx(5.279e-05)
    assert spike["throughput/duration"] == pytest.approx(106.36)  # "(s)": seconds already
    assert spike["throughput/tflops_per_device"] == pytest.approx(147.43)
    assert spike["optim/skipped_step"] == 0
    assert got[1].total == 115311


def test_megatron_validation_line_and_a_line_without_loss():
    lines = [parse("megatron", line) for line in real.MEGATRON_BLOOM_EVAL]
    assert lines[0].step == 45000 and lines[1] is None and lines[3] is None
    assert lines[2].step == 45000 and lines[2].metrics == {"eval/loss": pytest.approx(2.327091)}
    p = parse("megatron", real.MEGATRON_NO_LOSS)
    assert p.step == 5426 and "train/loss" not in p.metrics and math.isnan(p.metrics["grad/norm/total"])
    assert p.metrics["throughput/duration"] == pytest.approx(4.2479)  # "(ms)" -> seconds


def test_torchtitan_lines_with_and_without_grad_norm():
    a, b = (parse("torchtitan", line) for line in real.TORCHTITAN)
    assert (a.step, b.step) == (14, 15)
    assert a.metrics["train/loss"] == pytest.approx(3.24405) and a.metrics[
        "grad/norm/total"
    ] == pytest.approx(0.8319)
    assert a.metrics["throughput/tokens_per_second_per_device"] == 7282  # "7,282"
    assert a.metrics["throughput/mfu"] == pytest.approx(0.17)
    old = [parse("torchtitan", line) for line in real.TORCHTITAN_OLD]
    assert old[0] is None and old[2] is None, "GC and profiler lines are not progress"
    assert [old[1].step, old[3].step] == [200, 210] and "grad/norm/total" not in old[1].metrics
    assert line_time(real.TORCHTITAN[1], utc=True) - line_time(real.TORCHTITAN[0], utc=True) == pytest.approx(
        1.118
    )


def test_hf_trainer_dicts_count_their_steps_and_keep_nan():
    got = [parse("hf", line) for line in real.HF]
    assert all(p.step is None for p in got), "the dict has no step: the reader counts lines"
    assert got[2].metrics["train/loss"] == pytest.approx(1.3843)
    assert got[2].metrics["grad/norm/total"] == pytest.approx(117.94924912080238)
    assert got[2].metrics["epoch"] == pytest.approx(0.02)
    assert math.isnan(parse("hf", real.HF_NAN).metrics["grad/norm/total"])
    bar = " 10%|█         | 100/1000 [00:10<01:30,  9.9it/s]\r" + real.HF[0]
    assert parse("hf", bar).step == 100, "the progress bar on the same line gives the step"


def test_llmc_stdout_and_log_file_lines():
    a = parse("llmc", real.LLMC[0])
    assert a.step == 61 and a.total == 74
    assert a.metrics["train/loss"] == pytest.approx(3.208939) and a.metrics[
        "grad/norm/total"
    ] == pytest.approx(1.48)
    assert a.metrics["throughput/duration"] == pytest.approx(0.04457)
    assert a.metrics["throughput/tokens_per_second"] == 91886
    assert "throughput/mfu" not in a.metrics, "-100% is llm.c's 'not measured'"
    val, tr, _ = (parse("llmc", line) for line in real.LLMC_FILE)
    assert val.metrics == {"eval/loss": pytest.approx(11.0092)} and val.step == 0
    assert tr.metrics["train/loss"] == pytest.approx(11.0091) and tr.metrics[
        "grad/norm/total"
    ] == pytest.approx(15.37)


def test_nanogpt_lines_with_timestamps_and_a_nan_loss():
    got = [parse("nanogpt", line) for line in real.NANOGPT]
    assert [p.step for p in got] == [2990, 3000, 3000, 3010]
    assert got[1].metrics == {"eval/loss": pytest.approx(4.0427)}
    assert got[2].metrics["throughput/duration"] == pytest.approx(35.39233)
    assert math.isnan(got[3].metrics["train/loss"])
    assert line_time(real.NANOGPT[3], utc=True) - line_time(real.NANOGPT[0], utc=True) == 56
    assert "throughput/mfu" not in parse("nanogpt", real.NANOGPT_FIRST).metrics


def test_levanter_progress_bar_redrawn_on_one_line():
    # Levanter's pbar_logger (tqdm with a loss postfix); a bar redrawn with \r: its last state counts
    line = "train:  1%|          | 11/1000 [00:20<30:00,  1.8s/it, loss=9.82]\rtrain:  1%|          | 12/1000 [00:22<30:00,  1.8s/it, loss=9.77]"  # noqa: E501
    p = parse("levanter", line)
    assert p.step == 12 and p.metrics == {"train/loss": pytest.approx(9.77)}


def test_a_custom_regex_names_step_and_metrics():
    fmt = format_of(r"regex:it=(?P<step>\d+) L=(?P<train__loss>\S+) gn=(?P<grad__norm__total>\S+)")
    p = fmt.read("2024-01-01 it=77 L=2.5 gn=0.3")
    assert p.step == 77 and p.metrics == {"train/loss": 2.5, "grad/norm/total": 0.3}
    assert fmt.read("nothing here") is None


@pytest.mark.parametrize(
    ("lines", "want"),
    [
        (real.MEGATRON_BLOOM, "megatron"),
        (real.TORCHTITAN_OLD, "torchtitan"),
        (real.HF, "hf"),
        (real.LLMC, "llmc"),
        (real.NANOGPT, "nanogpt"),
    ],
)
def test_auto_detects_each_trainer_from_its_lines(lines, want):
    assert detect(["loading data ...", *lines, "saving checkpoint"])[0].name == want
    others = [f for f in FORMATS if f != want]
    assert all(format_of(o).read(lines[-1]) is None or o == "levanter" for o in others), "formats overlap"


def test_auto_counts_its_evidence_and_a_tie_decides_nothing():
    assert detect([real.MEGATRON_BLOOM[0], "hello"]) == (format_of("megatron"), 1)
    assert detect([real.MEGATRON_BLOOM[0], real.NANOGPT[0]]) == (None, 0)


@pytest.mark.parametrize(
    ("line", "title"),
    [
        (real.NCCL_TIMEOUT, "NCCL watchdog timeout"),
        (real.NCCL_AFTER_BAR, "NCCL watchdog timeout"),
        (real.NCCL_WATCHDOG_THREAD, "NCCL watchdog timeout"),
        (real.TORCHRUN_FAILED, "exitcode -9 (signal 9, SIGKILL)"),
        (real.CHILD_FAILED[-1], "exitcode -9 (signal 9, SIGKILL)"),
        # PyTorch's allocator message (c10/cuda/CUDACachingAllocator.cpp), rank-prefixed as torchrun does
        (
            "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
            "CUDA out of memory",
        ),
        # bash's report of a SIGKILLed child in a Slurm batch script; slurmstepd's OOM line
        ("/var/spool/slurmd/job01234/slurm_script: line 12: 56789 Killed   python train.py", "Killed"),
        ("slurmstepd: error: Detected 1 oom_kill event in StepId=1234.batch.", "Killed"),
        (
            "slurmstepd: error: *** JOB 1234 ON node7 CANCELLED AT 2024-05-01T10:00:00 DUE TO TIME LIMIT ***",
            "TIME LIMIT",
        ),
    ],
)
def test_crash_lines(line, title):
    crash = crash_of(line, in_traceback=False)
    assert crash is not None and title in crash.title and len(crash.title) <= 64
    assert crash.line == line.strip()


def test_an_exception_line_is_a_crash_only_after_a_traceback():
    last = real.CHILD_FAILED[3]
    assert crash_of(last, in_traceback=False) is None
    assert crash_of(last, in_traceback=True).title == "ChildFailedError (traceback)"
    for line in (*real.MEGATRON_BLOOM, *real.TORCHTITAN, *real.HF, *real.LLMC, *real.NANOGPT, "exit code 0"):
        assert crash_of(line, in_traceback=True) is None, line
    assert crash_of("Killed 3 stale workers", in_traceback=False) is None
