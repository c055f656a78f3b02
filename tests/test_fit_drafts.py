"""The accept rule's fitting tool (lab/workspace/fit_drafts.py) on records of its own format."""
from __future__ import annotations

import random

from lab.workspace import fit_drafts


def _records(seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    records = []
    for i in range(120):
        right = rng.randrange(3)
        drafts = []
        for j in range(3):
            signal = (2.0 if j == right else -2.0) + rng.gauss(0, 0.5)
            drafts.append({"line": f"l{j}", "right": j == right and i % 4 != 0,
                           "features": {"mean_logp": rng.gauss(-4, 1), "min_logp": -8.0, "eom_logp": -1.0, "log_tokens": 2.0,
                                        "rank": rng.gauss(-3, 1), "rank_margin": 0.0, "filled_mean": signal}})
        records.append({"id": str(i), "package": f"p{i % 4}", "reference": "l0", "drafts": drafts})
    return records


def test_a_rule_fitted_on_a_telling_feature_keeps_the_right_drafts():
    records = _records()
    use = ("rank", "filled_mean")
    w, b = fit_drafts.fit(records, features=use)
    assert w[1] > 0  # the feature that tells the right draft gets the weight
    telling = fit_drafts.score(records, w, b, 0.5, use)
    blind = fit_drafts.score(records, *fit_drafts.fit(records, features=("rank",)), 0.5, ("rank",))
    assert telling["kept_right"] > 60 and telling["kept_right"] > blind["kept_right"]
    assert telling["kept"] - telling["kept_right"] < telling["kept_right"]
