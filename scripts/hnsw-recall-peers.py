"""Recall@10 of hnswlib's and FAISS's HNSW graphs over the embedding fixture (500 Reuters
bodies, 131 W1 queries, all-MiniLM-L6-v2), M = 16, ef_construction = 100, at the beams of
quarry's `hnsw_recall` example, for four seeds each: the peers' figures for the same vectors.
Each recall is by id, then (in parentheses) counting a hit that ties the 10th exact score.

    $(bash scripts/vectors-venv.sh) scripts/hnsw-recall-peers.py
    cargo run --release -p quarry --example hnsw_recall
"""
import json
import pathlib

import faiss
import hnswlib
import numpy as np

root = pathlib.Path(__file__).resolve().parent.parent / "tests/fixtures/embeddings"
header = json.loads((root / "minilm-reuters500.json").read_text())
dims = header["dims"]
vectors = np.fromfile(root / "minilm-reuters500.f32", dtype="<f4").reshape(-1, dims)
n = len(header["docs"])
vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
docs, queries = vectors[:n], vectors[n:]
scores = queries @ docs.T
truth = np.argsort(-scores, axis=1, kind="stable")[:, :10]
# The 10th best exact score per query: a hit scoring as high is as good as the one the exact
# top 10 names (the bodies hold a group of 27 identical vectors, whose order is arbitrary).
tenth = np.take_along_axis(scores, truth[:, 9:10], axis=1)[:, 0]
beams = [10, 20, 40, 80]


def recall(labels):
    """Recall@10 by id, and counting ties with the 10th score as found ("tie-aware")."""
    by_id = np.mean([len(set(labels[i]) & set(truth[i])) / 10 for i in range(len(queries))])
    tied = np.mean(
        [min(10, int((scores[i, labels[i]] >= tenth[i] - 1e-6).sum())) / 10 for i in range(len(queries))]
    )
    return f"{by_id:.3f} ({tied:.3f})"


for seed in [100, 1, 2, 3]:
    index = hnswlib.Index(space="ip", dim=dims)
    index.init_index(max_elements=n, M=16, ef_construction=100, random_seed=seed)
    index.add_items(docs, np.arange(n), num_threads=1)
    line = []
    for ef in beams:
        index.set_ef(ef)
        labels, _ = index.knn_query(queries, k=10, num_threads=1)
        line.append(f"ef {ef}: {recall(labels)}")
    print(f"hnswlib seed {seed}: " + " ".join(line))

faiss.omp_set_num_threads(1)
for seed in [1, 2, 3, 4]:
    # FAISS draws levels from its own generator; a seed changes the insertion order instead.
    order = np.random.default_rng(seed).permutation(n)
    index = faiss.IndexHNSWFlat(dims, 16, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = 100
    index.add(docs[order])
    line = []
    for ef in beams:
        index.hnsw.efSearch = ef
        _, labels = index.search(queries, 10)
        line.append(f"ef {ef}: {recall(order[labels])}")
    print(f"faiss (insertion order {seed}): " + " ".join(line))
