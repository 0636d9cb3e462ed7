"""Exact oracles: Chomp Grundy tables, F-Game values, Connect Four scores, and their command line."""
