"""SearchQA: retrieval quality on the embedded panel, policy baselines, and speed.

    python benchmarks/searchqa.py                    # everything (1M-passage corpus included)
    python benchmarks/searchqa.py --passages 200000 --skip-dense

Figures:
* recall@1 and @5 of the gold passage on the embedded question panel (test and train splits),
  BM25 and dense (MiniLM) side by side: single-hop questions (query = the question); two-hop
  questions per hop (hop 1: the question; hop 2: the question, then the question with the bridge
  entity's title prepended, i.e. after a perfect first hop);
* win rate of an oracle policy (searches the gold titles, answers a golden answer) and of a
  closed-book policy (no search; answers its family's most frequent train answer, or the first
  name of a comparison question);
* BM25 query latency (top 3) on the embedded corpus and on a generated corpus of ``--passages``
  passages (Zipf-distributed words of the embedded corpus's vocabulary, 40-90 words each), with
  index build time and memory, against bm25s's own ``BM25.retrieve`` on the same index and
  queries (same top 3);
* ``SearchQA-v0`` step latency (a search turn, verl format) as a multiple of the retrieval alone;
* retrieval-server throughput with 8 concurrent HTTP clients against in-process retrieval.
"""

from __future__ import annotations

import argparse
import collections
import gc
import random
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

if not __package__:  # run as a script: make the repository's packages (benchmarks/) importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentenvs.searchqa.bm25 import ANALYZER, BM25Retriever
from agentenvs.searchqa.corpus import Corpus, wiki_offline_corpus
from agentenvs.searchqa.env import SearchQAEnv
from agentenvs.searchqa.qa import QATask, embedded_tasks
from agentenvs.searchqa.retrieval import Retriever

N_QUERIES = 300


def _rss() -> int:
    import psutil

    return psutil.Process().memory_info().rss


def seconds_per_query(
    fn: Callable[[str], object], queries: Sequence[str], repeats: int = 3
) -> float:
    """Best-of-``repeats`` CPU seconds (this process, all its threads) per call of ``fn``."""
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        for q in queries:
            fn(q)
        best = min(best, (time.process_time() - start) / len(queries))
    return best


# --- quality -------------------------------------------------------------------------------------


def recall_rows(
    name: str, retriever: Retriever, corpus: Corpus, tasks: Sequence[QATask]
) -> list[str]:
    """Markdown rows: recall@1/@5 of the gold passage per question kind and hop."""
    position = {corpus.title(i): corpus.ids[i] for i in range(len(corpus))}
    groups: dict[str, list[tuple[str, str]]] = collections.defaultdict(
        list
    )  # kind -> (query, gold)
    for task in tasks:
        gold = [position[t] for t in task.supporting_titles]
        if task.hops == 1:
            groups["single-hop"].append((task.question, gold[0]))
        elif task.family == "comparison":
            for g in gold:
                groups["comparison, each person"].append((task.question, g))
        else:
            groups["two-hop, hop 1"].append((task.question, gold[0]))
            groups["two-hop, hop 2 (question)"].append((task.question, gold[1]))
            groups["two-hop, hop 2 (bridge + question)"].append(
                (f"{task.bridge} {task.question}", gold[1])
            )
    rows = []
    for kind, pairs in groups.items():
        results = retriever.retrieve([q for q, _ in pairs], 5)
        at1 = np.mean(
            [bool(hits) and hits[0].id == g for hits, (_, g) in zip(results, pairs, strict=True)]
        )
        at5 = np.mean(
            [g in {h.id for h in hits} for hits, (_, g) in zip(results, pairs, strict=True)]
        )
        rows.append(f"| {name} | {kind} | {len(pairs)} | {at1:.3f} | {at5:.3f} |")
    return rows


