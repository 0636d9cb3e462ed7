"""Exact evaluation: oracle-labelled states and the metrics of the papers."""
