"""Metric keys: the suite runner writes them, the reports read them back by their parts."""

from evaluation.metric_keys import MetricKey, parse_metric_key, suite_metric


def test_keys_parse_into_their_suite_subset_and_kind_and_back():
    cases = {"eval/connect4-uniform/policy_regret": MetricKey("connect4-uniform", None, "policy_regret"),
             "eval/connect4-uniform/easy-opening/policy_regret": MetricKey("connect4-uniform", "easy-opening",
                                                                           "policy_regret"),
             "eval/hex-uniform/a/b/value_mae": MetricKey("hex-uniform", "a/b", "value_mae"),
             "eval/value_mae": MetricKey(None, None, "value_mae")}
    for text, key in cases.items():
        assert parse_metric_key(text) == key
        assert str(key) == text
    assert suite_metric("chomp-4x5-play", "error_rate") == "eval/chomp-4x5-play/error_rate"
    assert parse_metric_key(suite_metric("s", "sub/kind")) == MetricKey("s", "sub", "kind")
    for other in ("loss", "evaluation/x", "eval/", "replay/shard0_size"):
        assert parse_metric_key(other) is None