def policy_win_rates(tasks: Sequence[QATask]) -> tuple[float, float, int]:
    """(oracle win rate, closed-book win rate, questions) on the test split through the env."""
    prior: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for task in tasks:
        if task.split == "train":
            prior[task.family][task.answers[0]] += 1
    env = SearchQAEnv(split="test")
    test = [t for t in tasks if t.split == "test"]
    oracle = closed = 0
    for task in test:
        env.reset(options={"task_id": task.id})
        for title in task.supporting_titles[: env.max_steps - 1]:
            env.step(f"<think>look up</think><search>{title}</search>")
        oracle += env.step(f"<think>found</think><answer>{task.answers[0]}</answer>")[1] == 1.0
        env.reset(options={"task_id": task.id})
        guess = prior[task.family].most_common(1)[0][0] if prior[task.family] else ""
        if task.family == "comparison":  # "Who was born first, A or B?": name A
            guess = task.question.removeprefix("Who was born first, ").split(" or ")[0]
        closed += env.step(f"<think>recall</think><answer>{guess}</answer>")[1] == 1.0
    return oracle / len(test), closed / len(test), len(test)


# --- speed ---------------------------------------------------------------------------------------


def bm25s_reference(corpus: Corpus) -> Callable[[str], list[int]]:
    """bm25s's own retrieval (``BM25.retrieve``, top 3, called as bm25s's README calls it: no
    ``n_threads``, which would start a worker thread per call) over the same terms as ours; it
    returns the top-3 passage indices."""
    import bm25s

    vocab: dict[str, int] = {}
    docs = ANALYZER.term_ids(corpus.contents, vocab)
    reference = bm25s.BM25(k1=0.9, b=0.4, method="lucene")
    reference.index(bm25s.tokenization.Tokenized(ids=docs, vocab=vocab), show_progress=False)

    def retrieve(query: str) -> list[int]:
        terms = [t for t in ANALYZER.terms(query) if t in vocab] or [""]
        documents, _ = reference.retrieve([terms], k=3, show_progress=False)
        return [int(d) for d in documents[0]]

    return retrieve


def generated_corpus(n: int, source: Corpus, seed: int = 0) -> Corpus:
    """``n`` passages of Zipf-distributed words of ``source``'s vocabulary (40-90 words each)."""
    counts = collections.Counter(w for text in source.contents for w in ANALYZER.words(text))
    words = np.array([w for w, _ in counts.most_common()])
    rng = np.random.default_rng(seed)
    lengths = rng.integers(40, 91, size=n)
    ranks = np.minimum(rng.zipf(1.2, size=int(lengths.sum())) - 1, len(words) - 1)
    tokens, contents, start = words[ranks], [], 0
    for i, length in enumerate(lengths.tolist()):
        contents.append(f'"Passage {i}"\n' + " ".join(tokens[start : start + length].tolist()))
        start += length
    return Corpus(tuple(str(i) for i in range(n)), tuple(contents), name=f"generated-{n}")


def latency_rows(name: str, corpus: Corpus, queries: Sequence[str], cache: Path) -> list[str]:
    gc.collect()
    before, start = _rss(), time.perf_counter()
    ours = BM25Retriever(corpus, cache_dir=cache)
    build = time.perf_counter() - start
    grown = _rss() - before
    start = time.perf_counter()
    BM25Retriever(corpus, cache_dir=cache)
    load = time.perf_counter() - start
    reference = bm25s_reference(corpus)
    t_ours = seconds_per_query(lambda q: ours.retrieve([q], 3), queries)
    t_ref = seconds_per_query(reference, queries)
    agree = sum(
        {h.id for h in ours.retrieve([q], 3)[0]} == {corpus.ids[i] for i in reference(q)}
        for q in queries
    )
    return [
        f"| {name} | {len(corpus):,} | {build:.1f} s (cached load {load * 1e3:.0f} ms) | "
        f"{ours.index.nbytes / 2**20:,.0f} MiB index, RSS +{grown / 2**20:,.0f} MiB | "
        f"{t_ours * 1e3:.3f} ms | {t_ref * 1e3:.3f} ms | {t_ref / t_ours:.1f}x | "
        f"{agree}/{len(queries)} |"
    ]


