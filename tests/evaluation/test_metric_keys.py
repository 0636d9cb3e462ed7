"""Metric keys: the suite runner writes them, the reports read them back by their parts."""

import pytest

from evaluation import policy_registry
from evaluation.metric_keys import (
    MetricKey,
    PolicySuite,
    parse_metric_key,
    parse_policy_tag,
    policy_suite,
    split_policy_suite,
    suite_metric,
)


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


def test_a_suite_played_by_a_second_policy_names_it_and_its_budget_and_parses_as_any_suite():
    name = policy_suite("connect4-4x4-play", "mcts", 32)
    assert name == "connect4-4x4-play@mcts32"
    assert parse_metric_key(suite_metric(name, "error_rate")) == MetricKey(name, None, "error_rate")
    assert parse_metric_key(suite_metric(name, "easy-opening/policy_regret")) == MetricKey(
        name, "easy-opening", "policy_regret")
    assert split_policy_suite(name) == PolicySuite("connect4-4x4-play", "mcts", 32)
    assert split_policy_suite(policy_suite("chomp-4x5", "policy-head")) == PolicySuite("chomp-4x5", "policy-head", None)
    assert split_policy_suite("connect4-play") == PolicySuite("connect4-play", None, None)  # the run's own policy
    # Every registered policy's tag splits back into its name and budget.
    for name in policy_registry.names():
        assert parse_policy_tag(f"{name}7") == (name, 7) and parse_policy_tag(name) == (name, None)
    for bad in ("", "32", "m@cts", "mcts/3", "mcts3x"):
        with pytest.raises(ValueError, match="policy tag"):
            parse_policy_tag(bad)
    with pytest.raises(ValueError, match="budget >= 1"):
        policy_suite("s", "mcts", 0)
    with pytest.raises(ValueError, match="letters, hyphens"):
        policy_registry.PolicyEntry("mcts2", "a name ending in digits would read as a budget", lambda i: None)
