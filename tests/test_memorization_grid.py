"""galu.memorization.grid: the under-parameterized points, the one home of ``k d <= m``."""

from __future__ import annotations

from galu.memorization.grid import underparam_points
from galu.workflow.settings.consistency import consistency_problems


def test_only_points_with_kd_at_most_m_in_grid_order():
    assert underparam_points([32], [4, 8], [2, 4, 8]) == [
        (32, 4, 2), (32, 4, 4), (32, 4, 8), (32, 8, 2), (32, 8, 4),
    ]  # fmt: skip
    assert underparam_points([16, 64], [16], [1, 4]) == [(16, 16, 1), (64, 16, 1), (64, 16, 4)]
    assert underparam_points([8], [16], [1]) == []


def test_the_configuration_check_refuses_a_grid_without_such_a_point():
    config = {"memorization": {"underparam": {"ms": [8], "ds": [16], "ks": [1, 2]}}}
    problems = consistency_problems(config, environ={})
    assert any("no point has k * d <= m" in p for p in problems), problems
    config["memorization"]["underparam"]["ms"] = [16]
    assert not any("k * d <= m" in p for p in consistency_problems(config, environ={}))