def env_step_row(tasks: Sequence[QATask], retriever: BM25Retriever) -> str:
    env = SearchQAEnv(split="test", max_steps=10**9)
    queries = [t.question for t in tasks[:N_QUERIES]]
    env.reset(seed=0)
    t_env = seconds_per_query(lambda q: env.step(f"<think>.</think><search>{q}</search>"), queries)
    t_ret = seconds_per_query(lambda q: retriever.retrieve([q], 3), queries)
    return (
        f"| SearchQA-v0 step (search, verl format) | {t_env * 1e3:.3f} ms | "
        f"{t_ret * 1e3:.3f} ms retrieval alone | {t_env / t_ret:.2f}x |"
    )


def server_row(retriever: BM25Retriever, queries: Sequence[str], clients: int = 8) -> str:
    from agentenvs.searchqa.remote import RemoteRetriever
    from agentenvs.searchqa.serve import RetrievalServer

    t_local = seconds_per_query(lambda q: retriever.retrieve([q], 3), queries, repeats=1)
    with RetrievalServer(retriever).start() as server:
        remote = RemoteRetriever(server.url)
        remote.retrieve(queries[:5], 3)  # warm up

        def client(offset: int) -> None:
            for q in queries[offset:] + queries[:offset]:
                remote.retrieve([q], 3)

        threads = [threading.Thread(target=client, args=(i * 7,)) for i in range(clients)]
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - start
    qps_server, qps_local = clients * len(queries) / elapsed, 1 / t_local
    return (
        f"| /retrieve server, {clients} HTTP clients, 1 query a request | {qps_server:,.0f} q/s | "
        f"{qps_local:,.0f} q/s in-process, one thread | {qps_server / qps_local:.2f}x |"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--passages", type=int, default=1_000_000, help="generated corpus size")
    parser.add_argument("--skip-dense", action="store_true")
    parser.add_argument("--cache", default=str(Path(__file__).parent / "out" / "searchqa-cache"))
    args = parser.parse_args(argv)
    cache = Path(args.cache)
    corpus, tasks = wiki_offline_corpus(), embedded_tasks()
    bm25 = BM25Retriever(corpus, cache_dir=cache)

    print("\n## SearchQA retrieval quality (embedded panel)\n")
    print("| retriever | questions | n | recall@1 | recall@5 |")
    print("|---|---|---:|---:|---:|")
    retrievers: list[tuple[str, Retriever]] = [("BM25", bm25)]
    if not args.skip_dense:
        try:
            from agentenvs.searchqa.dense import DenseRetriever

            start = time.perf_counter()
            dense = DenseRetriever(corpus, cache_dir=cache)
            print(f"(dense: passage embeddings ready in {time.perf_counter() - start:.0f} s)\n")
            retrievers.append(("dense MiniLM", dense))
        except ImportError as exc:
            print(f"(dense skipped: {exc})")
    for name, retriever in retrievers:
        for row in recall_rows(name, retriever, corpus, tasks):
            print(row)

    oracle, closed, n = policy_win_rates(tasks)
    print(f"\nwin rate on the {n} test questions: oracle {oracle:.3f}, closed-book {closed:.3f}")

    rng = random.Random(0)
    queries = [t.question for t in rng.sample(list(tasks), min(N_QUERIES, len(tasks)))]
    print("\n## SearchQA speed, CPU time of one process\n")
    print(
        "| corpus | passages | index build | memory | ours / query | bm25s.retrieve / query "
        "| ratio | same top 3 |"
    )
    print("|---|---:|---|---|---:|---:|---:|---:|")
    for row in latency_rows("embedded Wikipedia", corpus, queries, cache):
        print(row, flush=True)
    if args.passages:
        big = generated_corpus(args.passages, corpus)
        for row in latency_rows("generated", big, queries, cache):
            print(row, flush=True)
        del big
    print("\n| measure | figure | reference | ratio |")
    print("|---|---:|---:|---:|")
    print(env_step_row(tasks, bm25))
    print(server_row(bm25, queries))


if __name__ == "__main__":
    main()
