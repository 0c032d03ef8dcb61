"""The ``agentenvs`` command line (agentenvs/cli/), run as a user runs it: in a subprocess."""

from __future__ import annotations

import dataclasses
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from agentenvs.cli.main import main
from agentenvs.core import Step, Trajectory
from agentenvs.core.store import TrajectoryStore

ROOT = Path(__file__).resolve().parents[2]


def agentenvs(*args: str, stdin: str = "", timeout: float = 60) -> subprocess.CompletedProcess:
    """``python -m agentenvs.cli ARGS`` with ``stdin`` piped in."""
    return subprocess.run(
        [sys.executable, "-m", "agentenvs.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout,
    )


def test_list_shows_envs_and_credit_methods():
    out = agentenvs("list")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert any(
        re.match(r"\s+agentenvs/Sokoban-v0\s+Sokoban with text actions\.", line) for line in lines
    )
    assert any("agentenvs/SokobanVisual-v0" in line and "visual=True" in line for line in lines)
    assert any(re.match(r"\s+graphgpo \[graph\]\s+GraphGPO", line) for line in lines)
    for method in ("grpo", "gigpo", "rtmc", "triage", "spa", "hisr"):
        assert any(line.split()[:1] == [method] for line in lines), method


def test_console_script_is_installed():
    script = Path(sys.executable).with_name("agentenvs")
    assert script.exists(), "pip install -e . installs the agentenvs command"
    out = subprocess.run([script, "list"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "agentenvs/Sokoban-v0" in out.stdout


def test_play_sokoban_to_the_end():
    # seed-42: the box is right of the player, the target two further: right, right wins
    out = agentenvs("play", "agentenvs/Sokoban-v0", "--task", "seed-42", stdin="4\nright\n:q\n")
    assert out.returncode == 0, out.stderr
    assert "task seed-42" in out.stdout and "1) up  2) down  3) left  4) right" in out.stdout
    assert "reward -0.100  won False  done False" in out.stdout
    assert "reward 10.900  won True  done True" in out.stdout
    assert "episode over: return 10.800" in out.stdout


def test_play_handles_bad_input_resets_and_eof():
    lines = "9\n<action>up</action>\n\nleft\n:r\nup\n"  # out of range, tagged without think, ...
    out = agentenvs("play", "agentenvs/Sokoban-v0", "--task", "seed-42", stdin=lines)
    assert out.returncode == 0, out.stderr
    assert "no action 9: pick 1..4" in out.stdout
    assert "(invalid: no <think>...</think> block before <action>)" in out.stdout  # sent as typed
    assert out.stdout.count("=== agentenvs/Sokoban-v0  task seed-42 ===") == 2  # :r
    assert "Traceback" not in out.stderr


def test_play_a_discrete_env_by_number_or_name():
    out = agentenvs("play", "agentenvs/SokobanDiscrete-v0", "--task", "seed-42", stdin="4\nright\n")
    assert out.returncode == 0, out.stderr
    assert "1) up  2) down  3) left  4) right" in out.stdout
    assert " P " in out.stdout  # the board from the env's ansi rendering, not the float planes
    assert "reward 10.900  won True  done True" in out.stdout


def test_play_usage_errors_exit_2():
    for args in (
        ["play", "agentenvs/Nope-v0"],
        ["play", "agentenvs/Sokoban-v0", "--task", "no-such-task"],
        ["play", "agentenvs/Sokoban-v0", "--env-kwargs", "{bad json"],
        ["play", "agentenvs/Sokoban-v0", "--env-kwargs", '{"no_such_option": 1}'],
    ):
        out = agentenvs(*args)
        assert out.returncode == 2, (args, out.stdout, out.stderr)
        assert out.stderr.startswith("agentenvs play: error: ") and "Traceback" not in out.stderr
    assert "unknown env id 'agentenvs/Nope-v0'" in agentenvs("play", "agentenvs/Nope-v0").stderr


def test_bench_prints_a_table():
    out = agentenvs(
        "bench",
        "agentenvs/Sokoban-v0",
        "agentenvs/SokobanDiscrete-v0",
        "--steps",
        "32",
        "--groups",
        "2",
        "--group-size",
        "2",
    )
    assert out.returncode == 0, out.stderr
    head, *rows = out.stdout.strip().splitlines()
    assert head.split()[:7] == ["env", "mode", "groups", "size", "steps", "steps/s", "resets/s"]
    assert [r.split()[0] for r in rows] == ["agentenvs/Sokoban-v0", "agentenvs/SokobanDiscrete-v0"]
    for row in rows:
        cells = row.split()
        assert cells[1] == "sync" and cells[2:5] == ["2", "2", "32"]
        assert float(cells[5].replace(",", "")) > 0 and float(cells[6].replace(",", "")) > 0
    assert rows[0].split()[-1] == "admissible" and rows[1].split()[-1] == "sampled"


def test_bench_usage_errors_exit_2():
    for args in (
        ["--groups", "0"],
        ["--vectorization", "bogus"],
        ["agentenvs/Nope-v0"],
        ["--num-envs", "8"],  # the old spelling
    ):
        out = agentenvs("bench", *args, "--steps", "8")
        assert out.returncode == 2, (args, out.stderr)
        assert out.stderr.splitlines()[-1].startswith("agentenvs bench: error: ")
        assert "Traceback" not in out.stderr
    out = agentenvs("bench", "--num-envs", "8", "--group-size", "4")
    assert out.stderr == (
        "agentenvs bench: error: --num-envs is now --groups G --group-size M, G x M sub-envs "
        "(e.g. --num-envs 8 --group-size 4 is --groups 2 --group-size 4)\n"
    )


def test_view_writes_the_page_and_rejects_a_non_run(tmp_path):
    out = agentenvs("view", str(tmp_path))
    assert out.returncode == 2 and "is not a run directory" in out.stderr
    assert "Traceback" not in out.stderr
    run = tmp_path / "run"
    step = Step(
        "<grid & box>",
        "<think>t</think><action>up</action>",
        10.0,
        state_key="A",
        next_state_key="B",
        advantage=1.0,
    )
    lost = Step("<grid & box>", "down", -0.1, state_key="A", next_state_key="A", advantage=-1.0)
    with TrajectoryStore(run / "trajectories", run="run") as store:
        store.append(
            [Trajectory("t", "t#0", [step], success=True), Trajectory("t", "t#0", [lost])],
            method="grpo",
            iteration=1,
        )
    (run / "metrics.csv").write_text("iteration,success_rate\n1,0.5\n")
    page = tmp_path / "page.html"
    out = agentenvs("view", str(run), "--out", str(page), "--methods", "graph,rtmc")
    assert out.returncode == 0, out.stderr
    assert f"wrote {page}" in out.stdout
    text = page.read_text(encoding="utf-8")
    assert text.count('<section class="group"') == 1 and "&lt;grid &amp; box&gt;" in text
    assert "<th>grpo<br>" in text and "<th>graphgpo<br>" in text and "<th>rtmc<br>" in text
    assert "<th>gigpo<br>" not in text
    out = agentenvs("view", str(run), "--methods", "nope")
    assert out.returncode == 2 and "unknown credit method 'nope'" in out.stderr
    out = agentenvs("view", str(run), "--out", str(tmp_path))  # a directory
    assert out.returncode == 2 and "cannot write the page" in out.stderr
    assert not list(tmp_path.glob(".*.tmp"))


def test_view_serve_until_ctrl_c(tmp_path):
    (tmp_path / "metrics.csv").write_text("iteration,loss\n1,0.5\n2,0.25\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentenvs.cli", "view", str(tmp_path), "--serve", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        # Ctrl-C as in a terminal, even when this test runs in a background job (which starts
        # with SIGINT ignored, and Python then never raises KeyboardInterrupt)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert proc.stdout.readline().startswith("wrote ")
        serving = proc.stdout.readline()
        url = re.search(r"at (http://127\.0\.0\.1:\d+/)", serving).group(1)
        body = urllib.request.urlopen(url, timeout=60).read().decode()
        assert body == (tmp_path / "view.html").read_text(encoding="utf-8")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
        assert "stopped" in proc.stdout.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_main_returns_exit_codes(capsys):
    assert main(["--help"]) == 0
    assert main([]) == 2  # a command is required
    assert main(["play"]) == 2  # ENV_ID is required
    assert main(["view", "/nonexistent/run"]) == 2
    assert "is not a run directory" in capsys.readouterr().err


def test_python_dash_m_cli_help():
    out = subprocess.run(
        [sys.executable, "-m", "agentenvs.cli", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert out.returncode == 0
    assert re.findall(r"^    (\w+)", out.stdout, re.M) == [
        "list",
        "play",
        "view",
        "bench",
        "train",
        "serve",
    ]


#: Every flag spelling the README and docs use with ``examples/train_llm.py`` / ``agentenvs train``.
README_FLAGS = [
    "agentenvs/Sokoban-v0", "--credit", "gigpo", "--rollout", "sequential",
    "--vectorization", "async", "--ray-address", "auto", "--state-keys", "none",
    "--credit-config", '{"gamma": 0.5}', "--groups", "3", "--group-size", "2", "--model", "tiny",
    "--warm-start", "format", "--warm-start-steps", "5", "--eval-untrained", "--backend", "vllm",
    "--lora", "--lora-rank", "4",
    "--prompt", "reference", "--env-kwargs", '{"max_solution_steps": 2}', "--max-steps", "2",
    "--eval-modes", "greedy", "--eval-splits", "test_seen,test_unseen", "--eval-envs", "4",
    "--export", "adapter", "--iterations", "2", "--lr", "1e-4", "--kl-coef", "0.1",
    "--ppo-epochs", "2", "--mini-batches", "2", "--micro-batch-size", "4",
    "--micro-batch-tokens", "512", "--clip-ratio-c", "2.5", "--loss-agg-mode",
    "seq-mean-token-sum", "--max-new-tokens", "9", "--temperature", "0.5", "--history-length",
    "3", "--eval-tasks", "2", "--eval-every", "1", "--seed", "3", "--threads", "1",
    "--no-stop-at-action-end", "--mask-truncated", "--weight-dtype", "bfloat16",
    "--gradient-checkpointing", "--vllm-sleep", "--parallel", "fsdp", "--store", "none",
    "--store-extras", "--out", "runs/x", "--resume",
]  # fmt: skip


def test_train_flags_keep_their_spellings_and_come_from_train_config():
    from agentenvs.learners.llm.config import TrainConfig

    from agentenvs.cli import train_flags as flags

    args = flags.parse_args(README_FLAGS)
    config = args.config
    assert args.env == "agentenvs/Sokoban-v0"
    assert (args.rollout, args.groups, args.group_size, args.max_steps) == ("sequential", 3, 2, 2)
    assert (args.vectorization, args.ray_address, args.state_keys) == ("async", "auto", "none")
    assert args.credit_config.gamma == 0.5 and args.env_kwargs == {"max_solution_steps": 2}
    assert (args.warm_start, args.warm_start_steps, args.export, args.out, args.resume) == (
        "format",
        5,
        "adapter",
        "runs/x",
        True,
    )
    assert args.eval_untrained and not flags.parse_args([]).eval_untrained
    assert (config.prompt_style, config.torch_threads, config.lora_rank) == ("reference", 1, 4)
    assert config.eval_modes == ("greedy",) and config.eval_splits == ("test_seen", "test_unseen")
    assert (config.iterations, config.lr, config.kl_coef, config.clip_ratio_c) == (
        2,
        1e-4,
        0.1,
        2.5,
    )
    assert not config.stop_at_action_end and config.mask_truncated and config.store_extras
    assert (config.backend, config.parallel, config.weight_dtype) == ("vllm", "fsdp", "bfloat16")
    assert flags.parse_args(["--lora-rank", "4"]).config.lora_rank == 0  # a rank needs --lora
    assert flags.parse_args(["--max-new-tokens", "None"]).config.max_new_tokens is None
    # ENV_ID anywhere on the line, as argparse takes positionals
    assert flags.parse_args(["--iterations", "1", "agentenvs/ALFWorld-v0"]).env.endswith(
        "ALFWorld-v0"
    )
    # every TrainConfig field but lora_rank is a flag, listed with its help in --help
    out = agentenvs("train", "--help")
    assert out.returncode == 0 and "--kl-coef X" in out.stdout
    names = [f.name for f in dataclasses.fields(TrainConfig) if f.name != "lora_rank"]
    for name in names:
        flag = "--" + flags.FLAG_NAMES.get(name, name).replace("_", "-")
        assert flag in out.stdout, flag


def test_train_help_is_grouped_plain_text_with_choices_and_recipe_defaults():
    out = agentenvs("train", "--help")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert text.startswith("usage: agentenvs train [ENV_ID] [FLAGS]\n")
    titles = re.findall(r"^(\S[^:\n]*):$", text, re.M)
    assert titles == ["options", "env", "credit", "model and warm start", "rollout",
                      "optimisation", "evaluation", "backend and GPU", "output"]  # fmt: skip
    assert not re.search(r":(class|mod|func|data|meth|attr):|``|`[^`]+`_", text)  # no raw RST
    # closed choices (Literal fields of TrainConfig and TrainArgs) are listed as choices
    for choice in (
        "--backend {hf,vllm}",
        "--loss-agg-mode {token-mean,seq-mean-token-sum,seq-mean-token-mean}",
        "--prompt {compact,reference}",
        "--weight-dtype {float32,bfloat16,float16}",
        "--autocast {auto,bfloat16,float16,none}",
        "--parallel {ddp,fsdp}",
        "--store {jsonl,parquet,none}",
        "--warm-start {format,demo,none}",
        "--export {merged,adapter,none}",
        "--eval-modes greedy,sampled",
    ):
        assert choice in text, choice
    # a flag a recipe sets says so, with the value it has without one; the others their default
    help_of = {m[0]: m[1] for m in re.findall(r"^  (--[\w-]+)[^\n]*?  (\S[^\n]*(?:\n {20,}\S[^\n]*)*)", text, re.M)}  # fmt: skip
    assert "(default: recipe, else 6)" in " ".join(help_of["--iterations"].split())
    assert "(default: recipe, else grpo)" in " ".join(help_of["--credit"].split())
    assert "(default: 0.2)" in help_of["--clip-ratio"]
    assert len(text.splitlines()) < 160


def test_one_default_credit_method_for_the_wrappers_and_train():
    import inspect

    from agentenvs.wrappers import CreditWrapper, VectorCreditWrapper

    from agentenvs.cli import train_flags as flags

    wrapper_default = inspect.signature(VectorCreditWrapper).parameters["method"].default
    assert flags.DEFAULT_CREDIT == CreditWrapper.method == wrapper_default == "grpo"
    assert flags.TrainArgs().credit == flags.DEFAULT_CREDIT
    assert flags.parse_args(["agentenvs/WebShop-v0"]).credit == "grpo"  # no recipe
    for key, recipe in flags.RECIPES.items():  # each recipe names the method it was tuned with
        assert recipe["credit"] == "graph", key
    assert flags.parse_args([]).credit == "graph"  # the main job


def test_groups_and_group_size_are_named_alike_in_every_subcommand():
    train = agentenvs("train", "--help").stdout
    bench = agentenvs("bench", "--help").stdout
    for text in (train, bench):
        assert "--groups N" in text or "--groups GROUPS" in text
        assert "--group-size" in text and "--num-envs" not in text


def test_every_subcommands_help_is_plain_text():
    for command in ("list", "play", "view", "bench", "train", "serve"):
        out = agentenvs(command, "--help")
        assert out.returncode == 0, (command, out.stderr)
        assert not re.search(r":(class|mod|func|data|meth|attr):|``", out.stdout), command


def test_train_old_spellings_name_the_new_ones():
    for argv, message in (
        (
            ["--env", "agentenvs/ALFWorld-v0"],
            "the env id is positional now: agentenvs train ENV_ID",
        ),
        (["--env=agentenvs/ALFWorld-v0"], "the env id is positional now"),
        (["--format-warm-start", "3"], "--format-warm-start N is now --warm-start format"),
    ):
        out = agentenvs("train", *argv)
        assert out.returncode == 2, (argv, out.stderr)
        (line,) = out.stderr.splitlines()
        assert line.startswith("agentenvs train: error: ") and message in line, line
    out = subprocess.run(
        [sys.executable, "examples/train_llm.py", "--env", "agentenvs/Sokoban-v0"],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert out.returncode == 2 and out.stderr.startswith(
        "train_llm.py: error: the env id is positional now: train_llm.py ENV_ID"
    )


def test_train_rejects_bad_values_and_unknown_field_types():
    from agentenvs.cli import train_flags as flags

    assert main(["train", "--iterations", "x"]) == 2
    assert main(["train", "--backend", "tpu"]) == 2  # a Literal's choices
    assert main(["train", "--clip-ratio-c", "0.5"]) == 2  # TrainConfig's own check
    assert main(["train", "--credit", "nope"]) == 2
    assert main(["train", "--export", "adapter"]) == 2  # needs --lora

    @dataclasses.dataclass
    class Config:
        iterations: int = 1
        schedule: Trajectory | None = None  # no parser for this type: never guessed as int

    with pytest.raises(TypeError, match="Config.schedule: no command-line parser"):
        flags.build_parser(config_class=Config)

    @dataclasses.dataclass
    class Undocumented:
        iterations: int = 1
        new_knob: int = 2  # a field without a help line is an error too

    with pytest.raises(TypeError, match="Undocumented.new_knob: no help line"):
        flags.build_parser(config_class=Undocumented)


def test_commands_but_train_never_import_the_learner():
    code = "import sys; from agentenvs.cli.main import main; main(['list']); print(sorted(m for m in sys.modules if m.startswith('agentenvs.learners') or m.split('.')[0] in ('torch', 'tyro')))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert out.returncode == 0 and out.stdout.splitlines()[-1] == "[]", out.stderr
